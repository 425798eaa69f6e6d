"""The pick of a budgeted search, by paired evidence on its one set of validation rows.

Every model of the search is scored on the same validation rows, so two models are compared row
by row: their difference, and that difference's standard error from the rows where they differ
(accuracy: each row is right or wrong; any other scorer: a paired bootstrap of the rows). The
better of the two five-line baselines is the pick (where labels are few, the best model of
the pairs measured best there, `embedkit.tuning._settings.FEW_LABEL_PAIRS`, where the scores
of a few tens of documents cannot tell models apart) until a model beats it
beyond that noise (`PICK_Z` standard errors); of those that do, the best-scoring one, unless one
within its noise predicts `PREDICT_RATIO` times faster: the cheaper of the close ones. One validation split of
2,000 rows tells apart differences of a point or two, not less; a model one point ahead on it
is as likely behind on new rows (issue 46: a pick 0.657 against the baseline's 0.647 on 2,000
rows lost by 0.9 points held out).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._selection import score
from ._settings import PICK_BOOTSTRAP, PICK_TOP, PICK_Z, PREDICT_RATIO

__all__ = ["Versus", "choose", "versus"]


class Versus:
    """Model ``a`` against model ``b`` on the same validation rows: ``difference`` (a's score
    minus b's), its standard error ``se``, and the rows only one of them got right (accuracy)."""

    def __init__(self, difference: float, se: float, only_a: int = -1, only_b: int = -1):
        self.difference, self.se, self.only_a, self.only_b = difference, se, only_a, only_b

    def beyond(self, z: float = PICK_Z) -> bool:
        """Whether a is ahead of b by more than ``z`` standard errors."""
        return self.difference > z * self.se and self.difference > 0

    def within(self, z: float = PICK_Z) -> bool:
        """Whether a is behind b by no more than ``z`` standard errors."""
        return self.difference >= -z * self.se


def _hits(proba: np.ndarray, y: np.ndarray, classes: np.ndarray) -> np.ndarray:
    return np.asarray(classes)[np.asarray(proba).argmax(axis=1)] == y


def versus(a, b, y: np.ndarray, classes: np.ndarray, scoring: str, seed: int = 0) -> Versus:
    """Paired evidence of candidate ``a`` against ``b`` (both scored, with ``proba``)."""
    if a is b:
        return Versus(0.0, 0.0, 0, 0)
    if scoring == "accuracy":
        d = _hits(a.proba, y, classes).astype(np.int8) - _hits(b.proba, y, classes)
        n = len(d)
        se = float(np.std(d, ddof=1) / math.sqrt(n)) if n > 1 else math.inf
        return Versus(float(d.mean()), se, int((d > 0).sum()), int((d < 0).sum()))
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(PICK_BOOTSTRAP):
        rows = rng.integers(0, len(y), len(y))
        diffs.append(score(scoring, a.proba[rows], y[rows], classes)
                     - score(scoring, b.proba[rows], y[rows], classes))
    return Versus(a.score - b.score, float(np.std(diffs, ddof=1)))


def _predict_cost(c) -> float:
    return c.row_seconds if not math.isnan(c.row_seconds) else math.inf


def choose(scored: Sequence, y: np.ndarray, classes: np.ndarray, scoring: str, seed: int = 0,
           standing: Sequence = ()):
    """The pick among the scored candidates (baselines among them): the best model of the
    ``standing`` pairs, else the better baseline, unless models beat it beyond their noise; then
    the best of those, or a close one that predicts `PREDICT_RATIO` times faster."""
    ranked = sorted(scored, key=lambda c: (-c.score, c.fit_seconds + _predict_cost(c)))
    stands = ([c for c in ranked if c.kind == "candidate" and c.pair in standing]
              or [c for c in ranked if c.kind == "baseline"])
    if not stands:
        return ranked[0]
    base = stands[0]
    ahead = [c for c in ranked[:PICK_TOP + 1] if c is not base
             and versus(c, base, y, classes, scoring, seed).beyond()]
    if not ahead:
        return base
    top = ahead[0]
    close = [c for c in ahead if c is top or versus(c, top, y, classes, scoring, seed).within()]
    cheapest = min(close, key=_predict_cost)
    return cheapest if _predict_cost(cheapest) * PREDICT_RATIO <= _predict_cost(top) else top
