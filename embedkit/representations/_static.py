"""The one representation behind every static word-vector embedder (Word2Vec, FastText, GloVe).

`StaticEmbedder` turns documents into pooled vectors (mean, sum, max, tfidf, sif), `Sequences`
or `TokenIds` over a `embedkit.vectors.WordVectors` store, with one OOV policy. Pooling is a
sparse document-term matrix times the embedding matrix (``numpy.maximum.reduceat`` over gathered
rows for max); tokens are mapped to rows with C-level dict look-ups, never with a Python loop
over tokens. Word queries (`~StaticEmbedder.most_similar`, ``analogy``, ``similarity``,
``lookup``) apply the embedder's lowercasing and OOV policy, then ask the store.

Subclasses implement ``_build_vectors(tokens, counts) -> WordVectors`` (load or train).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections import Counter
from collections.abc import Iterable
from numbers import Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .._params import CacheSpec, Interval, StrOptions, positive_int
from ..base import Representation
from ..documents import Tokenizer
from ..sequences import Sequences, TokenIds
from ..vectors import FORMATS, WordVectors

__all__ = ["StaticEmbedder"]

#: table entries of where pretrained vectors come from (`embedkit.vectors.load_word_vectors`)
VECTOR_SOURCE = {"vectors": [None, str, os.PathLike], "vectors_format": [StrOptions(set(FORMATS))]}


def _weighted_sum(doc, cols, weights, n, matrix) -> np.ndarray:
    """``sum_t weights[t] * matrix[cols[t]]`` per document, as a CSR matrix product (``doc`` sorted)."""
    if cols.size == 0:
        return np.zeros((n, matrix.shape[1]), dtype=np.float32)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(doc, minlength=n))])
    X = sp.csr_matrix((weights, cols, indptr), shape=(n, matrix.shape[0]))
    return np.asarray(X @ matrix, dtype=np.float32)


class StaticEmbedder(Representation):
    """Base of the static word-vector representations: one vector per word, pooled or not.

    Subclasses store their arguments in ``__init__`` (including the common ones below) and
    implement ``_build_vectors(tokens, counts) -> WordVectors``.

    Common parameters
    -----------------
    output : {"pooled", "sequence", "ids"}
        ``"pooled"``: one float32 vector per document. ``"sequence"``: `Sequences` of word
        vectors (first ``max_length`` tokens, tokens attached). ``"ids"``: `TokenIds` over the
        words seen at fit (id 0 ``<pad>``, id 1 ``<unk>``) with their vectors, so a head's
        embedding layer is initialised from them (frozen or fine-tuned on the head's side).
    pooling : {"mean", "sum", "max", "tfidf", "sif"}
        ``"tfidf"``: mean weighted by IDF fitted on the fit documents (unseen words get the
        largest IDF). ``"sif"``: smooth inverse frequency, weights ``a / (a + p(w))`` with
        ``p`` the word's frequency in the fit documents, then (``sif_remove_pc``) the first
        principal component of the fit documents' vectors is removed.
    oov : {"skip", "zero", "unk", "subword"}
        Tokens without a vector: dropped, a zero vector, the ``unk_vector_`` (the
        frequency-weighted mean of the fit tokens' vectors), or built from character n-grams
        (FastText only).
    max_length : int or None
        Tokens kept per document for ``"sequence"`` and ``"ids"`` output (pooling uses all).
    """

    _outputs = ("pooled", "sequence", "ids")
    #: the parameters every static embedder shares (`embedkit._params`)
    _parameter_constraints: ClassVar[dict] = {
        "output": [StrOptions({"pooled", "sequence", "ids"})],
        "pooling": [StrOptions({"mean", "sum", "max", "tfidf", "sif"})],
        # "subword" needs vectors with n-grams: checked once they are loaded or trained
        "oov": [StrOptions({"skip", "zero", "unk", "subword"})],
        "max_length": [None, positive_int()],
        "lowercase": ["boolean"],
        "sif_a": [Interval(Real, 0, None, closed="neither")],
        "sif_remove_pc": ["boolean"],
        "verbose": ["verbose"],
        "cache": [CacheSpec()],
    }

    # -- to implement ---------------------------------------------------------------------
    def _build_vectors(self, tokens: list[list[str]], counts: Counter) -> WordVectors:
        raise NotImplementedError  # pragma: no cover

    def _log(self, msg: str) -> None:
        if getattr(self, "verbose", False):
            print(f"[{type(self).__name__}] {msg}", file=sys.stderr)

    # -- fit ------------------------------------------------------------------------------------
    def _fit(self, docs, y=None):
        self.tokenizer_ = Tokenizer(lowercase=self.lowercase)
        tokens = self.tokenizer_.tokenize_all(docs)
        counts = Counter(itertools.chain.from_iterable(tokens))
        wv = self._build_vectors(tokens, counts)
        if self.oov == "subword" and not wv.has_subwords:
            raise ValueError(
                f"{type(self).__name__}(oov='subword') needs vectors with character n-grams "
                "(a FastText model); these vectors have none. Use oov='skip', 'zero' or 'unk'."
            )
        self.word_vectors_ = wv
        self.dim_ = wv.dim
        self._fit_statistics(tokens, counts)
        self._log(f"fitted on {len(docs)} documents: {len(self.vocabulary_)} words with vectors, "
                  f"OOV rate {self.oov_rate_fit_:.2%} of {self.n_fit_tokens_} tokens")

    def _fit_statistics(self, tokens, counts: Counter) -> None:
        wv = self.word_vectors_
        words = sorted(counts, key=lambda w: (-counts[w], w))
        rows = wv.rows(words)
        known = rows >= 0
        cnt = np.fromiter(map(counts.__getitem__, words), dtype=np.float64, count=len(words))
        total = float(cnt.sum())
        self.n_fit_tokens_ = int(total)
        self.oov_rate_fit_ = float(cnt[~known].sum() / total) if total else 0.0
        keep = known | (self.oov == "subword")
        vocab = [w for w, k in zip(words, keep) if k]
        vrows = rows[keep]
        known_kept = vrows >= 0
        fit_vectors = np.zeros((len(vocab), wv.dim), dtype=np.float32)
        if known_kept.any():
            fit_vectors[known_kept] = self._gather(vrows[known_kept], None)
        if (~known_kept).any():
            fit_vectors[~known_kept] = wv.subword_vectors([w for w, k in zip(vocab, known_kept) if not k])
        # store row -> position in vocabulary_, as sorted arrays for vectorised look-ups
        positions = np.flatnonzero(known_kept)
        order = np.argsort(vrows[known_kept], kind="stable")
        self.fit_rows_ = vrows[known_kept][order]
        self.fit_row_positions_ = positions[order]
        cnt = cnt[keep]
        n_docs = len(tokens)
        self.n_fit_docs_ = n_docs
        self.vocabulary_ = vocab
        self.word_index_ = dict(zip(vocab, range(len(vocab))))
        self.word_counts_ = cnt.astype(np.int64)
        self.idf_ = None  # document frequencies cost a pass over the corpus: only for tfidf
        if self.pooling == "tfidf":
            df_counter = Counter(itertools.chain.from_iterable(map(set, tokens)))
            df = np.fromiter(map(df_counter.__getitem__, vocab), dtype=np.float64, count=len(vocab))
            self.idf_ = (np.log((1.0 + n_docs) / (1.0 + df)) + 1.0).astype(np.float32)
        self.idf_unseen_ = float(np.log(1.0 + n_docs) + 1.0)
        prob = cnt / total if total else cnt
        self.sif_weights_ = (self.sif_a / (self.sif_a + prob)).astype(np.float32)
        self.unk_vector_ = (cnt @ fit_vectors / cnt.sum()).astype(np.float32) if cnt.sum() else \
            np.zeros(wv.dim, dtype=np.float32)
        # rows 0 = <pad>/zero, 1 = <unk>, 2.. = the fit vocabulary (the layout of output="ids")
        matrix = np.zeros((len(vocab) + 2, wv.dim), dtype=np.float32)
        if self.oov == "unk":
            matrix[1] = self.unk_vector_
        matrix[2:] = fit_vectors
        self.embedding_matrix_ = matrix
        self.sif_component_ = None
        if self.pooling == "sif" and self.sif_remove_pc and n_docs > 1:
            pooled = self._pool(*self._resolve(tokens)[:4], n_docs)
            if np.any(pooled):
                _, _, vt = np.linalg.svd(pooled.astype(np.float64), full_matrices=False)
                self.sif_component_ = vt[0].astype(np.float32)
        self.oov_rate_ = self.oov_rate_fit_

    # -- transform ------------------------------------------------------------------------------
    def _transform(self, docs):
        tokens = self.tokenizer_.tokenize_all(docs)
        n = len(tokens)
        if self.output == "pooled":
            out = self._pool(*self._resolve(tokens)[:4], n)
            if self.pooling == "sif" and self.sif_component_ is not None:
                u = self.sif_component_
                out = out - np.outer(out @ u, u).astype(np.float32)
            return out
        codes, lengths, extra, extra_fitpos, flat = self._resolve(tokens, keep_tokens=True)
        starts = np.concatenate([[0], np.cumsum(lengths)])[:-1]
        step = np.arange(codes.size, dtype=np.int64) - np.repeat(starts, lengths)
        keep = step < self.max_length if self.max_length else np.ones(codes.size, bool)
        doc = np.repeat(np.arange(n), lengths)[keep]
        step = step[keep]
        codes = codes[keep]
        new_len = np.minimum(lengths, self.max_length) if self.max_length else lengths
        width = max(int(new_len.max()) if n else 0, 1)
        kept_tokens = np.asarray(flat, dtype=object)[keep] if flat else np.empty(0, dtype=object)
        bounds = np.concatenate([[0], np.cumsum(new_len)])
        tok = np.empty(n, dtype=object)
        tok[:] = [kept_tokens[bounds[i]:bounds[i + 1]].tolist() for i in range(n)]
        if self.output == "ids":
            pos = self._fit_positions(codes, extra_fitpos)
            ids = np.zeros((n, width), dtype=np.int64)
            ids[doc, step] = np.where(pos >= 0, pos + 2, 1)
            return TokenIds(ids, new_len, ["<pad>", "<unk>"] + self.vocabulary_,
                            vectors=self.embedding_matrix_, tokens=tok)
        values = np.zeros((n, width, self.dim_), dtype=np.float32)
        values[doc, step] = self._gather(codes, extra)
        return Sequences(values, new_len, tokens=tok)

    def _resolve(self, tokens, keep_tokens: bool = False):
        """Map every token to a vector code, applying the OOV policy (one C-level dict look-up
        per token; only OOV tokens are touched again).

        Returns ``(codes, lengths, extra, extra_fitpos, flat_tokens)``. ``codes`` (kept tokens,
        document order) are rows of the word-vector matrix when ``< V`` and rows of ``extra``
        (0: zero vector, 1: ``<unk>`` row, then subword vectors) offset by ``V`` otherwise;
        ``lengths`` counts kept tokens per document; ``extra_fitpos`` is each extra row's position
        in ``vocabulary_`` (-1 if none); ``flat_tokens`` the kept tokens (if ``keep_tokens``).
        """
        import pandas as pd

        wv = self.word_vectors_
        V = len(wv)
        flat = list(itertools.chain.from_iterable(tokens))
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        codes = wv.rows(flat)
        extra = [self.embedding_matrix_[:2]]
        extra_fitpos = [np.array([-1, -1], dtype=np.int64)]
        miss = np.flatnonzero(codes < 0)
        if miss.size:
            if self.oov == "subword":
                inv, uniq = pd.factorize(np.array([flat[i] for i in miss], dtype=object))
                uniq = list(uniq)
                fitpos = np.fromiter(map(self.word_index_.get, uniq, itertools.repeat(-1)),
                                     dtype=np.int64, count=len(uniq))
                vecs = np.empty((len(uniq), self.dim_), dtype=np.float32)
                seen = fitpos >= 0
                vecs[seen] = self.embedding_matrix_[fitpos[seen] + 2]
                vecs[~seen] = wv.subword_vectors([w for w, s in zip(uniq, seen) if not s])
                extra.append(vecs)
                extra_fitpos.append(fitpos)
                codes[miss] = V + 2 + inv
            else:
                codes[miss] = {"skip": -1, "zero": V, "unk": V + 1}[self.oov]
        self.oov_rate_ = float(miss.size / len(flat)) if flat else 0.0
        self._log(f"transformed {len(tokens)} documents: OOV rate {self.oov_rate_:.2%} of "
                  f"{len(flat)} tokens")
        dropped = codes < 0
        if dropped.any():
            doc = np.repeat(np.arange(len(tokens)), lengths)
            lengths = lengths - np.bincount(doc[dropped], minlength=len(tokens))
            codes = codes[~dropped]
            if keep_tokens:
                flat = np.asarray(flat, dtype=object)[~dropped].tolist()
        return (codes, lengths, np.concatenate(extra), np.concatenate(extra_fitpos),
                flat if keep_tokens else None)

    def _gather(self, codes: np.ndarray, extra: np.ndarray | None) -> np.ndarray:
        """Vectors of ``codes`` (rows of the word-vector matrix, or of ``extra`` beyond it)."""
        vectors = self.word_vectors_.vectors
        V = vectors.shape[0]
        out = np.empty((codes.size, vectors.shape[1]), dtype=np.float32)
        inside = codes < V
        if inside.all():
            return np.asarray(vectors[codes], dtype=np.float32)
        out[inside] = vectors[codes[inside]]
        out[~inside] = extra[codes[~inside] - V]
        return out

    def _fit_positions(self, codes: np.ndarray, extra_fitpos: np.ndarray) -> np.ndarray:
        """Position in ``vocabulary_`` of each code, -1 for words not seen at fit."""
        V = len(self.word_vectors_)
        pos = np.full(codes.size, -1, dtype=np.int64)
        inside = codes < V
        if self.fit_rows_.size:
            r = codes[inside]
            idx = np.minimum(np.searchsorted(self.fit_rows_, r), self.fit_rows_.size - 1)
            pos[inside] = np.where(self.fit_rows_[idx] == r, self.fit_row_positions_[idx], -1)
        pos[~inside] = extra_fitpos[codes[~inside] - V]
        return pos

    def _pool(self, codes, lengths, extra, extra_fitpos, n) -> np.ndarray:
        """Pool kept tokens per document: a sparse (docs x words) weight matrix times the word
        vectors for mean/sum/tfidf/sif, ``maximum.reduceat`` over gathered rows for max."""
        d = self.dim_
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        if self.pooling == "max":
            out = np.zeros((n, d), dtype=np.float32)
            nonempty = np.flatnonzero(lengths > 0)
            chunk = 1 << 18  # bounded memory: gather at most about this many token vectors at once
            i = 0
            while i < nonempty.size:
                j = int(np.searchsorted(indptr[nonempty + 1], indptr[nonempty[i]] + chunk, "right"))
                j = max(j, i + 1)
                lo, hi = indptr[nonempty[i]], indptr[nonempty[j - 1] + 1]
                gathered = self._gather(codes[lo:hi], extra)
                out[nonempty[i:j]] = np.maximum.reduceat(gathered, indptr[nonempty[i:j]] - lo, axis=0)
                i = j
            return out
        if self.pooling in ("tfidf", "sif"):
            pos = self._fit_positions(codes, extra_fitpos)
            table, unseen = ((self.idf_, self.idf_unseen_) if self.pooling == "tfidf"
                             else (self.sif_weights_, 1.0))
            weights = np.where(pos >= 0, table[np.maximum(pos, 0)] if table.size else unseen,
                               unseen).astype(np.float32)
        else:
            weights = np.ones(codes.size, dtype=np.float32)
        doc = np.repeat(np.arange(n), lengths)
        vectors = self.word_vectors_.vectors
        V = vectors.shape[0]
        inside = codes < V
        out = _weighted_sum(doc[inside], codes[inside], weights[inside], n, vectors)
        if not inside.all():
            out += _weighted_sum(doc[~inside], codes[~inside] - V, weights[~inside], n, extra)
        if self.pooling == "sum":
            return out
        denom = np.bincount(doc, weights, minlength=n) if self.pooling == "tfidf" else lengths
        out /= np.maximum(denom, 1e-12)[:, None].astype(np.float32)
        out[lengths == 0] = 0.0
        return out

    # -- word queries, answered by the store ----------------------------------------------------
    def _store(self) -> WordVectors:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "word_vectors_")
        return self.word_vectors_

    def _word(self, word: str) -> str:
        return word.lower() if self.lowercase else word

    def lookup(self, words: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of ``words`` and whether each was found.

        Uses the full vector table (not only the words seen at fit); with ``oov="subword"``
        unseen words get n-gram vectors and count as found. Unfound words get zeros.

        Returns
        -------
        vectors : ndarray of shape (n, d), float32
        found : ndarray of shape (n,), bool
        """
        store = self._store()
        return store.lookup(map(self._word, words), subwords=self.oov == "subword")

    def most_similar(self, word, topn: int = 10, exclude: Iterable[str] = ()):
        """Nearest words by cosine similarity; see `embedkit.vectors.WordVectors.most_similar`."""
        word = self._word(word) if isinstance(word, str) else word
        return self._store().most_similar(word, topn=topn, exclude=map(self._word, exclude))

    def analogy(self, a: str, b: str, c: str, topn: int = 1):
        """Words ``d`` with ``a : b :: c : d`` (``b - a + c``); see `WordVectors.analogy`."""
        return self._store().analogy(*map(self._word, (a, b, c)), topn=topn)

    def similarity(self, w1: str, w2: str) -> float:
        """Cosine similarity of two words."""
        return self._store().similarity(self._word(w1), self._word(w2))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
