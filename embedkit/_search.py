"""The engine of the budgeted search behind `embedkit.Tuner`: it records, estimates, runs, leaves
out and ensembles. What to try and in which order is the schedule's (`embedkit._schedule`).

* **One validation split**, stratified and seeded: every candidate, baseline and ensemble is
  scored on the same rows, so any two scores compare.
* **Measured costs** (`embedkit._costs`): one record per pair, fed by every probe and fit; what
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
import math
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _selection
from ._budget import Clock, format_seconds
from ._costs import Costs, predict_work, work_of

__all__ = ["Candidate", "Search", "describe"]

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

    def build(self):
        """A fresh, unfitted pipeline of this candidate."""
        if self.factory is not None:
            return self.factory()
        from sklearn.pipeline import Pipeline

        from .registry import HEADS, REPRESENTATIONS

        features = REPRESENTATIONS[self.representation].factory()
        if self.cache is not None and not isinstance(features, str) and "cache" in features.get_params():
            features.set_params(cache=self.cache)
        pipe = Pipeline([("features", features), ("head", HEADS[self.head].factory())])
        return pipe.set_params(**self.settings())

    def but(self, **changes) -> Candidate:
        """A new, unrun candidate like this one with ``changes``."""
        fresh = dict(status="waiting", started=math.nan, estimate=math.nan, score=math.nan,
                     fit_seconds=math.nan, predict_seconds=math.nan, model=None, proba=None,
                     note="")
        return dataclasses.replace(self, **{**fresh, **changes})


def fit_and_score(build: Callable[[], Any], X, y, X_valid, classes) -> tuple:
    """Fit ``build()`` on ``(X, y)`` and predict the validation rows: ``(model, probabilities,
    fit seconds, predict seconds)``. What a lane runs."""
    began = time.monotonic()
    model = build().fit(X, y)
    fitted = time.monotonic()
    proba = _selection.aligned(model, X_valid, classes)
    return model, proba, fitted - began, time.monotonic() - fitted


class Search:
    """Runs a schedule within ``clock`` and records every candidate (`Candidate`)."""

    def __init__(self, docs: np.ndarray, y: np.ndarray, *, clock: Clock, pairs, scoring: str,
                 validation: float, finetune, cache, random_state: int,
                 say: Callable[[str], None], finish_reserve: Callable[[], float],
                 device_lane: bool | None = None):
        self.docs, self.y, self.clock, self.pairs = docs, y, clock, list(pairs)
        self.scoring, self.validation, self.finetune = scoring, validation, finetune
        self.cache, self.seed, self.say, self.finish_reserve = cache, random_state, say, finish_reserve
        self.candidates: list[Candidate] = []
        self.tiers_reached: list[str] = []
        self.costs, self.encoder_seconds, self.interrupted = Costs(), math.nan, False
        self.filling = False  # True once every tier's defaults are done (the schedule's fill)
        self.reserved_seeds = 0  # how many of the finish's seeds the fill keeps time for
        self.device_lane = device_lane
        self.running: dict[Candidate, Future] = {}
        self._device: ThreadPoolExecutor | None = None

    # -- the split and scoring ------------------------------------------------------------------
    def split(self) -> None:
        from sklearn.model_selection import train_test_split

        n, n_classes = len(self.docs), len(np.unique(self.y))
        size = int(min(max(round(self.validation * n), 2 * n_classes, 20), 2000, n - 2 * n_classes))
        train, valid = train_test_split(np.arange(n), test_size=size, stratify=self.y,
                                        random_state=self.seed)
        self.train, self.valid = np.sort(train), np.sort(valid)
        self.X_train, self.y_train = self.docs[self.train], self.y[self.train]
        self.X_valid, self.y_valid = self.docs[self.valid], self.y[self.valid]
        self.classes = np.unique(self.y)

    def score_proba(self, proba: np.ndarray) -> float:
        """The scorer's value for validation probabilities (columns in ``classes`` order)."""
        return _selection.score(self.scoring, proba, self.y_valid, self.classes)

    def sample_rows(self, m: int) -> np.ndarray:
        """``m`` training rows (positions into the training rows), stratified, seeded."""
        return _selection.stratified_rows(self.y_train, m, self.seed)

    def left(self) -> float:
        """Seconds the search may still spend: the budget minus what the finish needs."""
        return self.clock.left() - self.finish_reserve()

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
            model, _, fit_s, predict_s = fit_and_score(c.build, self.X_train[rows], self.y_train[rows],
                                                       self.X_valid[:m], self.classes)
        except Exception:  # the full fit will say what is wrong
            return c.prior
        record = self.costs[c.pair]
        record.observe(work_of(model, m), fit_s)
        record.observe_predict(min(m, len(self.valid)), predict_s)
        return self.estimate(c)

    # -- running --------------------------------------------------------------------------------
    def fits(self, c: Candidate) -> bool:
        return c.estimate <= self.left()
    def start(self, c: Candidate) -> None:
        """Run ``c`` on its lane: on the cores it runs now; on the device lane it starts in the
        background and `collect` records it."""
        if c not in self.candidates:
            self.candidates.append(c)
        c.status, c.started = "running", self.clock.elapsed()
        rows = slice(None) if c.rows is None else c.rows
        job = (fit_and_score, c.build, self.X_train[rows], self.y_train[rows], self.X_valid,
               self.classes)
        if c.lane == "device" and self.device_lane:
            if self._device is None:
                self._device = ThreadPoolExecutor(1, thread_name_prefix="embedkit-device")
            self.running[c] = self._device.submit(*job)
            self.say(f"{self.clock.stamp()} {c.tier}: {c.label}: started on the device "
                     f"(about {format_seconds(c.estimate)})")
            return
        self.running[c] = Future()
        try:
            self.running[c].set_result(job[0](*job[1:]))
        except Exception as err:  # a candidate that breaks leaves the others running
            self.running[c].set_exception(err)
        self.collect(block=False)

    def collect(self, block: bool) -> None:
        """Record what has finished (waiting for the first to finish if ``block``)."""
        if block and self.running:
            wait(list(self.running.values()), return_when=FIRST_COMPLETED)
        for c, future in list(self.running.items()):
            if future.done():
                del self.running[c]
                self._record(c, future)

    def _record(self, c: Candidate, future: Future) -> None:
        err = future.exception()
        if err is not None:
            c.status, c.note = "failed", f"{type(err).__name__}: {err}"[:300]
            c.fit_seconds = self.clock.elapsed() - c.started
            self.say(f"{self.clock.stamp()} {c.label}: failed ({c.note[:120]})")
            return
        c.model, c.proba, c.fit_seconds, c.predict_seconds = future.result()
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
        need = self.clock.elapsed() + c.estimate + self.finish_reserve()
        c.note = why or (f"needs about {format_seconds(c.estimate)}, {format_seconds(max(self.left(), 0))} "
                         f"were left; a budget of about {format_seconds(need)} would include it")
        self.say(f"{self.clock.stamp()} left out {c.label}: {c.note}")

    def run_tiers(self, schedule, baselines: dict[str, Callable[[], Any]]) -> None:
        """The split, ``schedule``'s prologue (the baselines), then its candidates lane by lane
        (`embedkit._schedule.Schedule.next`) until none fits; ``KeyboardInterrupt`` stops
        wherever it comes and keeps what was scored."""
        try:
            self.split()
            schedule.prologue(baselines)
            while True:
                self.collect(block=False)
                if self.device_lane and not any(c.lane == "device" for c in self.running):
                    found = schedule.next("device")
                    if found is not None:
                        self.start(found)
                found = schedule.next("cores")
                if found is not None:
                    self.start(found)
                elif self.running:
                    self.collect(block=True)
                else:
                    return
        except KeyboardInterrupt:
            self.interrupted = True
            self._stop_running()
            self.say(f"{self.clock.stamp()} interrupted: finishing with the best model so far")
        finally:
            if self._device is not None:
                self._device.shutdown(wait=False, cancel_futures=True)

    def _stop_running(self) -> None:
        """Mark what was running as interrupted; a model training on the device lane is stopped
        (a ``KeyboardInterrupt`` raised in its thread) and waited for."""
        for c, future in list(self.running.items()):
            c.status = "interrupted"
            c.note = "stopped by an interrupt before it finished; not scored"
            if not future.done() and self._device is not None:
                for thread in list(getattr(self._device, "_threads", ())):
                    _raise_in(thread, KeyboardInterrupt)
                wait([future], timeout=60)
        self.running.clear()

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


def _raise_in(thread, exception: type[BaseException]) -> None:
    """Raise ``exception`` in ``thread`` at its next Python instruction (Ctrl-C reaches only the
    main thread; a model training in another one is stopped this way)."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(exception))
