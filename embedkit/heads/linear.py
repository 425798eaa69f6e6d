"""The registry's default ``logreg`` head: logistic regression with its strength, and the
scaling of dense input, chosen by inner cross-validation."""

from __future__ import annotations

import functools
from numbers import Integral
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import get_scorer_names
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._params import SEED, THRESHOLD, validate_params
from ..base import CheckedKeywords, store_params

__all__ = ["LogisticRegressionHead"]


class LogisticRegressionHead(CheckedKeywords, ClassifierMixin, BaseEstimator):
    """Logistic regression whose strength, and whether dense input is standardised, are chosen
    by inner cross-validation: the registry's ``logreg`` head.

    Why not ``StandardScaler + LogisticRegression`` (the head before): scaling sparse TF-IDF
    columns to unit variance blows up rare terms, and a fixed ``C=1`` over-regularises TF-IDF.
    So sparse input is never scaled; dense input is fitted both as it is and standardised (then
    divided by the square root of its dimension, so a row has about unit norm and one grid of
    ``Cs`` suits both), and the candidate with the better inner cross-validation score is kept:
    scaling is used where it helps (vectors trained on a small corpus, with small, uneven norms)
    and not elsewhere. Each candidate is a `sklearn.linear_model.LogisticRegressionCV` (a
    warm-started path over ``Cs``, L2 penalty, lbfgs, log-loss).

    `pipelines/benchmarks/head_defaults.py` measures this head against plain
    ``LogisticRegression`` and the alternatives above on the accuracy suite's splits; its figures
    are in ``pipelines/benchmarks/results/head_defaults.md``.

    Parameters
    ----------
    Cs : sequence of float, default=(0.01, 0.0316, 0.1, 0.316, 1, 3.16, 10, 31.6, 100)
        Inverse regularisation strengths tried: half-decade steps. With a decade grid (0.01,
        0.1, 1, 10, 100) the log-loss choice jumps from 1 to 10 where the optimum lies between,
        and C=10 over-fits short texts.
    cv : int, default=3
        Inner stratified folds.
    scoring : str, default="neg_log_loss"
        What the inner cross-validation maximises (log-loss is smoother than accuracy on small
        folds).
    scale : {"auto", True, False}, default="auto"
        Standardise dense input: chosen by the inner cross-validation, always, or never.
        Sparse input is never scaled.
    max_iter : int, default=3000
    solver : {"auto", "lbfgs", "saga", "newton-cg"}, default="auto"
        The optimiser of every fit. "auto": SAGA on sparse rows of at most unit norm (TF-IDF's),
        lbfgs on anything else (dense vectors, NBSVM's ratio-scaled rows, on which SAGA's step,
        set by the largest row, is small). Both minimise the same loss and penalty (the model
        is the same up to their tolerance); on TF-IDF a pass of SAGA costs what the matrix
        holds, where lbfgs pays for every coefficient, terms times classes, at each of its
        hundreds of steps (`pipelines/benchmarks/bench_linear.py` measures both).
    random_state : int, default=0
        Seeds SAGA's order of the rows (lbfgs draws nothing), so a fit is reproducible.
    class_weight : dict, "balanced" or None, default=None
        A dict applies to single-label targets; with multi-label targets "balanced" balances
        each label's own two-class problem.
    threshold : float in (0, 1) or "tune", default="tune"
        Multi-label targets only: a label is predicted where its probability exceeds this.
        "tune" refits each label's model at its chosen C on the inner folds and keeps the value
        among 0.05, 0.10, ..., 0.95 that maximises micro-F1 of the out-of-fold probabilities
        (`embedkit.data.targets.tune_threshold`). Rare labels are why it is the default: a
        fixed 0.5 predicts almost none of a rare label.

    Attributes
    ----------
    classes_ : ndarray
        The classes; for multi-label targets the label names of a list of label lists, or
        ``arange(n_labels)`` for an indicator matrix.
    multilabel_ : bool
        Whether ``y`` was multi-label: a 0/1 indicator matrix or a list of label lists
        (scikit-learn's conventions, `embedkit.heads._targets.encode_targets`). Then each label is
        its own two-class problem (scikit-learn's `OneVsRestClassifier` around the
        cross-validated model), ``predict_proba`` gives each label's probability and
        ``predict`` the int 0/1 indicator matrix.
    scaled_ : bool
        Whether the kept model reads standardised input.
    model_ : LogisticRegressionCV or OneVsRestClassifier
        The refitted model (``model_.C_`` is the chosen C; per label in
        ``model_.estimators_`` for multi-label targets).
    cv_scores_ : dict
        Best mean inner score of each candidate (``{"raw": ..., "scaled": ...}``; averaged over
        the labels for multi-label targets).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(60, 5)); y = (X[:, 0] > 0).astype(int)
    >>> LogisticRegressionHead().fit(X, y).score(X, y) > 0.9
    True
    """

    _accepts = ("pooled",)  # a feature matrix, dense or sparse (`embedkit.base.FORMS`)
    _parameter_constraints: ClassVar[dict] = {  # the parameter table, checked at the start of fit
        "Cs": ["array-like"],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "scoring": [StrOptions(set(get_scorer_names())), callable],
        "scale": [StrOptions({"auto"}), "boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "solver": [StrOptions({"auto", "lbfgs", "saga", "newton-cg"})],
        "random_state": [SEED],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "threshold": THRESHOLD,
    }

    def __init__(self, Cs=(0.01, 0.0316, 0.1, 0.316, 1.0, 3.16, 10.0, 31.6, 100.0), cv: int = 3,
                 scoring: str = "neg_log_loss", scale="auto", max_iter: int = 3000,
                 solver: str = "auto", random_state=0, class_weight=None, threshold="tune"):
        store_params(self, locals())

    def _solver(self, X) -> str:
        """``solver``; "auto": SAGA on sparse rows of at most unit norm (TF-IDF's), else lbfgs."""
        import scipy.sparse as sp

        if self.solver != "auto":
            return self.solver
        # SAGA's step is the inverse of the largest row's squared norm: on rows scaled past unit
        # norm (NBSVM's ratios) it creeps, and lbfgs is the faster there
        unit = sp.issparse(X) and X.shape[0] > 0 and X.multiply(X).sum(axis=1).max() <= 1.0 + 1e-6
        return "saga" if unit else "lbfgs"

    def _model(self, two_classes: bool, solver: str):
        from sklearn.linear_model import LogisticRegressionCV
        from sklearn.metrics import get_scorer

        scoring = self.scoring
        if scoring == "neg_log_loss":  # the default: one array operation per fold and C
            scoring = _neg_log_loss
        elif two_classes and isinstance(scoring, str) and "pos_label" in getattr(
                get_scorer(scoring), "_kwargs", {}):
            # scikit-learn 1.9's LogisticRegressionCV rebuilds such a scorer (f1_macro, ...) on
            # two classes with pos_label given twice, a TypeError; a plain callable is not rebuilt
            scoring = functools.partial(_score, get_scorer(scoring))
        return LogisticRegressionCV(Cs=list(self.Cs), cv=self.cv, scoring=scoring,
                                    l1_ratios=(0.0,), max_iter=self.max_iter, solver=solver,
                                    random_state=self.random_state,
                                    class_weight=self.class_weight, use_legacy_attributes=False)

    def _standardise(self, X):
        return (X - self.mean_) / self.scale_

    def fit(self, X, y):
        """Fit each candidate (raw, standardised) with an inner CV over ``Cs``; keep the best."""
        import scipy.sparse as sp
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.utils.validation import validate_data

        from ._targets import check_target_rows, encode_targets

        validate_params(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32))
        check_target_rows(y, X.shape[0], type(self).__name__)
        classes, encoded, self.multilabel_ = encode_targets(y, type(self).__name__)
        if self.multilabel_:
            if isinstance(self.class_weight, dict):
                raise ValueError("LogisticRegressionHead(class_weight={...}): a dict of class "
                                 "weights applies to single-label targets; y is multi-label. Use "
                                 "class_weight='balanced' (per label) or None.")
            y = encoded.astype(np.int64)
        else:
            y = classes[encoded]
        candidates = [False] if sp.issparse(X) else {"auto": [False, True], True: [True],
                                                    False: [False]}[self.scale]
        if True in candidates:
            std = X.std(axis=0)
            self.mean_ = X.mean(axis=0)
            self.scale_ = np.where(std > 0, std, 1.0) * np.sqrt(X.shape[1])
        fitted = {}
        for scaled in candidates:
            model = self._model(self.multilabel_ or len(classes) == 2, self._solver(X))
            if self.multilabel_:  # scikit-learn's multi-label wrapper: one model per label
                model = OneVsRestClassifier(model)
            model.fit(self._standardise(X) if scaled else X, y)
            per_label = model.estimators_ if self.multilabel_ else [model]
            for m in per_label + ([model.estimator] if self.multilabel_ else []):
                m.scoring = self.scoring  # the scorer is used by fit only; the saved model names it
            score = np.mean([m.scores_.mean(axis=0).max() for m in per_label])
            fitted[scaled] = (model, float(score))
        self.scaled_ = max(fitted, key=lambda c: (fitted[c][1], not c))  # ties: no scaling
        self.model_ = fitted[self.scaled_][0]
        self.cv_scores_ = {("scaled" if c else "raw"): score for c, (_, score) in fitted.items()}
        per_label = self.model_.estimators_ if self.multilabel_ else [self.model_]
        self.n_iter_ = np.asarray([int(np.max(m.n_iter_)) for m in per_label])
        self.classes_ = classes if self.multilabel_ else self.model_.classes_
        if self.multilabel_:
            self.threshold_ = (self._out_of_fold_threshold(X, y) if self.threshold == "tune"
                               else float(self.threshold))
        return self

    def _out_of_fold_threshold(self, X, y: np.ndarray) -> float:
        """`tune_threshold` on out-of-fold probabilities: each label's model refitted at its
        chosen C on the inner folds (the folds LogisticRegressionCV used)."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold, cross_val_predict

        from ..data.targets import tune_threshold

        X = self._standardise(X) if self.scaled_ else X
        proba = [cross_val_predict(
            LogisticRegression(C=float(np.ravel(model.C_)[0]), max_iter=self.max_iter,
                               solver=self._solver(X), random_state=self.random_state,
                               class_weight=self.class_weight),
            X, y[:, j], cv=StratifiedKFold(self.cv), method="predict_proba")[:, 1]
            for j, model in enumerate(self.model_.estimators_)]
        return tune_threshold(np.column_stack(proba), y)

    def _input(self, X):
        from sklearn.utils.validation import validate_data

        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32), reset=False,
                          ensure_min_samples=0)
        return self._standardise(X) if self.scaled_ else X

    def _apply(self, method: str, X, width: int | None):
        """``model_.<method>`` of the validated input; no rows give no outputs."""
        X = self._input(X)
        if X.shape[0] == 0:  # scikit-learn's linear models refuse an empty batch
            return np.zeros((0,) if width is None else (0, width))
        return getattr(self.model_, method)(X)

    def decision_function(self, X):
        """Decision values of the kept model (one column per class beyond two, as scikit-learn)."""
        check_is_fitted(self)
        n = len(self.classes_)
        return self._apply("decision_function", X, None if n == 2 and not self.multilabel_ else n)

    def predict(self, X):
        """The most probable class; for multi-label targets the 0/1 indicator matrix of the
        labels whose probability exceeds ``threshold_``."""
        check_is_fitted(self)
        if self.multilabel_:
            from ..data.targets import multilabel_decisions

            return multilabel_decisions(self.predict_proba(X), self.threshold_)
        out = self._apply("predict", X, None)
        return out.astype(self.classes_.dtype) if len(out) == 0 else out

    def predict_proba(self, X):
        """Class probabilities, columns ordered as ``classes_`` (each label's own for
        multi-label targets)."""
        check_is_fitted(self)
        return self._apply("predict_proba", X, len(self.classes_))

    def predict_log_proba(self, X):
        """Logarithm of `predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        tags.input_tags.sparse = True
        return tags


def _score(scorer, estimator, X, y) -> float:
    return scorer(estimator, X, y)


def _neg_log_loss(estimator, X, y, sample_weight=None) -> float:
    """scikit-learn's ``neg_log_loss`` scorer on a fitted ``estimator`` (its value, clipping
    included), without the validation of labels and probabilities it repeats on each of the
    inner cross-validation's folds and ``Cs`` (most of a small fit's time)."""
    proba = estimator.predict_proba(X)
    eps = np.finfo(proba.dtype).eps
    right = np.clip(proba[np.arange(len(y)), np.searchsorted(estimator.classes_, y)], eps, 1 - eps)
    return float(np.average(np.log(right), weights=sample_weight))
