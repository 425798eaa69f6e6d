"""Temperature scaling: probabilities that mean what they say, fitted on rows the model did not
fit on. `fit_temperature` and `tempered` are the one mechanism, used by `TemperatureScaled` (a
fitted classifier or pipeline, calibrated afterwards) and by the linear SGD head (its decision
values made into probabilities, `embedkit.heads.sgd`).

Temperature scaling (Guo et al., 2017) divides a model's scores by one number ``T`` before the
softmax: ``T > 1`` softens over-confident probabilities, ``T < 1`` sharpens timid ones. ``T`` is
the value that minimises the log-loss on held-out rows; the order of the scores in each row is
unchanged, so the predicted class, and the accuracy, are the model's own.

One number sets how sure the model is on the whole, not how its sureness should bend: a linear
model on many classes whose held-out rows are right 60 times in 100 at 0.6 and 99 in 100 at 0.9
needs more than a scale. The top class's confidence can then be mapped as well (`fit_top_label`,
`top_mapped`: Platt scaling of the top class's log-odds against whether it was right, as in
top-label calibration, Gupta and Ramdas, 2022), the other classes rescaled to keep their ratios;
the map is monotone and the top class stays on top, so the decisions do not change either.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.validation import check_is_fitted

from ..base import CheckedKeywords, store_params

__all__ = ["EPS", "LOG_TEMPERATURE_BOUNDS", "TemperatureScaled", "cross_tempered",
           "fit_temperature", "fit_top_label", "tempered", "top_mapped"]

#: the temperatures searched: exp(-7) to exp(7), wide enough for decision values of any scale
LOG_TEMPERATURE_BOUNDS = (-7.0, 7.0)
#: probabilities are clipped to [EPS, 1] before their logarithm (a model may say exactly 0)
EPS = 1e-12


def _columns(scores) -> np.ndarray:
    """Scores as one column per class: a two-class decision value ``d`` becomes ``[-d/2, d/2]``
    (its softmax is the sigmoid of ``d``)."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.column_stack([-scores / 2, scores / 2]) if scores.ndim == 1 else scores


def tempered(scores, temperature: float, multilabel: bool = False) -> np.ndarray:
    """Probabilities of ``scores / temperature``: the softmax of each row (rows sum to one;
    1-D scores are a two-class decision value, giving two columns), or for label sets each
    score's sigmoid.

    Examples
    --------
    >>> tempered(np.array([[2.0, 0.0]]), 2.0).round(3).tolist()
    [[0.731, 0.269]]
    """
    from scipy.special import expit, softmax

    with np.errstate(over="ignore", invalid="ignore"):
        z = np.nan_to_num(_columns(scores) / temperature, nan=0.0, posinf=1e30, neginf=-1e30)
    return expit(z) if multilabel else softmax(z, axis=1)


def _nll(z: np.ndarray, y: np.ndarray, multilabel: bool, smooth: float) -> float:
    """Log-loss of the scores ``z`` against targets moved towards uniform by ``smooth``."""
    from scipy.special import logsumexp

    if multilabel:  # each (row, label) a two-class decision
        target = np.where(y > 0, 1.0 - smooth / 2, smooth / 2)
        return float(np.mean(np.logaddexp(0.0, z) - target * z))
    true = z[np.arange(len(z)), y]
    return float(np.mean(logsumexp(z, axis=1) - (1 - smooth) * true - smooth * z.mean(axis=1)))


def fit_temperature(scores, y, multilabel: bool = False) -> float:
    """The temperature ``T`` that minimises the log-loss of ``tempered(scores, T)`` against
    ``y`` (class indices into the columns; for label sets a 0/1 matrix of the scores' shape).

    As in Platt scaling, each row's target is moved towards uniform by ``k / (n + k)`` (``k``
    classes, or 2 for a label, ``n`` rows): a few held-out rows that happen to be all right
    cannot push the probabilities to exactly 0 and 1, and many rows are barely moved. The
    log-loss is convex in ``1 / T``; the minimum is searched (bounded Brent) over ``log T`` in
    `LOG_TEMPERATURE_BOUNDS`. No rows give ``T = 1``.

    Examples
    --------
    >>> scores = np.array([[4.0, 0.0], [4.0, 0.0], [0.0, 4.0], [4.0, 0.0]])
    >>> round(fit_temperature(scores, np.array([0, 1, 1, 0])), 2)  # one in four wrong: softened
    5.77
    """
    from scipy.optimize import minimize_scalar

    z = _columns(scores)
    y = np.asarray(y)
    if len(z) == 0:
        return 1.0
    if not multilabel:
        y = y.astype(np.int64)
    k = 2 if multilabel else z.shape[1]
    smooth = k / (len(z) + k)
    with np.errstate(over="ignore", invalid="ignore"):
        z = np.nan_to_num(z, nan=0.0, posinf=1e30, neginf=-1e30)
        found = minimize_scalar(lambda log_t: _nll(z / np.exp(log_t), y, multilabel, smooth),
                                bounds=LOG_TEMPERATURE_BOUNDS, method="bounded",
                                options={"xatol": 1e-4})
    return float(np.exp(found.x))


def fit_top_label(proba, y) -> tuple[float, float] | None:
    """The map of the top class's confidence that `top_mapped` applies: ``(a, b)`` such that
    the top class is right with probability ``sigmoid(a * logit(p_top) + b)``, fitted by
    log-loss on rows ``y`` (class indices into the columns), the targets moved towards the
    rows' mean rightness as `fit_temperature` moves them (a few rows cannot make it say 0 or
    1). None where it cannot be fitted (fewer than two rows, every top class right or every one
    wrong) or where it would not be increasing (``a <= 0``).

    Examples
    --------
    >>> proba = np.array([[0.6, 0.4]] * 10 + [[0.9, 0.1]] * 10)  # right 5 and 10 times in 10
    >>> y = np.array([0, 1] * 5 + [0] * 10)
    >>> a, b = fit_top_label(proba, y)
    >>> top_mapped(proba[[0, 10]], (a, b))[:, 0].round(2).tolist()
    [0.52, 0.98]
    """
    from scipy.optimize import minimize
    from scipy.special import logit

    proba, y = np.asarray(proba, dtype=np.float64), np.asarray(y).astype(np.int64)
    if len(proba) < 2:
        return None
    right = (proba.argmax(axis=1) == y).astype(np.float64)
    if right.min() == right.max():
        return None
    x = logit(np.clip(proba.max(axis=1), 1e-6, 1 - 1e-6))
    smooth = 2 / (len(x) + 2)
    target = (1 - smooth) * right + smooth * right.mean()

    def nll(ab):
        z = ab[0] * x + ab[1]
        return float(np.mean(np.logaddexp(0.0, z) - target * z))

    a, b = minimize(nll, np.array([1.0, 0.0]), method="BFGS").x
    return (float(a), float(b)) if a > 0 and np.isfinite([a, b]).all() else None


def top_mapped(proba, top: tuple[float, float] | None) -> np.ndarray:
    """``proba`` with each row's top probability mapped by `fit_top_label`'s ``(a, b)`` and the
    other classes rescaled to share the rest in their own ratios (equally where they had
    none); the top class is kept on top (its mapped probability raised where needed), so every
    row's decision is unchanged. ``top`` None: ``proba`` as it is."""
    from scipy.special import expit, logit

    proba = np.asarray(proba, dtype=np.float64)
    if top is None or len(proba) == 0:
        return proba
    rows, k = np.arange(len(proba)), proba.argmax(axis=1)
    p = proba[rows, k]
    mapped = expit(top[0] * logit(np.clip(p, 1e-6, 1 - 1e-6)) + top[1])
    rest = proba.copy()
    rest[rows, k] = 0.0
    share = rest.sum(axis=1)
    rest = np.where(share[:, None] > 0, rest / np.where(share > 0, share, 1.0)[:, None],
                    1.0 / max(proba.shape[1] - 1, 1))
    rest[rows, k] = 0.0
    second = rest.max(axis=1)  # the top must stay >= (1 - mapped) * second
    mapped = np.clip(mapped, second / (1 + second) + 1e-9, 1.0)
    out = rest * (1 - mapped)[:, None]
    out[rows, k] = mapped
    return out


def cross_tempered(proba, y, multilabel: bool = False, folds: int = 5,
                   random_state: int = 0, top_label: bool = False) -> np.ndarray:
    """``proba`` tempered fold by fold: each fold's rows at the temperature `fit_temperature`
    finds on the other folds' rows (``y`` as `fit_temperature` takes it, the columns of ``proba``
    its classes), and with ``top_label`` their top class's confidence mapped as those rows
    tempered say (`fit_top_label`; not for label sets). A calibration fitted on some rows
    flatters their own log-loss, so only these probabilities say whether calibrating will help
    on rows it was not fitted on: their log-loss is below that of ``proba`` where it does.
    Fewer than two rows a fold: ``proba``.

    Examples
    --------
    >>> from embedkit.data.targets import log_loss
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> said = np.where(rng.random(400) < 0.8, y, 1 - y)  # right four times in five, at 0.99
    >>> proba = np.column_stack([np.where(said == 0, 0.99, 0.01), np.where(said == 1, 0.99, 0.01)])
    >>> round(log_loss(y, proba), 2), round(log_loss(y, cross_tempered(proba, y)), 2)
    (0.93, 0.5)
    """
    from sklearn.model_selection import KFold

    proba, y = np.asarray(proba, dtype=np.float64), np.asarray(y)
    if len(proba) < 2 * folds:
        return proba
    scores, out = _log_scores(proba, multilabel), np.empty_like(proba)
    for fit_rows, rows in KFold(folds, shuffle=True, random_state=random_state).split(scores):
        t = fit_temperature(scores[fit_rows], y[fit_rows], multilabel)
        out[rows] = tempered(scores[rows], t, multilabel)
        if top_label and not multilabel:
            top = fit_top_label(tempered(scores[fit_rows], t), y[fit_rows])
            out[rows] = top_mapped(out[rows], top)
    return out


def _log_scores(proba: np.ndarray, multilabel: bool) -> np.ndarray:
    """The scores whose `tempered` form at ``T = 1`` is ``proba``: log-probabilities, or each
    label's log-odds."""
    p = np.clip(np.asarray(proba, dtype=np.float64), EPS, 1.0)
    if multilabel:
        return np.log(p) - np.log(np.clip(1.0 - p, EPS, 1.0))
    return np.log(p)


class TemperatureScaled(CheckedKeywords, MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """A fitted classifier (or a whole fitted pipeline) whose probabilities are divided, as
    log-probabilities, by one temperature fitted on rows it did not fit on (and, with
    ``top_label``, their top class's confidence then mapped as well).

    ``fit(X, y)`` does not refit ``estimator``: it reads its probabilities on the rows given and
    keeps the temperature that minimises their log-loss (`fit_temperature`); `predict_proba`
    applies it to the estimator's probabilities, and `predict` is the estimator's own, so every
    decision, and the accuracy, are unchanged. The fitted state is that one float (and the map's
    two), so a model folder (`embedkit.save`) keeps it as numbers beside the estimator.

    Two classes and more: ``softmax(log p / T)``. Label sets (the estimator gives each label's
    probability): ``sigmoid(logit p / T)`` with one temperature shared by every label, for two
    reasons: a rare label has too few positive rows among the held-out ones to fit a scale of
    its own, and one monotone map for every label keeps the order of all the label
    probabilities, so a global decision threshold picks the same labels before and after.

    Parameters
    ----------
    estimator : fitted classifier or Pipeline
        Anything with ``predict_proba``, ``predict`` and ``classes_``, already fitted on other
        rows.
    top_label : bool, default=False
        After the temperature, map the top class's confidence by a logistic curve of its
        log-odds fitted on the same rows (`fit_top_label`; the other classes keep their ratios,
        the top class stays on top): for a model whose sureness is off by more than a scale.
        Not for label sets.

    Attributes
    ----------
    temperature_ : float
        Above 1 where the estimator was over-confident on the held-out rows, below 1 where it
        was timid.
    multilabel_ : bool
        Whether ``y`` was a label set per row.
    top_ : tuple of two floats or None
        The top class's map ``(a, b)`` (`top_mapped`); None without ``top_label``, for label
        sets, or where the rows could not fit one.
    log_loss_before_, log_loss_after_ : float
        The log-loss of the held-out rows with the estimator's probabilities and with the
        calibrated ones; never higher after (where the fitted temperature would not lower it,
        ``T = 1`` is kept; where the top class's map would raise it, none is kept).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 20)); y = (X[:, 0] + rng.normal(size=600) > 0).astype(int)
    >>> model = LogisticRegression(C=100).fit(X[:100], y[:100])  # 20 columns, 100 rows: sure
    >>> calibrated = TemperatureScaled(model).fit(X[100:400], y[100:400])
    >>> round(calibrated.temperature_, 1), round(calibrated.log_loss_after_, 2)
    (4.7, 0.59)
    >>> bool((calibrated.predict(X[400:]) == model.predict(X[400:])).all())
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "estimator": [HasMethods(["predict_proba", "predict"]), None],
        "top_label": ["boolean"],
    }
    # what a model saved before the top class's map existed reads: no map
    top_label, top_ = False, None

    def __init__(self, estimator=None, top_label: bool = False):
        store_params(self, locals())

    @property
    def classes_(self):
        """The estimator's classes (or label names)."""
        return self.estimator.classes_

    def _target(self, y, n_rows: int) -> np.ndarray:
        """``y`` as class indices into ``classes_`` (or a 0/1 label matrix); unknown labels are
        named."""
        from ._targets import check_target_rows, encode_targets

        name = type(self).__name__
        check_target_rows(y, n_rows, name)
        if not isinstance(y, (list, tuple)) and np.ndim(y) == 2:  # a 0/1 matrix, as classes_
            matrix = np.asarray(y.toarray() if hasattr(y, "toarray") else y)
            if matrix.shape[1] != len(self.classes_):
                raise ValueError(f"{name}: y is a 0/1 matrix of {matrix.shape[1]} labels, the "
                                 f"estimator has {len(self.classes_)}; give one column per label "
                                 "of classes_, in its order.")
            self.multilabel_ = True
            return (matrix > 0).astype(np.float64)
        labels, encoded, self.multilabel_ = encode_targets(y, name)
        if self.multilabel_:
            if len(labels) != len(self.classes_) or not np.array_equal(
                    np.asarray(labels, dtype=object), np.asarray(self.classes_, dtype=object)):
                raise ValueError(f"{name}: y's labels {np.asarray(labels).tolist()} are not the "
                                 f"estimator's {np.asarray(self.classes_).tolist()}; calibrate on "
                                 "rows of the same labels.")
            return encoded
        classes = np.asarray(self.classes_)
        known = np.isin(labels, classes)
        if not known.all():
            raise ValueError(f"{name}: y holds {labels[~known].tolist()}, which the estimator never "
                             f"learnt (its classes are {list(classes)}); calibrate on rows of its "
                             "classes.")
        order = np.argsort(classes)
        return order[np.searchsorted(classes[order], labels)][encoded]

    def _check_estimator(self) -> None:
        if self.estimator is None:
            raise ValueError("TemperatureScaled(estimator=None): pass the fitted classifier or "
                             "pipeline to calibrate, e.g. TemperatureScaled(model).fit(X_held_out, "
                             "y_held_out).")

    @property
    def feature_names_in_(self):
        """The estimator's input columns (a model of a table reads them by name)."""
        return self.estimator.feature_names_in_

    def fit(self, X, y):
        """Fit the temperature on ``(X, y)``: rows the estimator did not fit on."""
        from sklearn.exceptions import NotFittedError

        from .._params import validate_params

        validate_params(self)
        self._check_estimator()
        try:
            check_is_fitted(self.estimator)
        except NotFittedError:
            raise ValueError(f"TemperatureScaled: the {type(self.estimator).__name__} is not "
                             "fitted; fit it on training rows first, then calibrate it on rows it "
                             "did not fit on.") from None
        return self.fit_held_out(self.estimator.predict_proba(X), y)

    def fit_held_out(self, proba, y):
        """Fit the temperature on probabilities already computed on held-out rows ``y``: the
        estimator's, or those of an earlier fit of the same model on fewer rows (`embedkit.tune`
        calibrates a pick refit on every document with the probabilities its fit on the
        training rows gave on the validation rows). The estimator is not called."""
        from ..data.targets import log_loss

        self._check_estimator()
        proba = np.asarray(proba, dtype=np.float64)
        target = self._target(y, len(proba))
        if proba.ndim != 2 or proba.shape[1] != len(self.classes_):
            raise ValueError(f"TemperatureScaled: {proba.shape} probabilities for "
                             f"{len(self.classes_)} classes; give one column per class, in the "
                             "order of the estimator's classes_.")
        scores = _log_scores(proba, self.multilabel_)
        self.temperature_ = fit_temperature(scores, target, self.multilabel_)
        labels = np.arange(proba.shape[1])
        self.log_loss_before_ = log_loss(target, proba, labels)
        self.log_loss_after_ = log_loss(target, tempered(scores, self.temperature_, self.multilabel_),
                                        labels)
        if self.log_loss_after_ > self.log_loss_before_:  # the search's end point missed T = 1
            self.temperature_, self.log_loss_after_ = 1.0, self.log_loss_before_
        self.top_ = None
        if self.top_label and not self.multilabel_:
            self.top_ = fit_top_label(tempered(scores, self.temperature_), target)
            mapped = log_loss(target, self._calibrated(proba), labels)
            if mapped > self.log_loss_after_:  # its smoothed targets missed the identity
                self.top_ = None
            self.log_loss_after_ = min(mapped, self.log_loss_after_)
        return self

    def _calibrated(self, proba: np.ndarray) -> np.ndarray:
        """``proba`` tempered, then its top class mapped where `top_` says how."""
        out = tempered(_log_scores(proba, self.multilabel_), self.temperature_, self.multilabel_)
        return top_mapped(out, self.top_)

    def predict_proba(self, X) -> np.ndarray:
        """The estimator's probabilities at the fitted temperature, columns as ``classes_``."""
        check_is_fitted(self, "temperature_")
        proba = np.asarray(self.estimator.predict_proba(X), dtype=np.float64)
        if len(proba) == 0:
            return proba
        return self._calibrated(proba)

    def predict(self, X):
        """The estimator's own predictions (a temperature changes no decision)."""
        check_is_fitted(self, "temperature_")
        return self.estimator.predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        tags.input_tags.sparse = True
        return tags
