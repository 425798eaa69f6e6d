"""What the schedule's side reads of a running search besides its data, its settings and its
pairs' costs: its time (`Time`) and what it has found (`Board`).

The engine (`embedkit.tuning._engine.Search`) owns one of each and records into them; the
schedule, its plans, the leaderboard and the finish read them (and a schedule marks the tiers it
reached). Nothing here runs a fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._budget import Clock
from . import _selection
from ._candidate import Candidate, Outcome, Plan
from ._pick import choose, versus

__all__ = ["Board", "Time"]


class Time:
    """The search's time: its ``clock`` (the budget, from the start) and what the finish keeps
    back now (``keep``, asked anew each time: it follows the leader)."""

    def __init__(self, clock: Clock, keep: Callable[[], float]):
        self.clock, self.keep = clock, keep

    @property
    def budget(self) -> float:
        return self.clock.budget

    def elapsed(self) -> float:
        return self.clock.elapsed()

    def stamp(self) -> str:
        return self.clock.stamp()

    def to_deadline(self) -> float:
        """Seconds to the budget's end (the finish's time included)."""
        return self.clock.left()

    def reserve(self) -> float:
        """Seconds the finish keeps back now (`embedkit.tuning._finish.Finish.reserve`)."""
        return self.keep()

    def left(self) -> float:
        """Seconds the search may still spend: to the deadline, less what the finish keeps back."""
        return self.clock.left() - self.keep()

    def budget_for(self, seconds: float) -> float:
        """The budget that would pay for ``seconds`` more from now: the time spent, those
        seconds, and what the finish keeps back."""
        return self.clock.elapsed() + seconds + self.keep()


class Board:
    """What the search has found and runs: every ``candidates`` (waiting, running, scored, left
    out, failed, and the ensemble of the scored), what is ``running`` on the lanes (an action:
    its future), the tiers reached, whether the ``filling`` has begun (every tier's defaults
    done: the schedule says so, `fill`; the finish then keeps more back), the seconds of the
    frozen encoders' passes, whether Ctrl-C ``interrupted`` it; the pick so far (`best`) and the
    paired evidence of two models (`versus`), both on the validation rows of ``data``, within
    the predict limit ``asked``."""

    def __init__(self, data, asked):
        self.data, self.asked = data, asked
        self.candidates: list[Candidate] = []
        self.running: dict[Any, Any] = {}
        self.tiers_reached: list[str] = []
        self.filling = False
        self.encoder_seconds, self.interrupted = math.nan, False
        self._pick: tuple[int, Candidate | None] = (-1, None)

    def scored(self) -> list[Candidate]:
        return [c for c in self.candidates if c.status == "scored"]

    def reached(self, tier: str) -> None:
        if tier not in self.tiers_reached:
            self.tiers_reached.append(tier)

    def fill(self, begun: bool) -> None:
        """Whether every tier's defaults are done (none waits or runs): the fill's phase."""
        self.filling = begun

    def versus(self, a: Candidate, b: Candidate):
        """Paired evidence of ``a`` against ``b`` on the validation rows (`embedkit.tuning._pick`)."""
        d = self.data
        return versus(a, b, d.y_valid, d.classes, d.scoring, d.seed)

    def best_or_none(self) -> Candidate | None:
        return self.best() if any(c.status == "scored" for c in self.candidates) else None

    def best(self) -> Candidate:
        """The pick so far (`embedkit.tuning._pick.choose`): the better baseline (or the standing
        pair's best model), unless models beat it beyond their noise on the validation rows."""
        scored = self.scored()
        if self._pick[0] != len(scored) or self._pick[1] not in scored:
            within = [c for c in scored if self.within_limit(c)]
            d = self.data
            self._pick = (len(scored), choose(within, d.y_valid, d.classes, d.scoring, d.seed,
                                              self.asked.standing) if within else
                          min(scored, key=lambda c: (c.row_seconds, -c.score)))
        return self._pick[1]

    def within_limit(self, c: Candidate) -> bool:
        """Whether ``c`` predicts within the predict limit (always, without one)."""
        return self.asked.predict_limit is None or c.row_seconds <= self.asked.predict_limit

    def over_limit(self, c: Candidate) -> str:
        return (f"over the predict limit: {1000 * c.row_seconds:.2f} ms a row, the limit "
                f"{1000 * self.asked.predict_limit:.2f} ms; not picked")

    def update_ensemble(self) -> None:
        """The ensemble of the scored models within the limit, selected anew
        (`embedkit.tuning._selection.select`), in place of the last one."""
        self.candidates = [c for c in self.candidates if c.kind != "ensemble"]
        scored = [c for c in self.scored() if self.within_limit(c)]
        if len(scored) < 2:
            return
        d = self.data
        weights, proba = _selection.select(
            [c.proba for c in scored], [c.fit_seconds for c in scored], d.y_valid, d.classes,
            d.scoring, d.seed, row_seconds=[c.row_seconds for c in scored],
            limit=self.asked.predict_limit)
        if not weights:
            return
        members = {scored[i]: w for i, w in weights.items()}
        self.candidates.append(Candidate(
            name=f"ensemble of {len(members)} models", tier="ensembles", kind="ensemble",
            task=d.task, plan=Plan(roles=d.roles), weights=members, outcome=Outcome(
                status="scored", score=d.score_proba(proba), proba=proba,  # cross-fitted
                note="; ".join(f"{c.label}: {w:.2f}" for c, w in members.items()),
                fit_seconds=sum(c.fit_seconds for c in members),
                predict_seconds=sum(c.predict_seconds for c in members),
                row_seconds=sum(c.row_seconds for c in members))))
        self.reached("ensembles")
