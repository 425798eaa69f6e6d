"""Bag-of-words, binary and TF-IDF features over word (and optionally character) n-grams, with
optional NBSVM log-count-ratio scaling (supervised) and optional LSA (truncated SVD) to a dense
space. Built on scikit-learn's vectorizers."""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .._nb import log_count_ratios
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
from ..data.documents import DEFAULT_TOKEN_PATTERN, Tokenizer

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
    log_count_ratio : bool, default=False
        Scale each term's column by its Naive Bayes log-count ratio
        ``r = log((a + p) / |a + p|_1) - log((a + q) / |a + q|_1)``, where ``p`` and ``q`` are the
        column sums of the features over the documents of one class and of the others, and
        ``a = nb_alpha`` (Wang & Manning 2012, "NBSVM": a linear model on these features is NB
        log-count ratios interpolated with a discriminative fit). Supervised: ``fit`` needs
        ``y``. Two classes give one block of columns (the ratio of the second class in sorted
        order); more classes give one one-vs-rest block per class, side by side, so the width
        is ``n_classes * n_terms`` (a multinomial model over them holds ``n_classes ** 2 *
        n_terms`` coefficients; `embedkit.heads.NBLogisticRegression` on the plain features fits
        one two-class model per class on its own block instead).
    nb_alpha : float, default=1.0
        Additive smoothing of the log-count ratios (> 0).
    n_components : int or None, default=None
        Reduce to this many dense dimensions with truncated SVD (LSA), then L2-normalise
        (after the log-count-ratio scaling, when both are set).
    sparse_output : bool, default=True
        Without ``n_components`` the features are a scipy-sparse CSR matrix (one column per
        term). ``False`` gives a dense float32 array instead, e.g. for
        ``set_output(transform="pandas")`` or a dense-only estimator on small data; it needs
        ``n_documents * n_terms * 4`` bytes, so cap the vocabulary with ``max_features`` or use
        ``n_components`` on large corpora.
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
    classes_ : ndarray or None
        With ``log_count_ratio``: the labels seen at fit, in sorted order.
    ratios_ : ndarray of shape (n_blocks, n_terms) or None
        With ``log_count_ratio``: the log-count ratio of every term, one row per block (one row
        for two classes, the ratio of ``classes_[1]``; else one row per class).
    dim_ : int
        Output dimension.

    Examples
    --------
    >>> emb = TfidfEmbedder().fit(["the cat sat", "the dog ran"])
    >>> emb.transform(["the cat ran"]).shape
    (1, 5)
    >>> TfidfEmbedder(sparse_output=False).set_output(transform="pandas").fit_transform(
    ...     ["the cat sat", "the dog ran"]).columns.tolist()
    ['cat', 'dog', 'ran', 'sat', 'the']
    >>> nb = TfidfEmbedder(log_count_ratio=True).fit(["good fun", "good film", "bad film"],
    ...                                              ["pos", "pos", "neg"])
    >>> nb.ratios_.shape, bool(nb.ratios_[0, nb.vectorizer_.vocabulary_["good"]] > 0)
    ((1, 4), True)
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
        "log_count_ratio": ["boolean"],  # needs y with two classes or more: checked at fit
        "nb_alpha": [Interval(Real, 0, None, closed="neither")],
        "n_components": [None, positive_int()],  # below the vocabulary size: checked at fit
        "sparse_output": ["boolean"],
        "random_state": [None, SEED],
        "output": [StrOptions({"pooled"})],
        "cache": [CacheSpec()],
    }

    def __init__(self, weighting: str = "tfidf", ngram_range=(1, 1), char_ngram_range=None,
                 max_features: int | None = None, min_df=1, max_df=1.0, sublinear_tf: bool = False,
                 lowercase: bool = True, stop_words=None, log_count_ratio: bool = False,
                 nb_alpha: float = 1.0, n_components: int | None = None,
                 sparse_output: bool = True, random_state: int = 0, output: str = "pooled",
                 cache=None):
        store_params(self, locals())

    @property
    def needs_classes(self) -> bool:
        """Whether it learns from classes (the log-count ratios): a number to predict or a set
        of labels cannot fit it, and the search leaves its pairs out there."""
        return bool(self.log_count_ratio)

    @property
    def non_negative_output(self) -> bool:
        """Whether its features are never negative: counts and TF-IDF are, NBSVM's ratio-scaled
        columns and LSA's components are not (`embedkit.base.non_negative`)."""
        return not self.log_count_ratio and self.n_components is None

    def _vectorizer(self, analyzer: str, ngram_range):
        from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

        common = {"ngram_range": tuple(ngram_range), "max_features": self.max_features,
                  "min_df": self.min_df, "max_df": self.max_df, "lowercase": self.lowercase,
                  "dtype": np.float32}
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
        except ValueError as err:  # scikit-learn's "empty vocabulary; perhaps the documents ..."
            raise ValueError(
                f"TfidfEmbedder found no terms in the {len(docs)} training documents ({err}). "
                "Lower min_df / raise max_df, drop stop_words, or check the documents are not empty."
            ) from None
        self.vectorizer_ = vec
        self.classes_, self.ratios_ = None, None
        if self.log_count_ratio:
            self.classes_, self.ratios_ = log_count_ratios(matrix, y, self.nb_alpha)
            matrix = self._scale(matrix)
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

    def _scale(self, matrix):
        """The features times each block's log-count ratios, blocks side by side."""
        if self.ratios_ is None:
            return matrix
        matrix = sp.csr_matrix(matrix)
        return sp.hstack([matrix.multiply(r[None, :]) for r in self.ratios_], format="csr")

    def _transform(self, docs):
        if not docs:  # scikit-learn's FeatureUnion and TruncatedSVD refuse zero rows
            empty = sp.csr_matrix((0, self.dim_), dtype=np.float32)
            return empty if self.svd_ is None and self.sparse_output else empty.toarray()
        matrix = self._scale(self.vectorizer_.transform(docs))
        if self.svd_ is None:
            matrix = sp.csr_matrix(matrix, dtype=np.float32)
            return matrix if self.sparse_output else matrix.toarray()
        from sklearn.preprocessing import normalize

        return normalize(self.svd_.transform(matrix)).astype(np.float32)

    def _feature_names(self):
        if self.svd_ is not None:
            return [f"lsa{i}" for i in range(self.dim_)]
        names = [str(n) for n in self.vectorizer_.get_feature_names_out()]
        if self.ratios_ is None:
            return names
        blocks = self.classes_[1:] if len(self.classes_) == 2 else self.classes_
        return [f"{c}:{n}" for c in blocks for n in names]

