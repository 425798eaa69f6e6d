"""The engine of the budgeted search behind `embedkit.Tuner`: it records, estimates, runs, leaves
out and ensembles. What to try and in which order is the schedule's (`embedkit.tuning._schedule`).

* **One validation split**, stratified and seeded: every candidate, baseline and ensemble is
  scored on the same rows, so any two scores compare.
* **Measured costs** (`embedkit.tuning._costs`): one record per pair, fed by every probe and fit; what
  does not fit the time left (minus what the finish needs) is left out, with the budget that
  would include it.
* **Lanes**: a candidate runs on the cores (in this process) or, where there is an accelerator,
  on the device lane, a thread training one model while the cores fit others; outcomes are
  recorded by the main thread only.
* **Anytime**: Ctrl-C (``KeyboardInterrupt``) ends the search, marks what was running as
  interrupted, and the finish goes on with the best model so far.
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

from .._budget import Clock, format_seconds
from . import _lanes, _selection
from ._costs import Costs, predict_work, work_of
from ._finish import Finish

__all__ = ["Candidate", "Search", "describe"]

#: the most validation rows: every model predicts them, so they are part of every model's cost
VALID_ROWS = 2000

#: a probe fits on this share of the training rows, between these bounds; where that is over
#: a third of the rows the prior stands (small data is quick)
PROBE_SHARE, PROBE_ROWS = 0.1, (100, 400)


def describe(params: dict) -> str:
    """``a=1, b=2``: settings as the leaderboard prints them."""
    return ", ".join(f"{k.split('__', 1)[-1]}={v}" for k, v in params.items())


@dataclass(eq=False)
class Candidate:
    """One model of the search. Its identity is its fields (pair, settings, recipe, rows, seed);
    ``label`` only displays them."""

    representation: str = ""
    head: str = ""
    tier: str = ""
    kind: str = "candidate"  # candidate, baseline or ensemble
    params: dict = field(default_factory=dict)  # settings changed from the registry's
    recipe: dict = field(default_factory=dict)  # a sized fine-tuning recipe (pipeline keys)
    rows: Any = None  # the training rows it fits on, when a subsample
    seed: int | None = None  # the head's random_state, for models whose seeds the finish averages
    variant_of: Candidate | None = None
    name: str = ""  # a baseline's or an ensemble's own name
    factory: Callable[[], Any] | None = None  # a baseline's pipeline
    cache: Any = None
    lane: str = "cores"
    prior: float = 0.0
    extra_refit: float = 0.0  # seconds a refit on every document needs besides its fit scaled up
    share: float = 1.0  # the share of its head's own recipe's gain a sized recipe keeps
    least: float | None = None  # seconds of a sized head's cheapest recipe (None: its estimate)
    status: str = "waiting"
    started: float = math.nan  # seconds into the search when it started
    estimate: float = math.nan
    score: float = math.nan
    fit_seconds: float = math.nan
    predict_seconds: float = math.nan
    model: Any = None
    proba: Any = None
    note: str = ""
    weights: dict = field(default_factory=dict)  # an ensemble's members -> weights
    where: str = ""  # the Dask worker that fitted it, on a cluster

    @property
    def pair(self) -> tuple[str, ...]:  # whose cost record it shares
        return (self.representation, self.head) if not self.name else (self.name,)

    @property
    def key(self) -> tuple:
        """What makes two candidates the same model."""
        rows = None if self.rows is None else len(self.rows)
        return (self.pair, tuple(sorted({**self.recipe, **self.params}.items())), rows, self.seed)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        text = (f"{self.representation} + {self.head}" if self.representation != "passthrough"
                else self.head)
        parts = [describe({**self.recipe, **self.params})] if self.recipe or self.params else []
        parts += [f"rows={len(self.rows)}"] if self.rows is not None else []
        parts += [f"seed {self.seed}"] if self.seed is not None else []
        return f"{text} ({', '.join(parts)})" if parts else text

    def settings(self) -> dict:
        """The pipeline parameters this candidate sets."""
        out = {**self.recipe, **self.params}
        if self.recipe:
            out["head__early_stopping"] = False  # a sized recipe trains every row it is given
        if self.seed is not None:
            out["head__random_state"] = self.seed
        return out

    def builder(self) -> Callable[[], Any]:
        """What builds this candidate's pipeline, without the candidate (sent to a worker)."""
        return self.factory or functools.partial(build_pipeline, self.representation, self.head,
                                                 self.settings(), self.cache)

    def build(self):
        """A fresh, unfitted pipeline of this candidate."""
        return self.builder()()

    def but(self, **changes) -> Candidate:
        """A new, unrun candidate like this one with ``changes``."""
        fresh = dict(status="waiting", started=math.nan, estimate=math.nan, score=math.nan,
                     fit_seconds=math.nan, predict_seconds=math.nan, model=None, proba=None,
                     note="")
        return dataclasses.replace(self, **{**fresh, **changes})


def build_pipeline(representation: str, head: str, settings: dict, cache):
    """The registry pair's pipeline with ``settings`` (``features__x`` / ``head__y``)."""
    from sklearn.pipeline import Pipeline

    from ..registry import HEADS, REPRESENTATIONS

    features = REPRESENTATIONS[representation].factory()
    if cache is not None and not isinstance(features, str) and "cache" in features.get_params():
        features.set_params(cache=cache)
    return Pipeline([("features", features), ("head", HEADS[head].factory())]).set_params(**settings)


def fit_and_score(build: Callable[[], Any], rows, X, y, X_valid, classes) -> tuple:
    """Fit ``build()`` on the ``rows`` (None: all) of ``(X, y)`` and predict the validation rows:
    ``(model, probabilities, fit seconds, predict seconds)``. What a lane runs."""
    began = time.monotonic()
    model = build().fit(X if rows is None else X[rows], y if rows is None else y[rows])
    fitted = time.monotonic()
    proba = _selection.aligned(model, X_valid, classes)
    return model, proba, fitted - began, time.monotonic() - fitted


class Search:
    """Runs a schedule within ``clock`` and records every candidate (`Candidate`)."""

    def __init__(self, docs: np.ndarray, y: np.ndarray, *, clock: Clock, pairs, scoring: str,
                 validation: float, finetune, cache, random_state: int,
                 say: Callable[[str], None], finish=None,
                 device_lane: bool | None = None, client=None):
        self.docs, self.y, self.clock, self.pairs = docs, y, clock, list(pairs)
        self.scoring, self.validation, self.finetune = scoring, validation, finetune
        self.cache, self.seed, self.say = cache, random_state, say
        self.finish = Finish() if finish is None else finish  # what the end needs, kept back
        self.candidates: list[Candidate] = []
        self.tiers_reached: list[str] = []
        self.costs, self.encoder_seconds, self.interrupted = Costs(), math.nan, False
        self.filling = False  # True once every tier's defaults are done (the schedule's fill)
        self.reserved_seeds = 0  # how many of the finish's seeds the fill keeps time for
        self.device_lane, self.client = device_lane, client  # client: a Dask cluster's
        self.running: dict[Candidate, Any] = {}  # what runs -> its future
        self.lanes: dict[str, Any] = {}

    # -- the split and scoring ------------------------------------------------------------------
    def split(self) -> None:
        from sklearn.model_selection import train_test_split

        n, n_classes = len(self.docs), len(np.unique(self.y))
        # a share of the rows, at most `VALID_ROWS` (predicting them is part of every model's
        # cost), at least two of a class where they can be spared, never fewer than one of every
        # class (a stratified split needs it: 10,000 classes of 3 documents), two left to train
        size = int(min(max(round(self.validation * n), 2 * n_classes, 20), max(VALID_ROWS, n_classes),
                       n - 2 * n_classes))
        train, valid = train_test_split(np.arange(n), test_size=size, stratify=self.y,
                                        random_state=self.seed)
        self.train, self.valid = np.sort(train), np.sort(valid)
        self.X_train, self.y_train = self.docs[self.train], self.y[self.train]
        self.X_valid, self.y_valid = self.docs[self.valid], self.y[self.valid]
        self.classes = np.unique(self.y)
        self.lanes = {"cores": _lanes.Inline()}  # the cores last: a fit there blocks
        if self.device_lane:
            self.lanes = {"device": _lanes.Device(), **self.lanes}
        if self.client is not None:
            self.lanes = {"cluster": _lanes.Cluster(self.client, (
                self.X_train, self.y_train, self.X_valid, self.classes)), **self.lanes}

    def score_proba(self, proba: np.ndarray) -> float:
        """The scorer's value for validation probabilities (columns in ``classes`` order)."""
        return _selection.score(self.scoring, proba, self.y_valid, self.classes)

    def sample_rows(self, m: int) -> np.ndarray:
        """``m`` training rows (positions into the training rows), stratified, seeded."""
        return _selection.stratified_rows(self.y_train, m, self.seed)

    def left(self) -> float:
        """Seconds the search may still spend: the budget minus what the finish needs."""
        return self.clock.left() - self.reserve()

    def reserve(self) -> float:
        """Seconds the finish keeps back now (`embedkit.tuning._finish.Finish.reserve`)."""
        return self.finish.reserve(self)

    def n_rows(self, c: Candidate) -> int:
        return len(self.train) if c.rows is None else len(c.rows)

    # -- estimates ------------------------------------------------------------------------------
    def estimate(self, c: Candidate) -> float:
        """Seconds ``c`` will take: from its pair's record, else a probe on a slice, else the
        registry's prior where that is surely small (work for the cores only)."""
        record = self.costs[c.pair]
        if record.measured:
            pipe = c.build()
            return record.seconds(work_of(pipe, self.n_rows(c)), len(self.valid),
                                  predict_work(pipe, len(self.valid)))
        if c.lane == "cores" and c.prior <= 0.01 * self.clock.budget:
            return c.prior
        return self.probe(c)

    def probe(self, c: Candidate) -> float:
        """Fit ``c`` on a slice of its training rows; its record learns the cost per unit of
        work, and the estimate scales it up to all of them."""
        n = self.n_rows(c)
        m = int(min(max(PROBE_SHARE * n, PROBE_ROWS[0]), PROBE_ROWS[1]))
        if 3 * m >= n:
            return c.prior
        rows = self.sample_rows(m) if c.rows is None else np.sort(
            np.random.default_rng(self.seed).choice(c.rows, m, replace=False))
        try:
            model, _, fit_s, predict_s = fit_and_score(c.build, rows, self.X_train, self.y_train,
                                                       self.X_valid[:PROBE_ROWS[0]], self.classes)
        except Exception:  # the full fit will say what is wrong
            return c.prior
        record = self.costs[c.pair]
        record.observe(work_of(model, m), fit_s)
        record.observe_predict(min(PROBE_ROWS[0], len(self.valid)), predict_s)
        return self.estimate(c)

    # -- running --------------------------------------------------------------------------------
    def fits(self, c: Candidate) -> bool:
        return c.estimate <= self.left()
    def start(self, c: Candidate) -> None:
        """Run ``c`` on its lane (`embedkit.tuning._lanes`): on the cores it runs now; elsewhere it starts
        in the background and `collect` records it."""
        if c not in self.candidates:
            self.candidates.append(c)
        c.status, c.started = "running", self.clock.elapsed()
        lane = self.lanes[c.lane]
        if isinstance(lane, _lanes.Cluster):  # the data is on the workers already
            self.running[c] = lane.submit(fit_and_score, c.builder(), c.rows)
        else:
            self.running[c] = lane.submit(fit_and_score, c.builder(), c.rows, self.X_train,
                                          self.y_train, self.X_valid, self.classes)
        if not lane.blocking:
            self.say(f"{self.clock.stamp()} {c.tier}: {c.label}: started on the {c.lane} "
                     f"(about {format_seconds(c.estimate)})")
        self.collect(block=False)

    def collect(self, block: bool) -> None:
        """Record what has finished (waiting for the first to finish if ``block``)."""
        if block:
            _lanes.first_done(list(self.running.values()))
        for c, future in list(self.running.items()):
            if future.done():
                del self.running[c]
                self._record(c, future)

    def _record(self, c: Candidate, future) -> None:
        err = future.exception()
        if err is not None:
            c.status, c.note = "failed", f"{type(err).__name__}: {err}"[:300]
            c.fit_seconds = self.clock.elapsed() - c.started
            self.say(f"{self.clock.stamp()} {c.label}: failed ({c.note[:120]})")
            return
        outcome = future.result()
        if c.lane == "cluster":
            outcome, c.where = outcome
        c.model, c.proba, c.fit_seconds, c.predict_seconds = outcome
        c.score, c.status = self.score_proba(c.proba), "scored"
        record = self.costs[c.pair]
        record.observe(work_of(c.model, self.n_rows(c)), c.fit_seconds)
        record.observe_predict(len(self.valid), c.predict_seconds)
        self.say(f"{self.clock.stamp()} {c.tier}: {c.label}: {c.score:.3f} "
                 f"({c.fit_seconds + c.predict_seconds:.1f} s)")
        self._update_ensemble()

    def leave_out(self, c: Candidate, why: str = "") -> None:
        if c not in self.candidates:
            self.candidates.append(c)
        c.status = "left out"
        need = self.clock.elapsed() + c.estimate + self.reserve()
        c.note = why or (f"needs about {format_seconds(c.estimate)}, {format_seconds(max(self.left(), 0))} "
                         f"were left; a budget of about {format_seconds(need)} would include it")
        self.say(f"{self.clock.stamp()} left out {c.label}: {c.note}")

    def run_tiers(self, schedule, baselines: dict[str, Callable[[], Any]]) -> None:
        """The split, ``schedule``'s prologue (the baselines), then its candidates on every lane
        with a free slot (`embedkit.tuning._schedule.Schedule.next`) until none fits;
        ``KeyboardInterrupt`` stops wherever it comes and keeps what was scored."""
        try:
            self.split()
            schedule.prologue(baselines)
            while True:
                self.collect(block=False)
                started = False
                for name, lane in self.lanes.items():
                    while sum(c.lane == name for c in self.running) < lane.slots:
                        found = schedule.next(name)
                        if found is None:
                            break
                        self.start(found)
                        started = True
                        if lane.blocking:
                            break
                if not started and not self.running:
                    return
                if not started:
                    self.collect(block=True)
        except KeyboardInterrupt:
            self.interrupted = True
            for c in self.candidates:  # running on a lane, or in this thread when it came
                if c.status == "running":
                    c.status, c.note = "interrupted", "stopped by Ctrl-C (or SIGTERM) before it was scored"
            for lane in self.lanes.values():
                lane.stop()
            _lanes.first_done([f for c, f in self.running.items() if c.lane == "device"], timeout=60)
            self.running.clear()
            self.say(f"{self.clock.stamp()} interrupted: finishing with the best model so far")

    # -- ensembles --------------------------------------------------------------------------------
    def _update_ensemble(self) -> None:
        self.candidates = [c for c in self.candidates if c.kind != "ensemble"]
        scored = [c for c in self.candidates if c.status == "scored"]
        if len(scored) < 2:
            return
        weights, score = _selection.select([c.proba for c in scored],
                                           [c.fit_seconds for c in scored], self.y_valid,
                                           self.classes, self.scoring, self.seed)
        if not weights:
            return
        members = {scored[i]: w for i, w in weights.items()}
        self.candidates.append(Candidate(
            name=f"ensemble of {len(members)} models", tier="ensembles", kind="ensemble",
            status="scored", score=score,
            proba=sum(w * c.proba for c, w in members.items()),
            note="; ".join(f"{c.label}: {w:.2f}" for c, w in members.items()),
            fit_seconds=sum(c.fit_seconds for c in members),
            predict_seconds=sum(c.predict_seconds for c in members), weights=members))
        if "ensembles" not in self.tiers_reached:
            self.tiers_reached.append("ensembles")

    def best(self) -> Candidate:
        """The pick: the best validation score; ties go to the quicker model."""
        scored = [c for c in self.candidates if c.status == "scored"]
        return max(scored, key=lambda c: (c.score, -(c.fit_seconds + c.predict_seconds)))
