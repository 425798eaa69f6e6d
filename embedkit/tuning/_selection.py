"""Scoring stored validation probabilities, and the ensemble a budgeted search selects from them.

Every model of the search (`embedkit.tuning._engine`) keeps its probabilities on the one set of
validation rows (predicted numbers for a numeric target, one probability per label for label
sets); any scikit-learn scorer scores them through `Stored` (label sets: F1 at the threshold
that scores best, `label_set_score`; accuracy, the default, directly, to the same value without
the scorer's checks, since a selection scores thousands of mixtures), and the ensemble is
Caruana's greedy selection (with replacement) over them, its score cross-fitted: chosen on one
half of the validation rows and scored on the other, and back, so the selection does not
flatter it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

__all__ = ["fold_of", "LABEL_SET_SCORERS", "Stored", "aligned", "covering", "firsts_of", "label_set_score",
           "select", "strata", "stratified_halves", "stratified_order", "stratified_rows"]

#: the scorers of label sets the search decides by: scikit-learn's names, and the average of
#: F1 each takes (`embedkit.data.targets.threshold_scores`)
LABEL_SET_SCORERS = {"f1_micro": "micro", "f1_macro": "macro", "f1_samples": "samples"}


class Stored(ClassifierMixin, BaseEstimator):
    """A fitted-classifier stand-in that answers with stored probabilities (rows by index), so
    any scikit-learn scorer scores a set of validation probabilities."""

    def __init__(self, proba=None, labels=None):
        self.proba, self.labels = proba, labels

    @property
    def classes_(self):
        return self.labels

    def predict_proba(self, rows):
        return self.proba[np.asarray(rows)]

    def predict(self, rows):
        return self.labels[self.predict_proba(rows).argmax(axis=1)]

    def decision_function(self, rows):
        p = self.predict_proba(rows)
        return p[:, 1] if p.shape[1] == 2 else p


class StoredValues(RegressorMixin, BaseEstimator):
    """A fitted-regressor stand-in that answers with stored predictions (one column, rows by
    index), so any scikit-learn regression scorer scores a set of validation predictions."""

    def __init__(self, values=None):
        self.values = values

    def predict(self, rows):
        return self.values[np.asarray(rows), 0]


def label_set_score(scoring: str, proba: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """``(score, threshold)``: F1 (``scoring``, one of `LABEL_SET_SCORERS`) of label
    probabilities ``proba`` against the 0/1 matrix ``y`` at the threshold that scores best, and
    that threshold (the nearest 0.5 on a tie). Every model is scored at its own best threshold,
    the baselines too, and the pick predicts with the threshold chosen here."""
    from ..data.targets import THRESHOLDS, threshold_scores

    f1 = threshold_scores(proba, y, LABEL_SET_SCORERS[scoring])
    best = np.flatnonzero(f1 == f1.max())
    i = best[np.argmin(np.abs(THRESHOLDS[best] - 0.5))]
    return float(f1[i]), float(THRESHOLDS[i])


def score(scoring: str, proba: np.ndarray, y: np.ndarray, classes: np.ndarray | None) -> float:
    """``scoring``'s value for probabilities ``proba`` (columns in ``classes`` order) of ``y``;
    where ``classes`` is None (a numeric target), for predicted numbers (one column); where
    ``y`` is a 0/1 matrix (label sets), `label_set_score`."""
    from sklearn.metrics import get_scorer

    if np.ndim(y) == 2:
        return label_set_score(scoring, proba, y)[0]
    if scoring == "accuracy" and classes is not None:  # the default, scored thousands of times
        return float(np.mean(classes[proba.argmax(axis=1)] == y))  # by a selection: no checks
    stored = StoredValues(proba) if classes is None else Stored(proba, classes)
    return float(get_scorer(scoring)(stored, np.arange(len(y)), y))


def aligned(model, X, classes: np.ndarray | None) -> np.ndarray:
    """``model.predict_proba(X)`` with columns in ``classes`` order (a class the model never saw
    gets probability 0); where ``classes`` is None, ``model.predict(X)`` as one column."""
    from ..data.targets import in_classes

    if classes is None:
        return np.asarray(model.predict(X), dtype=np.float64).reshape(len(X), 1)
    return in_classes(model.predict_proba(X), np.asarray(model.classes_), classes)


def _greedy(probas: Sequence[np.ndarray], costs: Sequence[float], rows: np.ndarray, y, classes,
            scoring: str, rounds: int = 12, row_seconds: Sequence[float] | None = None,
            limit: float | None = None) -> dict[int, int]:
    """Caruana's selection on ``rows``: add (with replacement) the model that most improves the
    mean's score, the cheaper on a tie, never one that takes the members' summed
    ``row_seconds`` past ``limit``; stop when nothing improves it. ``{model index: count}``."""
    counts: dict[int, int] = {}
    total, best = None, -math.inf
    probas, truth = [p[rows] for p in probas], y[rows]  # sliced once, not in every trial
    for _ in range(rounds):
        n = sum(counts.values()) + 1
        spent = sum(row_seconds[i] for i in counts) if limit is not None else 0.0
        trial = [(score(scoring, (p if total is None else total + p) / n, truth, classes),
                  -costs[i], -i) for i, p in enumerate(probas)
                 if limit is None or i in counts or spent + row_seconds[i] <= limit]
        if not trial:
            break
        value, _, pick = max(trial)  # the first model on a tie of score and cost
        pick = -pick
        if value <= best:
            break
        best = value
        counts[pick] = counts.get(pick, 0) + 1
        total = probas[pick] if total is None else total + probas[pick]
    return counts


def select(probas: Sequence[np.ndarray], costs: Sequence[float], y: np.ndarray,
           classes: np.ndarray, scoring: str, seed: int, row_seconds: Sequence[float] | None = None,
           limit: float | None = None) -> tuple[dict[int, float], np.ndarray | None]:
    """The ensemble of the models whose validation probabilities are ``probas``: ``({index:
    weight}, its cross-fitted probabilities)``, weights summing to one, its members'
    ``row_seconds`` (seconds to predict a row) summing to at most ``limit`` where one is given;
    ``({}, None)`` when the selection keeps fewer than two models.

    The weights are selected on every validation row; the probabilities are not theirs: each
    half of the rows (stratified) gets the vote of the weights selected on the other half. A
    selection flatters the rows it was made on, so its score, its paired difference to another
    model and its calibration are all read from these, the same rows and the same
    probabilities."""
    within = {"row_seconds": row_seconds, "limit": limit}
    counts = _greedy(probas, costs, np.arange(len(y)), y, classes, scoring, **within)
    if len(counts) < 2:
        return {}, None
    crossed = np.empty_like(np.asarray(probas[0], dtype=np.float64))
    halves = stratified_halves(y, seed)
    for choose, judge in (halves, halves[::-1]):
        chosen = _greedy(probas, costs, choose, y, classes, scoring, **within)
        crossed[judge] = sum(w * probas[i][judge] for i, w in chosen.items()) / sum(chosen.values())
    total = sum(counts.values())
    return {i: n / total for i, n in counts.items()}, crossed


def fold_of(y: np.ndarray, folds: int, seed: int, stratify: bool = True) -> np.ndarray:
    """The fold (0 to ``folds - 1``) of each row, shuffled with ``seed``; stratified by class
    where ``stratify``, so each fold holds about its share of every class (a class of fewer rows
    than folds is in fewer folds)."""
    import warnings

    from sklearn.model_selection import KFold, StratifiedKFold

    rows = np.zeros(len(y), dtype=np.int64)
    splitter = (StratifiedKFold if stratify else KFold)(folds, shuffle=True, random_state=seed)
    with warnings.catch_warnings():  # "the least populated class has only 3 members": meant
        warnings.simplefilter("ignore", UserWarning)
        for fold, (_, held) in enumerate(splitter.split(np.zeros(len(y)), y if stratify else None)):
            rows[held] = fold
    return rows


def strata(y: np.ndarray) -> np.ndarray:
    """What the search stratifies by: the class of each row; for label sets (a 0/1 matrix) each
    row's rarest label (one past the last label for a row without any), so a label of a few
    documents is spread over the split and the subsamples as a class of a few would be."""
    if np.ndim(y) == 1:
        return y
    y = np.asarray(y, dtype=bool)
    counts = y.sum(axis=0)
    rarity = np.where(y, counts[None, :], np.iinfo(np.int64).max)
    return np.where(y.any(axis=1), rarity.argmin(axis=1), y.shape[1])


def covering(rows: np.ndarray, y: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``rows`` (sorted positions of ``y``) and, for label sets, the first row in ``order`` of
    each label none of them carries, so every model learns every label the training rows hold.
    A larger subsample's rows still hold a smaller one's: a label carried by the first ``m``
    rows of ``order`` is carried by the first ``m' > m``."""
    if np.ndim(y) == 1:
        return rows
    y = np.asarray(y, dtype=bool)
    missing = np.flatnonzero(~y[rows].any(axis=0) & y.any(axis=0))
    if not len(missing):
        return rows
    carries = y[order][:, missing]
    added = order[carries.argmax(axis=0)]
    return np.union1d(rows, added)


def stratified_order(y: np.ndarray, seed: int) -> np.ndarray:
    """Every position of ``y`` in an order whose every prefix is stratified, as near as whole rows
    allow: shuffled within each class (seeded), the classes interleaved in proportion. Its first
    ``m`` are the search's ``m`` training rows, so a model that grows keeps the rows it had."""
    rng = np.random.default_rng(seed)
    _, inverse, counts = np.unique(strata(y), return_inverse=True, return_counts=True)
    perm = rng.permutation(len(y))
    grouped = perm[np.argsort(inverse[perm], kind="stable")]  # by class, shuffled within
    rank = np.empty(len(y))
    rank[grouped] = np.arange(len(y)) - np.repeat(np.cumsum(counts) - counts, counts)
    key = (rank + rng.random(len(counts))[inverse]) / counts[inverse]
    return np.argsort(key, kind="stable")


def stratified_rows(y: np.ndarray, m: int, seed: int, order: np.ndarray | None = None,
                    firsts: np.ndarray | None = None) -> np.ndarray:
    """``m`` positions of ``y``, stratified by class, seeded, sorted: the first ``m`` of
    `stratified_order` (``order``, where it is known already); for label sets with a row of
    each label they lack (`covering`); for classes, given ``firsts`` (`firsts_of`), with the
    first row of each class whose first comes later than ``m`` (a model that never saw a class
    gives it no column). A larger ``m``'s rows still hold a smaller one's."""
    if m >= len(y):
        return np.arange(len(y))
    order = stratified_order(y, seed) if order is None else order
    rows = covering(np.sort(order[:m]), y, order)
    return rows if firsts is None else np.union1d(rows, order[firsts[firsts >= m]])


def firsts_of(y: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The position in ``order`` of each class's first row (classes of ``y``, one per row)."""
    return np.unique(y[order], return_index=True)[1]


def stratified_halves(y: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two halves of the positions of ``y``, stratified where every class has two rows."""
    from sklearn.model_selection import StratifiedKFold

    key = strata(y)
    if np.unique(key, return_counts=True)[1].min() >= 2:
        a, b = next(StratifiedKFold(2, shuffle=True, random_state=seed).split(key, key))
        return a, b
    order = np.random.default_rng(seed).permutation(len(y))  # a class with one validation row
    return np.sort(order[: len(y) // 2]), np.sort(order[len(y) // 2:])
