"""The engine of the budgeted search behind `embedkit.Tuner`: it owns the split, the search's
time and its board (`embedkit.tuning._view`: the clock with what the finish keeps back; every
candidate, what runs, the pick so far), the lanes, the pairs' costs and the finish; what to
try and in which order is a schedule's (`embedkit.tuning._schedule`), which sees the engine
only through `Search.run`'s three calls: ``schedule.ask(lane)`` (what this lane runs next: a
`Candidate` to fit and score, a `Job`, a model to leave out, `LeaveOut`, or nothing),
``schedule.tell(action, outcome)`` (what came of it; the schedule answers with the models it
leaves out now) and ``schedule.end()`` (the same, once the search is over), as scikit-learn's
``_run_search`` sees ``evaluate_candidates`` only. The schedule decides; the engine alone records
what it decided (a model left out, with the budget that would include it, worded once here).

* **One validation split**, stratified and seeded: every candidate, baseline and ensemble is
  scored on the same rows, so any two compare row by row (`embedkit.tuning._pick`).
* **Measured costs** (`embedkit.tuning._costs`): one state per pair, fed by every fit, probe and
  refit; what the finish needs is kept back (`embedkit.tuning._finish.Finish.reserve`).
* **Lanes**: an action runs on the cores (in this process) or, where there is an accelerator,
  on the device lane, a thread training one model while the cores fit others, or on a Dask
  cluster's workers; outcomes are recorded by the main thread only.
* **Anytime**: Ctrl-C (``KeyboardInterrupt``) ends the search, marks what was running as
  interrupted, and the finish goes on with the best model so far. A fit on the cores that runs
  past the search's deadline is stopped there (`embedkit._stopping.deadline`) and marked so.
* **Memory, a budget like time** (``asked.memory``: bytes the process may hold): every fit on
  the cores is measured (`embedkit.machine.PeakRSS`: what it grew the process by, on the
  leaderboard) and its pair's state learns it (before that, what its head declares, where it
  does); a model whose pair needs more than the limit leaves room for is left out before it
  runs, saying what it needs; a fit that grows the process
  past the limit, or leaves the machine less than `MEMORY_FLOOR` free, is stopped there
  (`embedkit._stopping.stop_when`), and the schedule sizes it again on fewer rows or leaves it
  out (`embedkit.tuning._schedule.Schedule.too_big`); the search goes on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .._budget import DECIDING, Clock, format_bytes, format_seconds
from .._stopping import DeadlineReached, MemoryLimitReached, deadline, stop_when
from ..data.columns import take
from ..machine import PeakRSS, ShortOfMemory, release_memory, resident
from . import _lanes
from ._asked import Asked
from ._candidate import Again, Candidate, FoldsTooDear, Job, LeaveOut, Outcome, fit_and_score
from ._costs import States, encoder_ratio, predict_work, work_of
from ._finish import Finish
from ._settings import ENCODER, MEMORY_FLOOR, PROBE_ROWS, PROBE_SHARE
from ._split import Split
from ._value import TRAINING_TIERS
from ._view import Board, Time

__all__ = ["Search"]


class Search:
    """Runs a schedule within ``clock`` and records every candidate (`Candidate`)."""

    def __init__(self, docs: np.ndarray, y: np.ndarray, *, clock: Clock, pairs, scoring: str,
                 validation: float, finetune, cache, random_state: int,
                 say: Callable[[str], None], finish: Finish | None = None,
                 device_lane: bool | None = None, client=None, task: str = "classification",
                 roles=None, predict_limit: float | None = None, standing=(),
                 memory: float | None = None):
        # the documents, the targets and their split (`split`): read by everything, changed by none
        self.data = Split(docs, y, task=task, roles=roles, scoring=scoring, validation=validation,
                          seed=random_state)
        # what it was asked for: read by everything, changed by none
        self.asked = Asked(pairs=tuple(pairs), finetune=finetune, cache=cache, device_lane=device_lane,
                           client=client, memory=memory, predict_limit=predict_limit,
                           standing=tuple(standing))
        self.say = say
        self.finish = Finish() if finish is None else finish  # what the end needs, kept back
        # its time: the clock and what the finish keeps back; what it found and runs
        self.time = Time(clock, lambda: self.finish.reserve(
            self, filling=self.board.filling))
        self.board = Board(self.data, self.asked)
        self.costs = States()
        # seconds to encode a document not cached yet, by frozen encoder: what a model reading
        # that encoder's cache adds to its predictions on new documents (the schedule measures it)
        self.encode_rates: dict[str, float] = {}
        self.lanes: dict[str, Any] = {}
        # a fit was stopped at the memory limit since the last ask: what it held is garbage now
        self.freed = False

    # -- the split -------------------------------------------------------------------------------
    def split(self) -> None:
        """Split the data (`Split.split`) and set up the lanes that fit on it."""
        self.data.split()
        d = self.data
        self.lanes = {"cores": _lanes.Inline()}  # the cores last: a fit there blocks
        if self.asked.device_lane:
            self.lanes = {"device": _lanes.Device(), **self.lanes}
        if self.asked.client is not None:
            self.lanes = {"cluster": _lanes.Cluster(self.asked.client, (
                d.X_train, d.y_train, d.X_valid, d.classes, d.folds)), **self.lanes}

    # -- estimates ------------------------------------------------------------------------------
    def estimate(self, c: Candidate) -> float:
        """Seconds ``c`` will take: from its pair's state, else a probe on a slice, else the
        registry's prior where that is surely small (work for the cores only)."""
        state = self.costs[c.pair]
        if state.measured:
            pipe = c.build()
            d = self.data
            return state.seconds(d.fits_each * work_of(pipe, d.n_rows(c)), len(d.valid),
                                 predict_work(pipe, len(d.valid)))
        if c.lane == "cores" and c.prior <= 0.01 * self.time.budget:
            return c.prior
        return self.probe(c)

    def probe(self, c: Candidate) -> float:
        """Fit ``c`` on a slice of its training rows; its state learns the cost per unit of
        work, and the estimate scales it up to all of them. The slice's fit is stopped once it
        has run the time left (`Time.left`): a model whose slice does not fit in it cannot fit
        either, and its state learns that cost as at least the seconds it ran; one stopped at
        the memory limit learns what it grew the process by."""
        d = self.data
        n = d.n_rows(c)
        m = int(min(max(PROBE_SHARE * n, PROBE_ROWS[0]), PROBE_ROWS[1]))
        limit = self.time.left()
        if 3 * m >= n or limit <= 0:
            return c.prior
        rows = d.sample_rows(m) if c.rows is None else np.sort(
            np.random.default_rng(d.seed).choice(c.rows, m, replace=False))
        state, began, mem = self.costs[c.pair], time.monotonic(), None
        try:
            with self.guard(limit) as mem:
                model, _, fit_s, predict_s = fit_and_score(
                    c.build, rows, d.X_train, d.y_train, take(d.X_valid, slice(0, PROBE_ROWS[0])),
                    d.classes)
        except DeadlineReached:  # measured as at least what it ran
            state.observe(work_of(c.build(), m), time.monotonic() - began)
            return self.estimate(c)
        except MemoryLimitReached:  # `memory_fits` now says what its rows need
            if mem is not None:
                state.observe_memory(0 if c.tier in TRAINING_TIERS else m,
                                     max(mem.peak - mem.start, 0.0))
            return c.prior
        except Exception:  # the full fit will say what is wrong
            return c.prior
        state.observe(work_of(model, m), fit_s)
        state.observe_predict(min(PROBE_ROWS[0], len(d.valid)), predict_s)
        return self.estimate(c)

    def fits(self, c) -> bool:
        """Whether ``c`` fits the time left and the memory (`memory_fits`)."""
        return c.estimate <= self.time.left() and self.memory_fits(c)

    # -- memory -----------------------------------------------------------------------------------
    def memory_need(self, c: Candidate) -> float:
        """Bytes ``c``'s fit is expected to grow the process by: its pair's dearest measured fit
        (`PairState.memory_need`) scaled to its rows (`_memory_rows`), before one its head's
        declared need; NaN where neither is known."""
        return self.costs[c.pair].memory_need(self._memory_rows(c))

    def _memory_rows(self, c: Candidate) -> int:
        """The rows ``c``'s memory grows with: those its fits read, but none for a head that
        trains an encoder (its memory is its batches')."""
        return 0 if c.tier in TRAINING_TIERS else self.data.fit_rows(self.data.n_rows(c))

    def memory_fits(self, c: Candidate) -> bool:
        """Whether what ``c`` is expected to grow the process by fits under the limit (yes
        where nothing is known of it: its fit is watched, and stopped at the limit; no where
        the process is over the limit already)."""
        if self.asked.memory is None:
            return True
        need = self.memory_need(c)
        return resident() + (0.0 if math.isnan(need) else need) <= self.asked.memory

    @contextlib.contextmanager
    def guard(self, seconds: float):
        """The block measured (yields its `PeakRSS`) and stopped at ``seconds`` (`DeadlineReached`)
        or where the process outgrows the memory limit or the machine runs short
        (`MemoryLimitReached`)."""
        short = ShortOfMemory(self.asked.memory, MEMORY_FLOOR)
        with PeakRSS(collect=False) as mem, \
                stop_when(short, lambda: MemoryLimitReached(short.why())), deadline(seconds):
            yield mem

    # -- running --------------------------------------------------------------------------------
    def submit(self, action) -> None:
        """Run ``action`` on its lane: on the cores it runs now (stopped at the search's deadline),
        elsewhere it starts in the background and `collect` records it."""
        if isinstance(action, Candidate):
            if action not in self.board.candidates:
                self.board.candidates.append(action)
            self.record(action, status="running", started=self.time.elapsed())
        else:
            self.record(action, status="running")
        lane = self.lanes[action.lane]
        if isinstance(action, Job):
            work = (action.run,)
        elif isinstance(lane, _lanes.Cluster):  # the data is on the workers already
            work = (fit_and_score, action.builder(), action.rows)
        else:
            d = self.data
            work = (fit_and_score, action.builder(), action.rows, d.X_train, d.y_train, d.X_valid,
                    d.classes, d.folds, None if d.folds is None else self.time.left())
        if lane.blocking:  # stopped where it would take the time to write the output
            mem = None
            try:
                with self.guard(self.time.to_deadline() - self.finish.write_seconds(self.board.best_or_none())
                                - DECIDING) as mem:
                    self.board.running[action] = lane.submit(*work)
            except MemoryLimitReached as err:  # the schedule's `too_big`, and the search goes on
                self.board.running[action] = _lanes.failed(err)
            finally:
                if mem is not None:
                    self.record(action, memory=max(mem.peak - mem.start, 0.0))
        else:
            self.board.running[action] = lane.submit(*work)
            self.say(f"{self.time.stamp()} {getattr(action, 'tier', 'job')}: {action.label}: "
                     f"started on the {action.lane} (about {format_seconds(action.estimate)})")

    def collect(self, schedule, block: bool) -> None:
        """Record what has finished (waiting for the first to finish if ``block``), and tell the
        schedule."""
        if block:
            _lanes.first_done(list(self.board.running.values()))
        for action, future in list(self.board.running.items()):
            if future.done():
                del self.board.running[action]
                self.tell(schedule, action, self._record(action, future))

    def ask(self, schedule, lane: str):
        """What ``schedule`` runs next on ``lane`` (a candidate, a job, or None), the models it
        leaves out on the way recorded. Under a memory limit, freed memory is handed back first
        (`release_memory`; garbage collected after a fit stopped at the limit), so the process's
        memory that each decision reads is what it holds."""
        if self.asked.memory is not None:
            release_memory(collect=self.freed)
            self.freed = False
        while isinstance(found := schedule.ask(lane), LeaveOut):
            self.leave_out(found)
        return found

    def tell(self, schedule, action, outcome) -> None:
        """``schedule`` told what came of ``action``; what it then decides recorded: the models it
        leaves out, those it has wait to run again (`Again`)."""
        for decision in schedule.tell(action, outcome):
            if isinstance(decision, Again):
                self.record(decision.candidate, outcome=Outcome())
            else:
                self.leave_out(decision)

    @staticmethod
    def record(action, outcome: Outcome | None = None, **fields) -> None:
        """What came of ``action`` so far recorded: a candidate's ``outcome`` anew, or ``fields``
        of it changed (a new `Outcome`: the one place one is written); a job's fields."""
        if not isinstance(action, Candidate):
            for name, value in fields.items():
                setattr(action, name, value)
            return
        action.outcome = dataclasses.replace(action.outcome if outcome is None else outcome, **fields)

    def _record(self, action, future):
        err = future.exception()
        if isinstance(action, Job):
            self.record(action, status="failed" if err is not None else "done")
            outcome = err if err is not None else future.result()
            if action.kind == "probe" and not math.isnan(action.memory):  # by batches: no rows
                self.costs[action.about].observe_memory(0, action.memory)
            self.measured(action, outcome)
            return outcome
        c = action
        if not math.isnan(c.memory):
            self.costs[c.pair].observe_memory(self._memory_rows(c), c.memory)
        if isinstance(err, MemoryLimitReached):  # the schedule sizes it again or leaves it out
            self.freed = True
            self.record(c, fit_seconds=self.time.elapsed() - c.started, status="failed", note=(
                f"{err}, after it grew the process by {format_bytes(c.memory)}; a limit of more "
                f"than {format_bytes(resident() + self.memory_need(c))} would include it"))
            return err
        if isinstance(err, FoldsTooDear):  # its cost is measured now (a fold's fit): the
            # schedule sizes it again or leaves it out
            self.costs[c.pair].observe(work_of(c.build(), self.data.n_rows(c)), err.seconds)
            self.record(c, fit_seconds=err.seconds)
            return err
        if err is not None:
            self.record(c, status="failed", note=f"{type(err).__name__}: {err}"[:300],
                        fit_seconds=self.time.elapsed() - c.started)
            self.say(f"{self.time.stamp()} {c.label}: failed ({c.note[:120]})")
            return err
        outcome, where = future.result(), c.where
        if c.lane == "cluster":
            outcome, where = outcome
        model, proba, fit_seconds, predict_seconds = outcome
        self.record(c, model=model, proba=proba, fit_seconds=fit_seconds,
                    predict_seconds=predict_seconds, where=where, status="scored",
                    score=self.data.score_proba(proba),
                    row_seconds=(predict_seconds / max(len(self.data.valid), 1)
                                 + (self.encode_rates.get(c.encoder, 0.0) if c.encoder else 0.0)))
        if not self.board.within_limit(c):
            self.record(c, note="; ".join(n for n in (c.note, self.board.over_limit(c)) if n))
        state = self.costs[c.pair]
        state.observe(self.data.fits_each * work_of(c.model, self.data.n_rows(c)), c.fit_seconds)
        state.observe_predict(len(self.data.valid), c.predict_seconds)
        self.say(f"{self.time.stamp()} {c.tier}: {c.label}: {c.score:.3f} "
                 f"({c.fit_seconds + c.predict_seconds:.1f} s)")
        self.board.update_ensemble()
        return c

    def measured(self, job: Job, outcome) -> None:
        """What a finished job measured of a frozen encoder: the prologue's load, the seconds a
        document it has never seen costs (`encode_rates`); a pass, its seconds (`encoder_seconds`)
        and, where it encoded documents, the seconds a new one costs a model that reads its cache:
        where the pass found them cached already, at least the fresh prologue encoder's rate scaled
        by the registry's cost ratio; a probe's end (measured, or failed: the prior stands)."""
        if job.kind == "probe":
            self.costs[job.about].probed()
        if isinstance(outcome, BaseException):
            return
        if job.kind == "load":
            self.encode_rates[job.about] = outcome[2]
        elif job.kind == "encode":
            done, seconds, _ = outcome
            if done:
                fresh = self.encode_rates.get(ENCODER, 0.0) * encoder_ratio(job.about)
                self.encode_rates[job.about] = max(seconds / done, fresh)
            board = self.board
            board.encoder_seconds = (0.0 if math.isnan(board.encoder_seconds)
                                     else board.encoder_seconds) + seconds

    def leave_out(self, decision: LeaveOut) -> None:
        """A schedule's `LeaveOut` recorded: its candidate left out, with its ``why``, else what it
        needs: time, or memory where the time fits; its ``need``, the seconds from now that would
        include ``including``, worded here as the budget that would, the one place it is worded."""
        c, why, need = decision.candidate, decision.why, decision.need
        if c not in self.board.candidates:
            self.board.candidates.append(c)
        if not why and c.estimate <= self.time.left() and not self.memory_fits(c):
            held, grows = resident(), self.memory_need(c)
            prior = (" (its weights and batches, estimated before any fit)"
                     if math.isnan(self.costs[c.pair].memory) else "")
            why = (f"this process holds {format_bytes(held)}, over the memory limit of "
                   f"{format_bytes(self.asked.memory)} already" if math.isnan(grows) else
                   f"its fit needs about {format_bytes(grows)} of memory{prior} beyond the "
                   f"{format_bytes(held)} this process holds, over the limit of "
                   f"{format_bytes(self.asked.memory)}; a limit of about {format_bytes(held + grows)} "
                   "would include it")
        elif not why:
            why, need = (f"needs about {format_seconds(c.estimate)}, "
                         f"{format_seconds(max(self.time.left(), 0))} were left"), c.estimate
        if need is not None:
            budget = format_seconds(self.time.budget_for(need))
            why += f"; a budget of about {budget} would include {decision.including}"
        self.record(c, status="left out", note=why)
        self.say(f"{self.time.stamp()} left out {c.label}: {c.note}")

    def begin(self, schedule) -> None:
        """The split, and ``schedule`` begun on it: from now on it orders the candidates."""
        self.split()
        schedule.begin(self)

    def run(self, schedule) -> None:
        """The split, then ``schedule``'s actions on every lane with a free slot
        (`ask`, each outcome back through `tell`) until none is asked for and none runs, then
        ``schedule.end()`` (the models it leaves out then, recorded). ``KeyboardInterrupt`` stops
        wherever it comes and keeps what was scored; a fit stopped at the deadline ends the
        search the same way."""
        try:
            self._run(schedule)
        finally:
            self.end(schedule)

    def end(self, schedule) -> None:
        """The search over: the models ``schedule`` then leaves out (those it never started)
        recorded."""
        for decision in schedule.end():
            self.leave_out(decision)

    def _run(self, schedule) -> None:
        try:
            self.begin(schedule)
            while True:
                self.collect(schedule, block=False)
                started = False
                for name, lane in self.lanes.items():
                    while sum(a.lane == name for a in self.board.running) < lane.slots:
                        found = self.ask(schedule, name)
                        if found is None:
                            break
                        self.submit(found)
                        started = True
                        if lane.blocking:
                            self.collect(schedule, block=False)
                            break
                if not started and not self.board.running:
                    return
                if not started:
                    self.collect(schedule, block=True)
        except (KeyboardInterrupt, DeadlineReached) as err:
            self._stop(isinstance(err, KeyboardInterrupt))

    def _stop(self, by_user: bool) -> None:
        self.board.interrupted = self.board.interrupted or by_user
        why = "stopped by Ctrl-C (or SIGTERM)" if by_user else "stopped at the search's deadline"
        for c in self.board.candidates:  # running on a lane, or in this thread when it came
            if c.status == "running":
                self.record(c, status="interrupted", note=f"{why} before it was scored")
        for lane in self.lanes.values():
            lane.stop()
        _lanes.first_done([f for a, f in self.board.running.items() if a.lane == "device"], timeout=60)
        self.board.running.clear()
        self.say(f"{self.time.stamp()} " + ("interrupted: finishing with the best model so far"
                                            if by_user else "the deadline: finishing with the "
                                            "best model so far"))
