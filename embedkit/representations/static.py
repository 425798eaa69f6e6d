"""The one representation behind every static word-vector embedder (Word2Vec, FastText, GloVe).

`StaticEmbedder` turns documents into pooled vectors (mean, sum, max, tfidf, sif), `Sequences`
or `TokenIds` over a `embedkit.vectors.WordVectors` store, with one OOV policy. Pooling is a
sparse document-term matrix times the embedding matrix (``numpy.maximum.reduceat`` over gathered
rows for max). The tokenizer hands over a batch as flat ids over its distinct words
(`embedkit.data.documents.TokenizedDocuments`), so the vector table and the OOV policy are consulted
once per distinct word, and every per-token step is a numpy or scipy kernel. Word queries
(`~StaticEmbedder.most_similar`, ``analogy``, ``similarity``, ``lookup``) apply the embedder's
lowercasing and OOV policy, then ask the store.

Subclasses implement ``_build_vectors(tokens, counts) -> WordVectors`` (load or train), with
``tokens`` the fit documents as `TokenizedDocuments` (``tokens.lists()`` for gensim) and
``counts`` a `Counter` of the tokens in order of first occurrence.
"""

from __future__ import annotations

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
from ..data.documents import TokenizedDocuments, Tokenizer
from ..sequences import Sequences, TokenIds
from ..vectors import FORMATS, WordVectors

__all__ = ["StaticEmbedder"]

#: table entries of where pretrained vectors come from (`embedkit.vectors.load_word_vectors`)
VECTOR_SOURCE = {"vectors": [None, str, os.PathLike], "vectors_format": [StrOptions(set(FORMATS))]}


def _segment_sums(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over consecutive segments of ``lengths`` (float64 for floats)."""
    dtype = np.float64 if values.dtype.kind == "f" else np.int64
    out = np.zeros(len(lengths), dtype=dtype)
    nonempty = lengths > 0
    if nonempty.any():
        out[nonempty] = np.add.reduceat(values, (np.cumsum(lengths) - lengths)[nonempty], dtype=dtype)
    return out


class StaticEmbedder(Representation):
    """Base of the static word-vector representations: one vector per word, pooled or not.

    Subclasses store their arguments in ``__init__`` (including the common ones below, which
    every subclass takes) and implement ``_build_vectors(tokens, counts) -> WordVectors``.

    Parameters
    ----------
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
    oov : {"auto", "skip", "zero", "unk", "subword"}
        Tokens without a vector: dropped, a zero vector, the ``unk_vector_`` (the
        frequency-weighted mean of the fit tokens' vectors), or built from character n-grams
        (FastText only). ``"auto"`` is ``"unk"`` for ``"sequence"`` and ``"ids"`` output, so a
        head still sees where a rare word, a number or a name stood (and its attention weights
        cover every token of the text), and ``"skip"`` for ``"pooled"`` output, where one shared
        vector would only pull every document's mean toward the corpus mean. Under ``"skip"``
        a head's attention never sees the dropped words;
        `embedkit.explain.attention_weights` puts them back, marked unknown, with weight 0.
    max_length : int or None
        Tokens kept per document for ``"sequence"`` and ``"ids"`` output (pooling uses all).
    """

    _outputs = ("pooled", "sequence", "ids")
    #: the parameters every static embedder shares (`embedkit._params`)
    _parameter_constraints: ClassVar[dict] = {
        "output": [StrOptions({"pooled", "sequence", "ids"})],
        "pooling": [StrOptions({"mean", "sum", "max", "tfidf", "sif"})],
        # "subword" needs vectors with n-grams: checked once they are loaded or trained
        "oov": [StrOptions({"auto", "skip", "zero", "unk", "subword"})],
        "max_length": [None, positive_int()],
        "lowercase": ["boolean"],
        "sif_a": [Interval(Real, 0, None, closed="neither")],
        "sif_remove_pc": ["boolean"],
        "verbose": ["verbose"],
        "cache": [CacheSpec()],
    }

    # -- to implement ---------------------------------------------------------------------
    def _build_vectors(self, tokens: TokenizedDocuments, counts: Counter) -> WordVectors:
        raise NotImplementedError  # pragma: no cover

    def _oov_policy(self) -> str:
        """The policy in force: ``oov="auto"`` resolved for the output form (see ``oov``)."""
        if self.oov != "auto":
            return self.oov
        return "skip" if self.output == "pooled" else "unk"

    def _log(self, msg: str) -> None:
        if getattr(self, "verbose", False):
            print(f"[{type(self).__name__}] {msg}", file=sys.stderr)

    # -- fit ------------------------------------------------------------------------------------
    def _fit(self, docs, y=None):
        self.tokenizer_ = Tokenizer(lowercase=self.lowercase)
        tokens = self.tokenizer_.tokenize_ids(docs)
        counts = Counter(dict(zip(tokens.words, tokens.counts().tolist(), strict=True)))
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

    def _fit_statistics(self, tokens: TokenizedDocuments, counts: Counter) -> None:
        wv = self.word_vectors_
        words = sorted(counts, key=lambda w: (-counts[w], w))
        rows = wv.rows(words)
        known = rows >= 0
        cnt = np.fromiter(map(counts.__getitem__, words), dtype=np.float64, count=len(words))
        total = float(cnt.sum())
        self.n_fit_tokens_ = int(total)
        self.oov_rate_fit_ = float(cnt[~known].sum() / total) if total else 0.0
        keep = known | (self.oov == "subword")
        vocab = [w for w, k in zip(words, keep, strict=True) if k]
        vrows = rows[keep]
        known_kept = vrows >= 0
        fit_vectors = np.zeros((len(vocab), wv.dim), dtype=np.float32)
        if known_kept.any():
            fit_vectors[known_kept] = wv.vectors[vrows[known_kept]]
        if (~known_kept).any():
            fit_vectors[~known_kept] = wv.subword_vectors(
                [w for w, k in zip(vocab, known_kept, strict=True) if not k])
        cnt = cnt[keep]
        n_docs = len(tokens)
        self.n_fit_docs_ = n_docs
        self.vocabulary_ = vocab
        self.word_index_ = dict(zip(vocab, range(len(vocab)), strict=True))
        self.word_counts_ = cnt.astype(np.int64)
        self.idf_ = None  # document frequencies cost a pass over the corpus: only for tfidf
        if self.pooling == "tfidf":
            df_of = dict(zip(tokens.words, tokens.document_frequencies().tolist(), strict=True))
            df = np.fromiter(map(df_of.__getitem__, vocab), dtype=np.float64, count=len(vocab))
            self.idf_ = (np.log((1.0 + n_docs) / (1.0 + df)) + 1.0).astype(np.float32)
        self.idf_unseen_ = float(np.log(1.0 + n_docs) + 1.0)
        prob = cnt / total if total else cnt
        self.sif_weights_ = (self.sif_a / (self.sif_a + prob)).astype(np.float32)
        self.unk_vector_ = (cnt @ fit_vectors / cnt.sum()).astype(np.float32) if cnt.sum() else \
            np.zeros(wv.dim, dtype=np.float32)
        # rows 0 = <pad>/zero, 1 = <unk>, 2.. = the fit vocabulary (the layout of output="ids")
        matrix = np.zeros((len(vocab) + 2, wv.dim), dtype=np.float32)
        if self.oov in ("unk", "auto"):  # "auto": row 1 is used whenever the output is not pooled
            matrix[1] = self.unk_vector_
        matrix[2:] = fit_vectors
        self.embedding_matrix_ = matrix
        self.sif_component_ = None
        if self.pooling == "sif" and self.sif_remove_pc and n_docs > 1:
            tokens = tokens.locate(self.word_index_)
            pooled = self._pool(tokens, *self._resolve(tokens))
            if np.any(pooled):
                _, _, vt = np.linalg.svd(pooled.astype(np.float64), full_matrices=False)
                self.sif_component_ = vt[0].astype(np.float32)
        self.oov_rate_ = self.oov_rate_fit_

    # -- transform ------------------------------------------------------------------------------
    def _transform(self, docs):
        tokens = self.tokenizer_.tokenize_ids(docs, vocabulary=self.word_index_)
        n = len(tokens)
        vectors, positions, keep = self._resolve(tokens)
        if self.output == "pooled":
            out = self._pool(tokens, vectors, positions, keep)
            if self.pooling == "sif" and self.sif_component_ is not None:
                u = self.sif_component_
                out = out - np.outer(out @ u, u).astype(np.float32)
            return out
        kept = (tokens if keep.all() else tokens.subset(keep[tokens.ids])).truncate(self.max_length)
        width = max(int(kept.lengths.max(initial=0)), 1)
        at = kept.padded_index(width)
        tok = np.empty(n, dtype=object)
        tok[:] = kept.lists()
        if self.output == "ids":
            out = np.zeros(n * width, dtype=np.int64)
            out[at] = np.where(positions >= 0, positions + 2, 1)[kept.ids]
            return TokenIds(out.reshape(n, width), kept.lengths, ["<pad>", "<unk>"] + self.vocabulary_,
                            vectors=self.embedding_matrix_, tokens=tok)
        # one gather fills every step: padding points at an appended zero row
        rows = np.full(n * width, len(vectors), dtype=np.int64)
        rows[at] = kept.ids
        values = np.empty((n, width, self.dim_), dtype=np.float32)
        np.take(np.concatenate([vectors, np.zeros((1, self.dim_), np.float32)]), rows, axis=0,
                out=values.reshape(n * width, self.dim_))
        return Sequences(values, kept.lengths, tokens=tok)

    def _resolve(self, tokens: TokenizedDocuments):
        """Vector, fit-vocabulary position and OOV decision of each distinct word of ``tokens``.

        ``tokens.positions`` locate the words in ``vocabulary_`` (``tokenize_ids(docs,
        word_index_)``), whose vectors are rows of ``embedding_matrix_``; only the words unseen
        at fit are looked up in the vector table, once per distinct word. Returns
        ``(vectors, positions, keep)``: ``vectors[i]`` is the vector of ``tokens.words[i]``
        under the OOV policy, ``positions[i]`` its index in ``vocabulary_`` (-1 if unseen at
        fit) and ``keep[i]`` False for the words ``oov="skip"`` drops. ``vectors[tokens.ids]``
        are the token vectors.
        """
        wv = self.word_vectors_
        words, positions = tokens.words, tokens.positions
        seen = positions >= 0
        vectors = np.zeros((len(words), self.dim_), dtype=np.float32)
        vectors[seen] = self.embedding_matrix_[positions[seen] + 2]
        unseen = np.flatnonzero(~seen)
        rows = wv.rows([words[i] for i in unseen])
        vectors[unseen[rows >= 0]] = wv.vectors[rows[rows >= 0]]
        found = np.ones(len(words), dtype=bool)  # has a row in the vector table
        found[unseen] = rows >= 0
        policy = self._oov_policy()
        if policy == "subword":  # words seen at fit may have had n-gram vectors only
            found[seen] = wv.rows([w for w, s in zip(words, seen.tolist(), strict=True) if s]) >= 0
            missing = unseen[rows < 0]
            vectors[missing] = wv.subword_vectors([words[i] for i in missing])
        elif policy == "unk":
            vectors[~found] = self.unk_vector_
        keep = found if policy == "skip" else np.ones(len(words), dtype=bool)
        n_missing = 0 if found.all() else int(np.count_nonzero(~found[tokens.ids]))
        self.oov_rate_ = n_missing / tokens.n_tokens if tokens.n_tokens else 0.0
        self._log(f"transformed {len(tokens)} documents: OOV rate {self.oov_rate_:.2%} of "
                  f"{tokens.n_tokens} tokens")
        return vectors, positions, keep

    def _pool(self, tokens: TokenizedDocuments, vectors, positions, keep) -> np.ndarray:
        """Pool kept tokens per document: a sparse (documents x distinct words) weight matrix
        times the words' vectors, with a column of ones for the kept words so the same product
        counts them (mean/sum/tfidf/sif); ``maximum.reduceat`` over gathered rows for max."""
        n, d = len(tokens), self.dim_
        if self.pooling == "max":
            kept = tokens if keep.all() else tokens.subset(keep[tokens.ids])
            ids, lengths = kept.ids, kept.lengths
            indptr = np.concatenate([[0], np.cumsum(lengths)])
            out = np.zeros((n, d), dtype=np.float32)
            nonempty = np.flatnonzero(lengths > 0)
            chunk = 1 << 18  # bounded memory: gather at most about this many token vectors at once
            i = 0
            while i < nonempty.size:
                j = int(np.searchsorted(indptr[nonempty + 1], indptr[nonempty[i]] + chunk, "right"))
                j = max(j, i + 1)
                lo, hi = indptr[nonempty[i]], indptr[nonempty[j - 1] + 1]
                out[nonempty[i:j]] = np.maximum.reduceat(vectors[ids[lo:hi]],
                                                         indptr[nonempty[i:j]] - lo, axis=0)
                i = j
            return out
        # words the OOV policy drops have zero vectors, so they only need leaving out of counts
        counted = np.concatenate([vectors, keep[:, None]], axis=1, dtype=np.float32)
        if self.pooling in ("tfidf", "sif"):
            table, unseen = ((self.idf_, self.idf_unseen_) if self.pooling == "tfidf"
                             else (self.sif_weights_, 1.0))
            seen = positions >= 0
            word_weights = np.full(len(positions), unseen, dtype=np.float32)
            word_weights[seen] = table[positions[seen]]
            weights = word_weights[tokens.ids]
        else:
            weights = np.ones(tokens.n_tokens, dtype=np.float32)
        indptr = np.concatenate([[0], np.cumsum(tokens.lengths)])
        X = sp.csr_matrix((weights, tokens.ids, indptr), shape=(n, len(tokens.words)))
        out = np.asarray(X @ counted, dtype=np.float32)
        out, weight_sums = out[:, :d], out[:, d]
        if self.pooling == "sum":
            return np.ascontiguousarray(out)
        denom = weight_sums  # mean: the kept tokens
        if self.pooling == "tfidf":  # their weights, summed in float64
            denom = _segment_sums(weights if keep.all() else weights * keep[tokens.ids],
                                  tokens.lengths)
        elif self.pooling == "sif":  # the mean of the weighted vectors of the kept tokens
            denom = tokens.lengths if keep.all() else _segment_sums(keep[tokens.ids], tokens.lengths)
        out = out / np.maximum(denom, 1e-12)[:, None].astype(np.float32)
        out[denom == 0] = 0.0
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
