"""Linear models trained by stochastic gradient descent (scikit-learn's `SGDClassifier` and
`SGDRegressor`), whose cost grows gently with rows and classes: the registry's ``sgd`` head.

Where `LogisticRegressionHead` solves each model exactly (L-BFGS, every C of an inner
cross-validation), a few passes of SGD over the rows reach nearly the same model at a small
fraction of the cost once the rows number tens of thousands and the classes dozens. What the
head adds to scikit-learn's estimators:

* **its strength on its own evidence, cheaply**: a stratified held-out slice
  (``validation_fraction`` of the rows, at most `MAX_HELD_OUT`); ``alpha`` is chosen from
  ``alphas`` by the held-out log-loss of models fitted on at most ``selection_rows`` of the
  other rows, walking the grid from its middle towards lower losses and stopping at the first
  rise, so a choice costs a few small fits. The final model: where the choice saw every
  training row, one fit more on every row (the held-out ones too; cheap at that size); above
  ``selection_rows``, one fit on the training rows, the held-out ones left to fit the
  temperature on. Either way its ``alpha`` is scaled by ``(rows chosen on / rows fitted) **
  ALPHA_SCALING`` (a larger sample needs less regularisation per row);
* **probabilities for every loss**: the softmax of the decision values divided by one
  temperature fitted on the held-out rows (`embedkit.heads.calibration.fit_temperature`), so
  hinge and modified Huber give probabilities as log-loss does, never exactly 0 or 1 where the
  held-out rows do not justify it;
* **input on one scale**, the one SGD's learning rates assume: dense features are standardised
  (then divided by the square root of their number, so a row has about unit norm, as a TF-IDF
  row has); a sparse matrix is divided by one number, the root mean square of its rows' norms
  (1 for TF-IDF), so it stays sparse;
* **chunks**: `partial_fit` learns a stream: its first call fits as `fit` does on that chunk;
  each later chunk is first scored by the model as it stands (rows it has not learnt from: the
  temperature is refitted on them), then learnt in one SGD pass.

Label sets go through `embedkit.registry.for_task` (one model per label); a number is the
regressor's, `LinearSGDRegressor`.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._params import SEED, PositiveFloats, validate_params
from ..base import CheckedKeywords, store_params
from .calibration import fit_temperature, tempered

__all__ = ["ALPHAS", "ALPHA_SCALING", "MAX_HELD_OUT", "LinearSGDClassifier",
           "LinearSGDRegressor"]

#: the held-out slice that chooses alpha and the temperature holds at most this many rows: on
#: 94,000 glosses of 45 classes, 5,000 rows measure a log-loss to about 1%, and every row more
#: held out is a row the final model does not learn from
MAX_HELD_OUT = 5000
#: the grid of ``alphas``: half-decades from 1e-7 to 1e-3 (the best on TF-IDF rows lies between
#: 1e-6, log-loss on 90,000 glosses, and 3e-4, modified Huber on 5,000 questions)
ALPHAS = (1e-7, 3e-7, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3)
#: alpha chosen on a subsample of ``m`` rows is fitted on ``n`` rows as ``alpha * (m / n) **
#: ALPHA_SCALING``: the regularisation a linear model needs per row falls as its rows grow
ALPHA_SCALING = 0.5


#: the parameters both heads take (the classifier adds its losses and ``n_jobs``)
_COMMON = {
    "penalty": [StrOptions({"l2", "l1", "elasticnet"})],
    "alpha": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    "alphas": [PositiveFloats()],
    "l1_ratio": [Interval(Real, 0, 1, closed="both")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left"), None],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "selection_rows": [Interval(Integral, 2, None, closed="left")],
    "average": ["boolean"],
    "random_state": [SEED],
}


def _stratified(groups: np.ndarray, share: float, low: int, keep: int, rng) -> np.ndarray:
    """Row indices drawn from each group (class) in proportion ``share``, at least ``low`` and
    leaving at least ``keep`` of the group undrawn."""
    chosen = []
    for g in np.unique(groups):
        rows = rng.permutation(np.flatnonzero(groups == g))
        k = int(min(max(round(share * len(rows)), low), len(rows) - keep))
        chosen.append(rows[:max(k, 0)])
    return np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, np.int64)


def _largest_squared_norm(X) -> float:
    """The largest squared norm of a row, at least 1."""
    squares = X.multiply(X).sum(axis=1) if sp.issparse(X) else np.einsum("ij,ij->i", X, X)
    largest = float(np.max(squares)) if X.shape[0] else 1.0
    return largest if np.isfinite(largest) and largest > 1 else 1.0


class _LinearSGD(CheckedKeywords, BaseEstimator):
    """What the classifier and the regressor share: input, the held-out slice, the choice of
    alpha, the final fit and the chunks. A subclass says how a model is built and scored."""

    _accepts = ("pooled",)  # a feature matrix, dense or sparse (`embedkit.base.FORMS`)

    # -- input --------------------------------------------------------------------------------
    def _input(self, X, reset: bool):
        from sklearn.utils.validation import validate_data

        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32),
                          accept_large_sparse=False, reset=reset,
                          ensure_min_samples=1 if reset else 0)
        if reset and sp.issparse(X):  # one number for every row: the matrix stays sparse
            norm = float(np.sqrt(X.multiply(X).sum() / X.shape[0]))
            self.scale_, self.shift_ = norm if norm > 0 and np.isfinite(norm) else 1.0, 0.0
        elif reset:  # per-column scale first, so that huge values cannot overflow the variance
            X = np.asarray(X, dtype=np.float64)
            big = np.abs(X).max(axis=0)
            big = np.where(big > 0, big, 1.0)
            unit = X / big
            std = unit.std(axis=0)
            std = np.where(std > 0, std, 1.0) * np.sqrt(X.shape[1])
            self.scale_, self.shift_ = big * std, unit.mean(axis=0) / std
        if sp.issparse(X) and np.ndim(self.scale_) == 0:
            return X * (1.0 / self.scale_)
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.nan_to_num(X / self.scale_ - self.shift_, posinf=1e30, neginf=-1e30)

    def _sgd(self, alpha: float):
        raise NotImplementedError

    def _scored(self, model, X, y) -> tuple[float, float]:
        """``(loss, temperature)`` of ``model`` on held-out rows (lower is better)."""
        raise NotImplementedError

    def _learn(self, model, X, y, classes=None, passes: int = 0):
        """``model`` fitted on ``(X, y)`` (``passes`` 0), or taken ``passes`` SGD passes further
        (``classes``: every class of a stream, on a first chunk that lacks some). An overflow is
        said with its fix."""
        told = {} if classes is None else {"classes": classes}
        try:
            with warnings.catch_warnings():
                # a capped number of passes is the caller's choice, not news
                warnings.filterwarnings("ignore", message="Maximum number of iteration")
                if not passes:
                    model.fit(X, y)
                for _ in range(passes):
                    model.partial_fit(X, y, **told)
        except ValueError as err:
            if "under-/overflow" not in str(err):
                raise
            raise ValueError(f"{type(self).__name__}(alpha={model.alpha:.3g}): SGD diverged on "
                             "this input (a floating-point overflow); give features of a moderate "
                             "scale (e.g. StandardScaler before a dense matrix of raw numbers) or "
                             "a larger alpha.") from None
        model.__dict__.pop("_loss_function_", None)  # rebuilt by each fit; not a saved value
        return model

    # -- fit: held-out slice, alpha, final model ----------------------------------------------
    def _first_fit(self, X, y, groups, classes=None):
        """Fit on one batch of rows: ``y`` as the model reads it, ``groups`` the classes the
        held-out slice is stratified by (None for numbers), ``classes`` every class of a stream
        where this batch lacks some."""
        rng = np.random.default_rng(self.random_state)
        n = X.shape[0]
        strata = np.zeros(n, np.int64) if groups is None else groups
        share = min(self.validation_fraction, MAX_HELD_OUT / n)
        held = _stratified(strata, share, low=1, keep=1, rng=rng)
        train = np.setdiff1d(np.arange(n), held)
        every = 0 if classes is None else self.max_iter  # passes that know every class
        if len(held) == 0:  # no class has a row to spare: every row trains, at the grid's middle
            alphas = sorted(self.alphas)
            chosen = self.alpha if self.alpha != "auto" else alphas[len(alphas) // 2]
            self.model_ = self._learn(self._sgd(chosen), X, y, classes, every)
            self.alpha_, self.temperature_, self.validation_scores_ = float(chosen), 1.0, {}
            return self
        share = min(1.0, self.selection_rows / len(train))
        pick = train if share == 1.0 else train[_stratified(strata[train], share, low=1, keep=0,
                                                           rng=rng)]
        X_h, y_h = X[held], y[held]
        candidates = [self.alpha] if self.alpha != "auto" else sorted(self.alphas)
        found: dict[int, tuple] = {}

        def score(i: int) -> float:
            if i not in found:
                model = self._learn(self._sgd(candidates[i]), X[pick], y[pick])
                found[i] = (*self._scored(model, X_h, y_h), model)
            return found[i][0]

        at = len(candidates) // 2  # walk from the middle towards lower held-out losses
        score(at)
        while near := [j for j in (at - 1, at + 1) if 0 <= j < len(candidates)]:
            better = min(near, key=score)
            if score(better) >= score(at):
                break
            at = better
        self.validation_scores_ = {float(candidates[i]): v[0] for i, v in sorted(found.items())}
        _, self.temperature_, model = found[at]
        self.alpha_ = float(candidates[at])
        scaled = self.alpha == "auto"  # an alpha the user gave is used as given
        if len(pick) < len(train) or classes is not None:
            # fitted once on every training row, the temperature refitted on the held-out ones
            self.alpha_ *= (len(pick) / len(train)) ** ALPHA_SCALING if scaled else 1.0
            passes = int(np.max(model.n_iter_)) if classes is not None else 0
            model = self._learn(self._sgd(self.alpha_), X[train], y[train], classes, passes)
            self.temperature_ = self._scored(model, X_h, y_h)[1]
        else:  # chosen on every training row: one cheap fit more learns the held-out ones too
            self.alpha_ *= (len(train) / n) ** ALPHA_SCALING if scaled else 1.0
            model = self._learn(self._sgd(self.alpha_), X, y)
        self.model_ = model
        return self

    def _settle(self):
        self.n_iter_ = int(np.max(self.model_.n_iter_))
        return self

    # -- partial_fit --------------------------------------------------------------------------
    def _chunk_temperature(self, X, y) -> None:
        """A later chunk, scored before it is learnt: its rows are new to the model."""

    def _partial(self, X, y, first: bool, groups, classes=None):
        if first:
            return self._first_fit(X, y, groups, classes)
        self._chunk_temperature(X, y)
        self._learn(self.model_, X, y, passes=1)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class LinearSGDClassifier(ClassifierMixin, _LinearSGD):
    """A linear classifier trained by SGD, its strength chosen on a held-out slice and its
    probabilities fitted there: the registry's ``sgd`` head (see the module's description).

    Parameters
    ----------
    loss : {"log_loss", "modified_huber", "hinge"}, default="log_loss"
        scikit-learn's `SGDClassifier` losses of a linear model (the probabilities are the
        head's own for all three). Log-loss scored best on the sets the defaults were decided
        on; modified Huber is FLAML's pick on wordnet-glosses.
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
    alpha : float or "auto", default="auto"
        Regularisation strength; "auto" chooses it from ``alphas`` on the held-out slice.
    alphas : sequence of float, default=(1e-7, 3e-7, ..., 1e-3)
        The grid "auto" walks (`ALPHAS`).
    l1_ratio : float in [0, 1], default=0.15
        The L1 share of ``penalty="elasticnet"``.
    max_iter : int, default=1000
        Most passes over the rows per fit (SGD stops earlier when its loss stops improving by
        ``tol``).
    tol : float or None, default=1e-3
    validation_fraction : float in (0, 1), default=0.1
        Share of the rows held out (at most `MAX_HELD_OUT`), stratified by class.
    selection_rows : int, default=20000
        Most training rows of the models that choose alpha.
    average : bool, default=False
        Averaged SGD: the mean of the weights over the updates.
    n_jobs : int or None, default=None
        Classes fitted at once (one-versus-rest, threads).
    random_state : int, default=0

    Attributes
    ----------
    classes_ : ndarray
    alpha_ : float
        The final model's strength.
    temperature_ : float
        The divisor of the decision values before the softmax.
    validation_scores_ : dict
        Held-out log-loss of each alpha tried.
    model_ : SGDClassifier
        The final model, fitted on the class indices ``0 .. n_classes - 1``.
    n_iter_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 5)); y = (X[:, 0] > 0).astype(int)
    >>> head = LinearSGDClassifier().fit(X, y)
    >>> head.score(X, y) > 0.9, bool(np.allclose(head.predict_proba(X).sum(axis=1), 1))
    (True, True)
    """

    _estimator_type = "classifier"
    _parameter_constraints: ClassVar[dict] = {
        "loss": [StrOptions({"modified_huber", "log_loss", "hinge"})], **_COMMON,
        "n_jobs": [None, Integral],
    }

    def __init__(self, loss: str = "log_loss", penalty: str = "l2", alpha="auto",
                 alphas=ALPHAS, l1_ratio: float = 0.15, max_iter: int = 1000, tol=1e-3,
                 validation_fraction: float = 0.1, selection_rows: int = 20000,
                 average: bool = False, n_jobs=None, random_state: int = 0):
        store_params(self, locals())

    def _sgd(self, alpha: float):
        from sklearn.linear_model import SGDClassifier

        return SGDClassifier(loss=self.loss, penalty=self.penalty, alpha=alpha,
                             l1_ratio=self.l1_ratio, max_iter=self.max_iter, tol=self.tol,
                             average=self.average, n_jobs=self.n_jobs,
                             random_state=self.random_state)

    def _scored(self, model, X, y):
        columns = np.searchsorted(model.classes_, y)  # a chunk may lack classes of the stream
        scores = model.decision_function(X)
        t = fit_temperature(scores, columns)
        p = tempered(scores, t)
        return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), columns], 1e-15, 1)))), t

    def _codes(self, y, n_rows: int, reset: bool, classes=None) -> np.ndarray:
        from ._targets import check_target_rows, encode_class_labels, encode_targets

        name = type(self).__name__
        check_target_rows(y, n_rows, name)
        if reset:
            if encode_targets(y, name)[2]:
                raise ValueError(f"{name} learns one class per row; y holds label sets. Use "
                                 f"embedkit.registry.for_task({name}(), 'multilabel'): one "
                                 "model per label.")
            labels, codes = encode_class_labels(y, name)
            if classes is not None:
                every = np.unique(np.asarray(classes))
                missing = ~np.isin(labels, every)
                if missing.any():
                    raise ValueError(f"y holds {list(labels[missing])}, which classes= does not "
                                     "list; name every class of the stream.")
                labels, codes = every, np.searchsorted(every, labels)[codes]
            self.classes_ = labels
            return codes
        labels = np.asarray(y).ravel()
        at = np.clip(np.searchsorted(self.classes_, labels), 0, len(self.classes_) - 1)
        unknown = self.classes_[at] != labels
        if unknown.any():
            raise ValueError(f"{name}.partial_fit: y holds {sorted(set(labels[unknown].tolist()))} "
                             f"on rows {np.flatnonzero(unknown)[:5].tolist()}, not among the "
                             f"classes of the first call ({self.classes_.tolist()}); pass classes= "
                             "naming every class on the first call.")
        return at

    def fit(self, X, y):
        """Hold out a slice, choose alpha and the temperature on it, fit the final model."""
        validate_params(self)
        for name in ("model_", "scale_", "shift_"):
            self.__dict__.pop(name, None)
        X = self._input(X, reset=True)
        codes = self._codes(y, X.shape[0], reset=True)
        return self._first_fit(X, codes, codes)._settle()

    def partial_fit(self, X, y, classes=None):
        """Learn one chunk: the first call fits as `fit` does (``classes`` lists every class of
        the stream where this chunk lacks some); later chunks are scored, then learnt in one
        pass."""
        first = not hasattr(self, "model_")
        if first:
            validate_params(self)
        X = self._input(X, reset=first)
        codes = self._codes(y, X.shape[0], reset=first, classes=classes)
        every = np.arange(len(self.classes_))
        lacks = first and len(np.unique(codes)) < len(every)
        return self._partial(X, codes, first, codes, every if lacks else None)._settle()

    def _chunk_temperature(self, X, y):
        self.temperature_ = fit_temperature(self.model_.decision_function(X), y)

    def decision_function(self, X):
        """Decision values of the final model (one column per class beyond two)."""
        check_is_fitted(self)
        X = self._input(X, reset=False)
        n = len(self.classes_)
        if X.shape[0] == 0:
            return np.zeros((0,) if n == 2 else (0, n))
        with np.errstate(over="ignore", invalid="ignore"):
            return np.nan_to_num(self.model_.decision_function(X), posinf=1e30, neginf=-1e30)

    def predict_proba(self, X):
        """Softmax of the decision values over the fitted temperature, columns as ``classes_``."""
        scores = self.decision_function(X)
        return tempered(scores, self.temperature_) if len(scores) else np.zeros((0, len(self.classes_)))

    def predict_log_proba(self, X):
        """Logarithm of `predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """The class of the highest decision value (the most probable)."""
        scores = self.decision_function(X)
        best = (scores > 0).astype(np.int64) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[best]


class LinearSGDRegressor(RegressorMixin, _LinearSGD):
    """A linear regressor trained by SGD (scikit-learn's `SGDRegressor`) on the standardised
    target, its strength chosen by the held-out mean squared error: the ``sgd`` head's form for
    a number (`embedkit.registry.for_task`). Parameters as `LinearSGDClassifier`, with the
    regression losses and no ``n_jobs``.

    Parameters
    ----------
    loss : {"squared_error", "huber", "epsilon_insensitive"}, default="squared_error"

    Attributes
    ----------
    alpha_ : float
    y_mean_, y_scale_ : float
        The target's mean and standard deviation on the first fit: the model learns
        ``(y - y_mean_) / y_scale_``.
    validation_scores_ : dict
        Held-out mean squared error (of the standardised target) of each alpha tried.
    model_ : SGDRegressor
    n_iter_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(300, 4)); y = 3 * X[:, 0] - X[:, 1] + 10
    >>> LinearSGDRegressor().fit(X, y).score(X, y) > 0.95
    True
    """

    _estimator_type = "regressor"  # what embedkit's suites and older scikit-learn read
    _parameter_constraints: ClassVar[dict] = {
        "loss": [StrOptions({"squared_error", "huber", "epsilon_insensitive"})], **_COMMON,
    }

    def __init__(self, loss: str = "squared_error", penalty: str = "l2", alpha="auto",
                 alphas=ALPHAS, l1_ratio: float = 0.15, max_iter: int = 1000, tol=1e-3,
                 validation_fraction: float = 0.1, selection_rows: int = 20000,
                 average: bool = False, random_state: int = 0):
        store_params(self, locals())

    def _sgd(self, alpha: float):
        from sklearn.linear_model import SGDRegressor

        # a step of 0.1 on rows of unit norm (TF-IDF's; the head scales others to about that),
        # cut by 5 where an epoch stops improving: scikit-learn's default (0.01, shrinking with
        # every step) left R² at half of Ridge's on TF-IDF rows of crowd sentiment scores. The
        # largest row sets the step, so that no row's squared error can make it diverge.
        return SGDRegressor(loss=self.loss, penalty=self.penalty, alpha=alpha,
                            l1_ratio=self.l1_ratio, max_iter=self.max_iter, tol=self.tol,
                            learning_rate="adaptive", eta0=0.1 / self.largest_row_,
                            average=self.average, random_state=self.random_state)

    def _scored(self, model, X, y):
        with np.errstate(over="ignore", invalid="ignore"):
            error = np.nan_to_num((model.predict(X) - y) ** 2, nan=np.inf)
        return float(np.mean(error)), 1.0

    def _target(self, y, n_rows: int, reset: bool) -> np.ndarray:
        from sklearn.utils.validation import column_or_1d

        from ._targets import check_target_rows, encode_regression_targets

        name = type(self).__name__
        check_target_rows(y, n_rows, name)
        values, _ = encode_regression_targets(y, name)
        if values.shape[1] != 1:
            raise ValueError(f"{name} predicts one number per row; y has {values.shape[1]} "
                             "columns. Fit one regressor per column.")
        values = column_or_1d(np.asarray(y, dtype=object).astype(np.float64), warn=True)
        if reset:
            std = float(values.std())
            self.y_mean_, self.y_scale_ = float(values.mean()), std if std > 0 else 1.0
        return (values - self.y_mean_) / self.y_scale_

    def fit(self, X, y):
        """Hold out a slice, choose alpha on it, fit the final model."""
        validate_params(self)
        for name in ("model_", "scale_", "shift_"):
            self.__dict__.pop(name, None)
        X = self._input(X, reset=True)
        self.largest_row_ = _largest_squared_norm(X)
        return self._first_fit(X, self._target(y, X.shape[0], reset=True), None)._settle()

    def partial_fit(self, X, y):
        """Learn one chunk: the first call fits as `fit` does; later ones make one pass."""
        first = not hasattr(self, "model_")
        if first:
            validate_params(self)
        X = self._input(X, reset=first)
        if first:
            self.largest_row_ = _largest_squared_norm(X)
        return self._partial(X, self._target(y, X.shape[0], reset=first), first, None)._settle()

    def predict(self, X):
        """Predicted numbers, on the target's own scale."""
        check_is_fitted(self)
        X = self._input(X, reset=False)
        if X.shape[0] == 0:
            return np.zeros(0)
        with np.errstate(over="ignore", invalid="ignore"):
            out = self.model_.predict(X) * self.y_scale_ + self.y_mean_
        return np.nan_to_num(out, posinf=np.finfo(np.float64).max, neginf=-np.finfo(np.float64).max)
