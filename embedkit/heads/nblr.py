"""NBSVM's classifier (Wang & Manning 2012) with logistic regression: each class's own two-class
model on the features times that class's Naive Bayes log-count ratios, the registry's ``nblr``
head."""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import get_scorer_names
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._nb import log_count_ratios
from .._params import SEED, validate_params
from ..base import CheckedKeywords, store_params
from .linear import LogisticRegressionHead

__all__ = ["NBLogisticRegression"]


class NBLogisticRegression(CheckedKeywords, ClassifierMixin, BaseEstimator):
    """NBSVM with logistic regression over term counts or TF-IDF: for each class, the features
    times the class's Naive Bayes log-count ratios (that class against the others), and a
    two-class `LogisticRegressionHead` (C by inner cross-validation) on them; its probability of
    the class, the class's column, normalised over the classes. Two classes: one model.

    Why not ``TfidfEmbedder(log_count_ratio=True)`` + a logistic regression head beyond two
    classes: that representation puts one block of ratio-scaled columns per class side by side,
    and a multinomial model over them holds classes x classes x terms coefficients (45 classes:
    2,025 copies of the vocabulary); here each class's model reads its own block, classes x terms
    in all, as in the paper's one-against-the-rest use. That representation stays the way to
    extract NBSVM's features for another model.

    Parameters
    ----------
    nb_alpha : float, default=1.0
        Additive smoothing of the log-count ratios (> 0).
    Cs : sequence of float, default=(0.25, 1, 4, 16, 64)
        Inverse regularisation strengths each class's inner cross-validation tries.
    cv : int, default=3
        Inner stratified folds.
    scoring : str, default="neg_log_loss"
        What each class's inner cross-validation maximises: log-loss, as the ``logreg`` head's;
        the accuracy of one class against the others on a few folds barely moves with C where
        the class is a small share of the rows.
    max_iter : int, default=3000
    random_state : int, default=0

    Attributes
    ----------
    classes_ : ndarray
        The classes, sorted.
    ratios_ : ndarray of shape (n_models, n_features)
        Each model's log-count ratios: one row (that of ``classes_[1]``) for two classes, else
        one per class.
    estimators_ : list of LogisticRegressionHead
        The two-class models, in the order of ``ratios_``.
    n_iter_ : ndarray of shape (n_models,)
        Each model's most iterations of its solver.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[2, 0, 1], [3, 0, 0], [0, 2, 1], [0, 3, 0], [0, 0, 3], [1, 0, 4]] * 4)
    >>> y = np.array(["a", "a", "b", "b", "c", "c"] * 4)
    >>> NBLogisticRegression(cv=2).fit(X, y).predict([[4, 0, 0], [0, 4, 0], [0, 0, 4]]).tolist()
    ['a', 'b', 'c']
    """

    _accepts = ("pooled",)  # a feature matrix, dense or sparse (`embedkit.base.FORMS`)
    _parameter_constraints: ClassVar[dict] = {  # the parameter table, checked at the start of fit
        "nb_alpha": [Interval(Real, 0, None, closed="neither")],
        "Cs": ["array-like"],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "scoring": [StrOptions(set(get_scorer_names())), callable],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": [SEED],
    }

    def __init__(self, nb_alpha: float = 1.0, Cs=(0.25, 1.0, 4.0, 16.0, 64.0), cv: int = 3,
                 scoring: str = "neg_log_loss", max_iter: int = 3000, random_state=0):
        store_params(self, locals())

    def _scaled(self, X, ratios):
        import scipy.sparse as sp

        return sp.csr_matrix(X.multiply(ratios[None, :])) if sp.issparse(X) else X * ratios[None, :]

    def fit(self, X, y):
        """The log-count ratios of every class, then each class's model on its own scaling."""
        import scipy.sparse as sp
        from sklearn.utils.validation import validate_data

        from ._targets import check_target_rows, encode_class_labels

        validate_params(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32))
        check_target_rows(y, X.shape[0], type(self).__name__)
        classes, codes = encode_class_labels(y, type(self).__name__)
        y = classes[codes]
        values = X.data if sp.issparse(X) else X
        if values.size and values.min() < 0:
            row = int(np.nonzero((X < 0).sum(axis=1))[0][0]) if not sp.issparse(X) else int(
                np.searchsorted(X.indptr, np.flatnonzero(X.data < 0)[0], side="right") - 1)
            raise ValueError(f"Negative values in data passed to NBLogisticRegression (row {row}): "
                             "it reads term counts or TF-IDF weights. Put it after a 'tfidf' or "
                             "'bow' representation; for dense vectors use the 'logreg' head.")
        self.classes_, self.ratios_ = log_count_ratios(X, y, self.nb_alpha, owner=type(self).__name__)
        targets = [y] if len(self.classes_) == 2 else [y == c for c in self.classes_]
        self.estimators_ = [
            LogisticRegressionHead(Cs=self.Cs, cv=self.cv, scoring=self.scoring, scale=False,
                                   max_iter=self.max_iter, random_state=self.random_state
                                   ).fit(self._scaled(X, r), t)
            for r, t in zip(self.ratios_, targets, strict=True)]
        self.n_iter_ = np.asarray([int(m.n_iter_.max()) for m in self.estimators_])
        return self

    def _positive(self, X) -> np.ndarray:
        """Each model's probability of its class (of ``classes_[1]`` for two classes)."""
        from sklearn.utils.validation import validate_data

        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32), reset=False,
                          ensure_min_samples=0)
        if X.shape[0] == 0:
            return np.zeros((0, len(self.estimators_)))
        return np.column_stack([m.predict_proba(self._scaled(X, r))[:, 1]
                                for m, r in zip(self.estimators_, self.ratios_, strict=True)])

    def predict_proba(self, X):
        """Class probabilities, columns ordered as ``classes_``."""
        check_is_fitted(self)
        p = self._positive(X)
        if len(self.classes_) == 2:
            return np.column_stack([1 - p[:, 0], p[:, 0]])
        total = p.sum(axis=1, keepdims=True)
        return np.where(total > 0, p / np.where(total > 0, total, 1), 1 / len(self.classes_))

    def predict_log_proba(self, X):
        """Logarithm of `predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """The most probable class."""
        proba = self.predict_proba(X)
        return self.classes_[proba.argmax(axis=1)] if len(proba) else self.classes_[:0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags
