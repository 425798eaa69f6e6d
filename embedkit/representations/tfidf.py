"""Bag-of-words, binary and TF-IDF features over word (and optionally character) n-grams, with
optional LSA (truncated SVD) to a dense space. Built on scikit-learn's vectorizers."""

from __future__ import annotations

from numbers import Integral
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .._params import (
    SEED,
    CacheSpec,
    Interval,
    NgramRange,
    RealNotInt,
    StrOptions,
    positive_int,
)
from ..base import Representation, store_params
from ..documents import DEFAULT_TOKEN_PATTERN, Tokenizer

__all__ = ["TfidfEmbedder"]

#: a document-frequency cut-off, as scikit-learn's vectorizers take it: a share or a count
_DOC_FREQUENCY = [Interval(RealNotInt, 0, 1, closed="both"), Interval(Integral, 0, None, closed="left")]


class TfidfEmbedder(Representation):
    """Counts, binary indicators or TF-IDF weights over word n-grams (plus char n-grams).

    Parameters
    ----------
    weighting : {"tfidf", "count", "binary"}, default="tfidf"
    ngram_range : tuple of int, default=(1, 1)
        Word n-gram sizes.
    char_ngram_range : tuple of int or None, default=None
        Also add character n-grams inside word boundaries, e.g. ``(2, 4)``.
    max_features : int >= 1 or None, default=None
        Keep the most frequent terms (per analyzer).
    min_df, max_df : int >= 0 or float in [0, 1], default=1, 1.0
        Document-frequency cut-offs, as in scikit-learn: a count of documents or a share.
    sublinear_tf : bool, default=False
        Use ``1 + log(tf)`` (tfidf weighting only).
    lowercase : bool, default=True
    stop_words : {"english"} or list or None, default=None
    n_components : int or None, default=None
        Reduce to this many dense dimensions with truncated SVD (LSA), then L2-normalise.
    random_state : int, default=0
        Seeds the SVD.
    output : {"pooled"}, default="pooled"
        Bag-of-words has no token order, so only pooled (document) output exists.
    cache : None, "memory" or path, default=None
        Embedding cache (see `embedkit.cache`).

    Attributes
    ----------
    vectorizer_ : sklearn vectorizer or FeatureUnion
    svd_ : TruncatedSVD or None
    dim_ : int
        Output dimension.

    Examples
    --------
    >>> emb = TfidfEmbedder().fit(["the cat sat", "the dog ran"])
    >>> emb.transform(["the cat ran"]).shape
    (1, 5)
    """

    _outputs = ("pooled",)
    _outputs_note = (
        "Bag-of-words keeps no token order, so there is no sequence form; for sequences use "
        "GloveEmbedder(output='sequence'), TransformerEmbedder(output='sequence') or TokenIndexer()."
    )

    _parameter_constraints: ClassVar[dict] = {
        "weighting": [StrOptions({"tfidf", "count", "binary"})],
        "ngram_range": [NgramRange()],
        "char_ngram_range": [None, NgramRange()],
        "max_features": [None, positive_int()],
        "min_df": _DOC_FREQUENCY,
        "max_df": _DOC_FREQUENCY,
        "sublinear_tf": ["boolean"],
        "lowercase": ["boolean"],
        "stop_words": [None, StrOptions({"english"}), list],
        "n_components": [None, positive_int()],  # below the vocabulary size: checked at fit
        "random_state": [None, SEED],
        "output": [StrOptions({"pooled"})],
        "cache": [CacheSpec()],
    }

    def __init__(self, weighting: str = "tfidf", ngram_range=(1, 1), char_ngram_range=None,
                 max_features: int | None = None, min_df=1, max_df=1.0, sublinear_tf: bool = False,
                 lowercase: bool = True, stop_words=None, n_components: int | None = None,
                 random_state: int = 0, output: str = "pooled", cache=None):
        store_params(self, locals())

    def _vectorizer(self, analyzer: str, ngram_range):
        from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

        common = dict(ngram_range=tuple(ngram_range), max_features=self.max_features,
                      min_df=self.min_df, max_df=self.max_df, lowercase=self.lowercase,
                      dtype=np.float32)
        if analyzer == "word":
            common.update(tokenizer=Tokenizer(lowercase=False, pattern=DEFAULT_TOKEN_PATTERN),
                          token_pattern=None, stop_words=self.stop_words)
        else:
            common.update(analyzer="char_wb")
        if self.weighting == "tfidf":
            return TfidfVectorizer(sublinear_tf=self.sublinear_tf, **common)
        return CountVectorizer(binary=self.weighting == "binary", **common)

    def _fit(self, docs, y=None):
        from sklearn.pipeline import FeatureUnion

        word = self._vectorizer("word", self.ngram_range)
        if self.char_ngram_range is not None:
            vec = FeatureUnion([("word", word), ("char", self._vectorizer("char", self.char_ngram_range))])
        else:
            vec = word
        try:
            matrix = vec.fit_transform(docs)
        except ValueError as err:  # sklearn: "empty vocabulary; perhaps the documents only contain stop words"
            raise ValueError(
                f"TfidfEmbedder found no terms in the {len(docs)} training documents ({err}). "
                "Lower min_df / raise max_df, drop stop_words, or check the documents are not empty."
            ) from None
        self.vectorizer_ = vec
        self.svd_ = None
        if self.n_components is not None:
            from sklearn.decomposition import TruncatedSVD

            k = int(self.n_components)
            if not 1 <= k < matrix.shape[1]:
                raise ValueError(
                    f"n_components={k} must lie in [1, {matrix.shape[1] - 1}] for a vocabulary of "
                    f"{matrix.shape[1]} terms; lower n_components."
                )
            self.svd_ = TruncatedSVD(k, random_state=self.random_state).fit(matrix)
        self.dim_ = matrix.shape[1] if self.svd_ is None else int(self.n_components)

    def _transform(self, docs):
        if not docs:  # scikit-learn's FeatureUnion and TruncatedSVD refuse zero rows
            empty = sp.csr_matrix((0, self.dim_), dtype=np.float32)
            return empty if self.svd_ is None else np.zeros((0, self.dim_), dtype=np.float32)
        matrix = self.vectorizer_.transform(docs)
        if self.svd_ is None:
            return sp.csr_matrix(matrix, dtype=np.float32)
        from sklearn.preprocessing import normalize

        return normalize(self.svd_.transform(matrix)).astype(np.float32)

    def _feature_names(self):
        if self.svd_ is not None:
            return [f"lsa{i}" for i in range(self.dim_)]
        return [str(n) for n in self.vectorizer_.get_feature_names_out()]
