"""Documents as windows of token ids, and the windows' vectors put back together per document.

A document longer than a window (``max_length`` tokens, the special tokens included) is
truncated to its first window, or cut into overlapping windows (`window_spans`). Each window is
the tokenizer's special tokens around a span of the document's tokens; `DocumentWindows` makes
them chunk by chunk while the encode loop runs, remembers which document and span each came
from, and, once the encoder has run, pools the windows of each document into one vector or
stitches them into one sequence (of word pieces, or of words).
"""

from __future__ import annotations

import itertools

import numpy as np

from .._batching import Chunks
from ..sequences import Sequences

__all__ = ["DocumentWindows", "window_spans"]


def window_spans(n: int, room: int, long_documents: str = "window",
                 stride: int | None = None) -> list[tuple[int, int]]:
    """``(start, stop)`` of the windows over ``n`` tokens, ``room`` tokens a window.

    ``long_documents="truncate"`` keeps the first window only; ``"window"`` cuts overlapping
    windows that share ``stride`` tokens (None: a quarter of a window) and cover every token.

    Examples
    --------
    >>> window_spans(10, 4, stride=1)
    [(0, 4), (3, 7), (6, 10)]
    >>> window_spans(10, 4, "truncate")
    [(0, 4)]
    """
    if n <= room or long_documents == "truncate":
        return [(0, min(n, room))]
    shared = room // 4 if stride is None else int(stride)
    if not 0 <= shared < room:
        raise ValueError(f"stride={stride!r} must lie in [0, {room - 1}] (tokens shared "
                         f"by consecutive windows of {room} text tokens).")
    step = room - shared
    count = 1 + -(-(n - room) // step)
    return [(k * step, min(k * step + room, n)) for k in range(count)]


class DocumentWindows:
    """The windows of token ids of ``docs``, and where each came from.

    Parameters
    ----------
    docs : list of str
    tokenizer : a Hugging Face tokenizer
        Its fast (Rust) tokenizer is used directly where it has one (no per-text Python), without
        padding or truncation.
    prefix, suffix : list of int
        The special tokens put before and after each window's text (`special_tokens`).
    max_length : int
        Tokens per window, the special tokens included.
    long_documents : {"truncate", "window"}
    stride : int or None
        As `window_spans`.

    Attributes
    ----------
    n_truncated : int
        Documents longer than a window that were truncated, counted as they are tokenized.
    """

    def __init__(self, docs: list[str], tokenizer, prefix, suffix, *, max_length: int,
                 long_documents: str, stride: int | None):
        self.docs, self.tokenizer = docs, tokenizer
        self.prefix = np.asarray(prefix, dtype=np.int64)
        self.suffix = np.asarray(suffix, dtype=np.int64)
        self.room = int(max_length) - len(prefix) - len(suffix)
        self.long_documents, self.stride = long_documents, stride
        # per window (one list entry a chunk): its document, and its span of the document's tokens
        self._owners: list[np.ndarray] = []
        self._starts: list[np.ndarray] = []
        self._stops: list[np.ndarray] = []
        # per document: its token ids and the fast tokenizer's encoding (words, offsets)
        self.ids: list = []
        self.encodings: list = []
        self.n_truncated = 0

    # -- documents into windows ---------------------------------------------------------------
    def chunks(self, bounds: list[tuple[int, int]]) -> Chunks:
        """The windows as `Chunks` for `embedkit._batching.run_batches`: each window's token ids,
        special tokens included, in document order; the documents ``docs[a:b]`` of each
        ``(a, b)`` of ``bounds`` are tokenized when the loop asks for their chunk."""
        tokenizer = self.tokenizer
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if not getattr(tokenizer, "is_fast", False) or backend is None:
            backend = None
        else:  # the Rust tokenizer itself (what the Python wrapper calls, without its per-text
            # Python): no padding, no truncation (a saved tokenizer.json may set both)
            if backend.truncation is not None:
                backend.no_truncation()
            if backend.padding is not None:
                backend.no_padding()

        def encode(texts):
            if backend is not None:
                encodings = backend.encode_batch(texts, add_special_tokens=False)
                return [e.ids for e in encodings], encodings
            encoded = tokenizer(texts, add_special_tokens=False, truncation=False,
                                return_attention_mask=False, return_token_type_ids=False,
                                verbose=False)
            return encoded["input_ids"], [None] * len(texts)

        def chunk(start, stop):
            doc_ids, encodings = encode(self.docs[start:stop])
            self.ids += doc_ids
            self.encodings += encodings
            self._owners.append(np.arange(start, stop, dtype=np.int64))
            if self.long_documents == "truncate":
                return self._truncated(doc_ids)
            return self._windowed(doc_ids, start)

        total = len(self.docs) if self.long_documents == "truncate" else None
        return Chunks((chunk(a, b) for a, b in bounds), total=total)

    def _truncated(self, doc_ids) -> list[np.ndarray]:
        """One window per document, built for the whole chunk at once (no per-text numpy)."""
        room, n_pre, n_suf = self.room, len(self.prefix), len(self.suffix)
        lens = np.fromiter(map(len, doc_ids), dtype=np.int64, count=len(doc_ids))
        keep = np.minimum(lens, room)
        self.n_truncated += int((lens > room).sum())
        flat = np.fromiter(itertools.chain.from_iterable(doc_ids), dtype=np.int64,
                           count=int(lens.sum()))
        ends = np.cumsum(keep + n_pre + n_suf)
        begins = ends - (keep + n_pre + n_suf)
        out = np.empty(int(ends[-1]), dtype=np.int64)
        out[begins[:, None] + np.arange(n_pre)] = self.prefix
        out[(ends - n_suf)[:, None] + np.arange(n_suf)] = self.suffix
        within = np.arange(int(keep.sum())) - np.repeat(np.cumsum(keep) - keep, keep)
        out[np.repeat(begins + n_pre, keep) + within] = flat[
            np.repeat(np.cumsum(lens) - lens, keep) + within]
        self._starts.append(np.zeros(len(keep), dtype=np.int64))
        self._stops.append(keep)
        return [out[a:b] for a, b in zip(begins.tolist(), ends.tolist(), strict=True)]

    def _windowed(self, doc_ids, start: int) -> list[np.ndarray]:
        """Every window of every document of the chunk (documents numbered from ``start``)."""
        items, owners, starts, stops = [], [], [], []
        for d, ids in enumerate(doc_ids, start=start):
            ids = np.asarray(ids, dtype=np.int64)
            for a, b in window_spans(len(ids), self.room, self.long_documents, self.stride):
                items.append(np.concatenate([self.prefix, ids[a:b], self.suffix]))
                owners.append(d)
                starts.append(a)
                stops.append(b)
        self._owners[-1] = np.asarray(owners, dtype=np.int64)
        self._starts.append(np.asarray(starts, dtype=np.int64))
        self._stops.append(np.asarray(stops, dtype=np.int64))
        return items

    def owners(self) -> np.ndarray:
        """The document of each window (complete once every chunk has been tokenized)."""
        return np.concatenate(self._owners)

    def _layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(owners, starts, stops)`` of every window; its length is ``stops - starts`` plus
        the special tokens."""
        return self.owners(), np.concatenate(self._starts), np.concatenate(self._stops)

    # -- windows back into documents ----------------------------------------------------------
    def pooled(self, batches, dim: int, pooling: str, normalize: bool) -> np.ndarray:
        """One float32 vector per document from the windows' vectors (``batches``: the encode
        loop's ``(window indices, vectors)``): the max of its windows' for max pooling, else
        their mean weighted by their tokens (cls: unweighted); L2-normalised if ``normalize``."""
        owners, starts, stops = self._layout()
        lengths = stops - starts + len(self.prefix) + len(self.suffix)
        n_docs = len(self.docs)
        vectors = np.empty((len(lengths), dim), dtype=np.float32)
        for idx, out in batches:
            vectors[idx] = out
        if len(lengths) == n_docs:  # one window per document, in document order
            pooled = vectors
        else:
            pooled = np.zeros((n_docs, dim), dtype=np.float32)
            if pooling == "max":
                pooled[:] = -np.inf
                np.maximum.at(pooled, owners, vectors)
            else:
                weights = lengths.astype(np.float32)  # window tokens, special ones included
                if pooling == "cls":
                    weights[:] = 1.0
                np.add.at(pooled, owners, vectors * weights[:, None])
                pooled /= np.bincount(owners, weights=weights, minlength=n_docs)[:, None]
        if normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, 1e-12)
        return np.ascontiguousarray(pooled, dtype=np.float32)

    def sequences(self, batches, dim: int, word_pooling: str | None) -> Sequences:
        """One sequence per document from the windows' token vectors (``batches``: the encode
        loop's ``(window indices, (B, T, dim) vectors)``): the windows stitched so that each
        text token appears once, with the special tokens of the first and last window around
        them (word pieces), or the pieces of each word pooled into one vector (``word_pooling``
        "mean" or "first"; special tokens dropped; needs a fast tokenizer)."""
        owners, starts, stops = self._layout()
        n_pre, n_suf = len(self.prefix), len(self.suffix)
        lengths = stops - starts + n_pre + n_suf
        per_item: list = [None] * len(lengths)
        for idx, out in batches:
            for row, i in enumerate(idx):
                per_item[i] = out[row, : lengths[i]]
        convert = self.tokenizer.convert_ids_to_tokens
        special = [str(t) for t in convert(self.prefix.tolist() + self.suffix.tolist())]
        n_docs = len(self.docs)
        first_item = np.searchsorted(owners, np.arange(n_docs))
        rows, tokens = [], []
        for d in range(n_docs):
            start_i = first_item[d]
            stop_i = first_item[d + 1] if d + 1 < n_docs else len(lengths)
            parts, last_stop = [], 0
            for i in range(start_i, stop_i):  # stitch windows: keep each text token once
                start, stop = int(starts[i]), int(stops[i])
                body = per_item[i][n_pre: n_pre + (stop - start)]
                parts.append(body[max(last_stop - start, 0):])
                last_stop = stop
            content = np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)
            enc = self.encodings[d]
            if word_pooling is not None:
                vecs, toks = _pool_words(content, enc, self.docs[d], last_stop, dim, word_pooling)
            else:
                first, last = per_item[start_i], per_item[stop_i - 1]
                vecs = np.concatenate([first[:n_pre], content, last[len(last) - n_suf:]])
                pieces = enc.tokens[:last_stop] if enc is not None else [
                    str(t) for t in convert(self.ids[d][:last_stop])]
                toks = list(special[:n_pre]) + list(pieces) + list(special[n_pre:])
            rows.append(vecs)
            tokens.append(toks)
        return Sequences.from_rows(rows, tokens=tokens, dim=dim)


def _pool_words(content, enc, text: str, n_tokens: int, dim: int, how: str):
    """The word-piece vectors ``content`` of one document pooled per word (``how``: "mean" or
    "first"), with the words as the text writes them (the encoding's word ids and offsets)."""
    word_ids = np.array([-1 if w is None else w for w in enc.word_ids[:n_tokens]], dtype=np.int64)
    keep = word_ids >= 0
    if not keep.any():
        return np.zeros((0, dim), np.float32), []
    _, inverse = np.unique(word_ids[keep], return_inverse=True)
    vecs = content[keep]
    n_words = int(inverse.max()) + 1
    offsets = np.asarray(enc.offsets[:n_tokens], dtype=np.int64)[keep]
    starts = np.full(n_words, np.iinfo(np.int64).max)
    ends = np.zeros(n_words, dtype=np.int64)
    np.minimum.at(starts, inverse, offsets[:, 0])
    np.maximum.at(ends, inverse, offsets[:, 1])
    if how == "first":
        first = np.full(n_words, len(inverse))
        np.minimum.at(first, inverse, np.arange(len(inverse)))
        pooled = vecs[first]
    else:
        pooled = np.zeros((n_words, dim), dtype=np.float32)
        np.add.at(pooled, inverse, vecs)
        pooled /= np.bincount(inverse, minlength=n_words)[:, None].astype(np.float32)
    return pooled.astype(np.float32), [text[s:e] for s, e in zip(starts, ends, strict=True)]
