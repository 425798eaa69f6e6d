"""What the search runs: a `Candidate` (a model to fit and score on the validation rows) or a
`Job` (work that scores nothing: an encoder's pass, a probe of a head's cost, a model's fetch).

A candidate is three things: what was asked for (its pair, its place in the search, the key it
was asked under: `Candidate.asked`), how it is to run (its `Plan`: rows, recipe, settings,
estimate, which planning alone replaces: `embedkit.tuning._plans.settle`) and what came of it
(its `Outcome`, which the engine alone records). Plan and outcome are frozen records, read
through the candidate (``c.rows``, ``c.score``), never assigned there; a change is a new record.
Candidates and jobs are what a schedule hands the engine (`embedkit.tuning._engine.Search.run`),
which runs them on a lane and tells the schedule what came of them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _selection

__all__ = ["PLANNED", "Again", "Candidate", "FoldsTooDear", "Job", "LeaveOut", "Outcome", "Plan",
           "build_pipeline", "describe", "fit_and_score", "settle"]


def describe(params: dict) -> str:
    """``a=1, b=2``: settings as the leaderboard prints them."""
    return ", ".join(f"{k.split('__', 1)[-1]}={v}" for k, v in params.items())


@dataclass(frozen=True, eq=False)
class Outcome:
    """What came of running a candidate, as the engine records it (`embedkit.tuning._engine.Search`,
    the one writer: a schedule decides, `LeaveOut` or `Again`, and the engine records). Each
    record is a new one: ``status`` (waiting, running, scored, failed, interrupted, left out),
    ``started`` (seconds into the search), the validation ``score``, the seconds of its ``fit``
    and of its predictions on the validation rows, ``row_seconds`` (seconds to predict one new
    document: those predictions a row, plus the pass of the frozen encoder whose cache it read;
    an ensemble, its members' sum), ``memory`` (bytes its fit grew the process by, on the cores;
    NaN elsewhere), the fitted ``model``, its validation ``proba``, its ``note``, and ``where``
    (the Dask worker that fitted it, on a cluster)."""

    status: str = "waiting"
    started: float = math.nan
    score: float = math.nan
    fit_seconds: float = math.nan
    predict_seconds: float = math.nan
    row_seconds: float = math.nan
    memory: float = math.nan
    model: Any = None
    proba: Any = None
    note: str = ""
    where: str = ""


@dataclass(frozen=True, eq=False)
class Plan:
    """How a candidate is to run, as planned (`embedkit.tuning._plans.settle` is the one writer,
    each plan a new record): the ``lane`` it runs on, the training ``rows`` (None: every row), a
    sized head's ``recipe`` and the other ``params`` (pipeline keys), the head's ``seed`` (for
    models whose seeds the finish averages), a table's column ``roles`` it reads through and the
    one column it reads ``alone`` where it leaves the others out; what it costs: the registry's
    ``prior`` (seconds on every row, before anything is measured), its ``estimate`` (seconds),
    ``extra_refit`` (seconds a refit on every document needs besides its fit scaled up: the
    encoder's pass over what its cache lacks), ``least`` (seconds of a sized head's cheapest
    recipe; None: its estimate); and of a sized recipe, the ``share`` of its head's own recipe's
    gain it keeps and why it reads fewer tokens than the documents need (``truncated``)."""

    lane: str = "cores"
    rows: Any = None
    recipe: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    seed: int | None = None
    roles: Any = None  # `embedkit.data.columns.ColumnRoles`
    alone: str = ""
    prior: float = 0.0
    estimate: float = math.nan
    extra_refit: float = 0.0
    least: float | None = None
    share: float = 1.0
    truncated: str = ""


@dataclass(eq=False)
class Candidate:
    """One model of the search: what was asked for (its pair, or a baseline's or an ensemble's
    ``name``, and its place in the search: these fields, which nothing changes once it is made),
    its `Plan` and its `Outcome`. Its identity as a model is its `key` (pair, settings, recipe,
    rows, seed, the one column it reads of a table where it leaves the others out), ``asked``
    the key it had before it was planned; ``label`` only displays them. ``grown_from`` is the
    smaller fit of the same model it grew from (the same settings on fewer rows or epochs). Plan
    and outcome fields read through the candidate (``c.rows``, ``c.score``) and cannot be
    assigned there."""

    representation: str = ""
    head: str = ""
    tier: str = ""
    kind: str = "candidate"  # candidate, baseline or ensemble
    variant_of: Candidate | None = None
    grown_from: Candidate | None = None
    name: str = ""  # a baseline's or an ensemble's own name
    factory: Callable[[], Any] | None = None  # a baseline's pipeline
    cache: Any = None
    encoder: str = ""  # the frozen encoder whose cached vectors it reads (a registry name)
    weights: dict = field(default_factory=dict)  # an ensemble's members -> weights
    task: str = "classification"  # what the target holds: its head as that task needs it
    #: how it is to run, planning's record (`Plan`)
    plan: Plan = field(default_factory=Plan)
    #: what came of it, the engine's record (`Outcome`)
    outcome: Outcome = field(default_factory=Outcome)
    #: its `key` as asked, before any plan changed it (a variant's before its recipe was cut):
    #: what the schedule counts as tried
    asked: tuple | None = None

    def __post_init__(self):
        if self.asked is None:
            self.asked = self.key

    def __setattr__(self, name: str, value) -> None:
        # once made, only its plan (`settle`) and its outcome (the engine) are replaced
        if self.__dict__.get("asked") is not None and name not in ("plan", "outcome"):
            raise AttributeError(f"a candidate's {name!r} is not assigned: its plan is replaced by "
                                 "`settle`, its outcome by the engine; the rest is what was asked "
                                 "for (`Candidate.but` makes another)")
        object.__setattr__(self, name, value)

    @property
    def pair(self) -> tuple[str, ...]:  # whose cost record it shares
        return (self.representation, self.head) if not self.name else (self.name,)

    @property
    def key(self) -> tuple:
        """What makes two candidates the same model."""
        rows = None if self.rows is None else len(self.rows)
        return (self.pair, tuple(sorted({**self.recipe, **self.params}.items())), rows, self.seed,
                self.alone)

    @property
    def label(self) -> str:
        rows = [f"rows={len(self.rows)}"] if self.rows is not None else []
        if self.name:
            return f"{self.name} ({rows[0]})" if rows and self.kind == "baseline" else self.name
        text = (f"{self.representation} + {self.head}" if self.representation != "passthrough"
                else self.head)
        parts = [describe({**self.recipe, **self.params})] if self.recipe or self.params else []
        parts += rows + ([f"seed {self.seed}"] if self.seed is not None else [])
        parts += [f"{self.alone} alone"] if self.alone else []
        return f"{text} ({', '.join(parts)})" if parts else text

    def settings(self) -> dict:
        """The pipeline parameters this candidate sets."""
        out = {**self.recipe, **self.params}
        if "head__epochs" in self.recipe:  # a recipe of epochs trains every row it is given
            out["head__early_stopping"] = False
        if self.seed is not None:
            out["head__random_state"] = self.seed
        return out

    def builder(self) -> Callable[[], Any]:
        """What builds this candidate's pipeline, without the candidate (sent to a worker)."""
        return self.factory or functools.partial(build_pipeline, self.representation, self.head,
                                                 self.settings(), self.cache, self.task,
                                                 self.roles)

    def build(self):
        """A fresh, unfitted pipeline of this candidate."""
        return self.builder()()

    def but(self, **changes) -> Candidate:
        """A new, unplanned and unrun candidate like this one with ``changes`` (of its fields or
        of its plan's: ``rows=None``), asked as it then is."""
        planned = {name: changes.pop(name) for name in list(changes) if name in PLANNED}
        return dataclasses.replace(self, **{
            "plan": dataclasses.replace(self.plan, **{"estimate": math.nan, **planned}),
            "outcome": Outcome(), "asked": None, **changes})

    def planned(self, **changes) -> Candidate:
        """A draft: this candidate with its plan so changed (``rows=...``, ``estimate=...``), to
        cost; planning takes a draft's plan or drops it (`embedkit.tuning._plans.settle`)."""
        return dataclasses.replace(self, plan=dataclasses.replace(self.plan, **changes))

    def line(self) -> Candidate:
        """The first fit of the model this one grew from (itself when it did not grow)."""
        first = self
        while first.grown_from is not None:
            first = first.grown_from
        return first


#: a plan's fields, which a candidate shows under the same names
PLANNED = tuple(f.name for f in dataclasses.fields(Plan))


def _read_only(record: str, name: str, whose: str) -> property:
    return property(lambda c: getattr(getattr(c, record), name),
                    doc=f"The {record}'s ``{name}``: {whose}.")


for _name in PLANNED:
    setattr(Candidate, _name, _read_only("plan", _name, "planning's to write (`Plan`)"))
for _name in (f.name for f in dataclasses.fields(Outcome)):
    setattr(Candidate, _name, _read_only("outcome", _name, "the engine's to record (`Outcome`)"))


def settle(c: Candidate, draft: Candidate | None = None, **planned) -> None:
    """Give ``c`` a new plan: ``draft``'s (a copy of ``c`` planned otherwise: `Candidate.planned`),
    else its own, with ``planned`` (of a plan's fields). The one place a candidate's plan is
    written (by the schedule's side: `embedkit.tuning._plans`, `embedkit.tuning._schedule`), and
    never in place: a plan not taken is a draft dropped."""
    unknown = set(planned) - set(PLANNED)
    if unknown:
        raise TypeError(f"not a planned field of a candidate: {sorted(unknown)}")
    c.plan = dataclasses.replace((c if draft is None else draft).plan, **planned)


@dataclass(frozen=True, eq=False)
class Again:
    """A schedule's decision that ``candidate``, stopped (its folds too dear, or the memory
    limit met), waits to run again as planned anew: the engine records it waiting
    (`embedkit.tuning._engine.Search.tell`)."""

    candidate: Candidate


@dataclass(eq=False)
class Job:
    """Work the search runs that scores no model: ``run()`` on ``lane``; what it returns (or
    raises) goes back to the schedule that asked for it. ``estimate`` is its seconds."""

    label: str
    run: Callable[[], Any]
    lane: str = "cores"
    estimate: float = 0.0
    kind: str = "job"
    about: Any = None  # what the schedule needs to read the outcome (a candidate, a pair)
    status: str = "waiting"
    memory: float = math.nan  # bytes it grew the process by


@dataclass(frozen=True, eq=False)
class LeaveOut:
    """A schedule's decision that ``candidate`` is not run, which the engine records
    (`embedkit.tuning._engine.Search.leave_out`): ``why``, else what it needs (time, or memory
    where the time fits); ``need``, the seconds from now that would include ``including`` (it,
    its full recipe, every document), which the engine words as a budget. Falsy, as the plans'
    answer that nothing of a candidate fits (`embedkit.tuning._plans.Plans.estimate`)."""

    candidate: Candidate
    why: str = ""
    need: float | None = None
    including: str = "it"

    def __bool__(self) -> bool:  # falsy: nothing of the candidate runs
        return False


def build_pipeline(representation: str, head: str, settings: dict, cache,
                   task: str = "classification", roles=None):
    """The registry pair's pipeline with ``settings`` (``features__x`` / ``head__y``, the
    registry head's own parameters), its head so set then shaped as ``task`` needs it
    (`embedkit.registry.for_task`: a regressor for a number, one model per label of a label set,
    each with those settings); on a table (``roles``), its representation reading the table
    (`embedkit.representations.table.on_table`)."""
    from ..base import with_cache
    from ..registry import HEADS, REPRESENTATIONS, for_task, pair_pipeline
    from ..representations.table import on_table

    features = REPRESENTATIONS[representation].factory()
    if cache is not None:
        features = with_cache(features, cache)
    pipe = pair_pipeline(features, HEADS[head].factory()).set_params(**settings)
    pipe = pair_pipeline(pipe.named_steps["features"], for_task(pipe.named_steps["head"], task))
    if roles is None:
        return pipe
    return pair_pipeline(on_table(pipe.named_steps["features"], roles), pipe.named_steps["head"])


class FoldsTooDear(Exception):
    """A cross-validated fit stopped after its first fold: at that fold's ``seconds`` its
    ``folds`` would not end within the ``limit`` it was given."""

    def __init__(self, seconds: float, folds: int, limit: float):
        from .._budget import format_seconds

        super().__init__(f"its first fold took {format_seconds(seconds)}: its {folds} need about "
                         f"{format_seconds(seconds * folds)}, {format_seconds(limit)} were left")
        self.seconds, self.folds, self.limit = seconds, folds, limit


def fit_and_score(build: Callable[[], Any], rows, X, y, X_valid, classes, folds=None,
                  limit: float | None = None) -> tuple:
    """Fit ``build()`` on the ``rows`` (None: all) of ``(X, y)`` and predict the validation rows:
    ``(model, probabilities (predicted numbers where ``classes`` is None), fit seconds, predict
    seconds)``. Under cross-validation (``folds``: the fold of each row of ``X``, which are the
    validation rows too), once a fold: fit on its other folds' ``rows``, predict its own; the
    model is the last fold's, the seconds the folds' sums; where the first fold shows the folds
    would take more than ``limit`` seconds, `FoldsTooDear` (a model's cost is first measured on
    itself: a prior may miss it by far, e.g. NBSVM's width grows with the classes). What a lane
    runs."""
    from ..data.columns import take

    if folds is None:
        began = time.monotonic()
        model = build().fit(X if rows is None else take(X, rows), y if rows is None else y[rows])
        fitted = time.monotonic()
        proba = _selection.aligned(model, X_valid, classes)
        return model, proba, fitted - began, time.monotonic() - fitted
    chosen = np.ones(len(y), bool) if rows is None else np.isin(np.arange(len(y)), rows)
    proba, fit_s, predict_s = None, 0.0, 0.0
    for fold in range(int(folds.max()) + 1):
        train, held = np.flatnonzero(chosen & (folds != fold)), np.flatnonzero(folds == fold)
        began = time.monotonic()
        model = build().fit(take(X, train), y[train])
        fitted = time.monotonic()
        part = _selection.aligned(model, take(X, held), classes)
        proba = np.zeros((len(y), part.shape[1])) if proba is None else proba
        proba[held] = part
        fit_s, predict_s = fit_s + fitted - began, predict_s + time.monotonic() - fitted
        if fold == 0 and limit is not None and (fit_s + predict_s) * (int(folds.max()) + 1) > limit:
            raise FoldsTooDear(fit_s + predict_s, int(folds.max()) + 1, limit)
    return model, proba, fit_s, predict_s
