"""What each pair of a budgeted search costs on this machine: one `PairState` per pair.

The engine (`embedkit.tuning._engine`), the plans (`embedkit.tuning._plans`), the finish
(`embedkit.tuning._finish`) and a fine-tuning head's sizing all read the same state, so a
measurement made once (a probe, a fit, a refit) informs every later estimate of that pair, and
the margin is applied in one place (`PairState.seconds`).

A fit's cost is counted in **units of work**: a head that knows its own (`fit_work`: a
fine-tuning head counts training steps) says so; any other pipeline counts ``rows ** 1.1``,
times its head's ``epochs`` where it has one. A state keeps what a fit pays whatever its size
(``overhead``: loading a model), the seconds per unit of work of its largest measured fit
(the dearer of fits of about the same work), seconds per predicted row and bytes of memory a
fit grows the process by; and the ``margin`` its estimates carry: `MARGIN` for what this
machine measured, none for a cost only scaled from another pair's (its probe then measures
it); and whether that probe of its own is still due.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..registry import REPRESENTATIONS
from ._settings import ENCODER, GROWTH, MARGIN

__all__ = ["PairState", "SizesItself", "States", "encoder_ratio", "head_of", "predict_work",
           "sample_seconds", "timed_pass", "work_of"]


@runtime_checkable
class SizesItself(Protocol):
    """What the search reads of a head that sizes its own recipe to the time it is given
    (fine-tuning, SetFit: `embedkit.heads.finetune.sizing.SizedForBudget` implements it, with
    what it means); a head without it costs ``rows ** 1.1`` a unit of work, times its epochs
    (`work_of`), and is fitted as set."""

    def length_for(self, docs) -> int: ...
    def fit_work(self, n_rows: int) -> float: ...
    def predict_work(self, n_rows: int) -> float: ...
    def rows_after_training(self, n_rows: int) -> int: ...
    def compute(self) -> float: ...
    def probe_recipe(self, steps: int, n_rows: int) -> tuple[dict, int] | None: ...
    def sized_for(self, n_rows: int, seconds: float, cost) -> tuple[dict, int] | None: ...
    def gain_share(self, params: dict, rows: int, n_rows: int, classes: int) -> float: ...
    def least_work(self, n_rows: int) -> float: ...
    def least_said(self, n_rows: int) -> str: ...
    def fit_memory(self) -> float: ...
    def batched_for(self, room: float) -> dict | None: ...


def encoder_ratio(representation: str) -> float:
    """A frozen representation's time a document over the prologue encoder's (registry costs)."""
    return REPRESENTATIONS[representation].cost / REPRESENTATIONS[ENCODER].cost


def head_of(pipe):
    """The head of a pipeline (its last step), or ``pipe`` itself where it is one estimator."""
    return pipe.steps[-1][1] if hasattr(pipe, "steps") else pipe


def work_of(pipe, rows: int) -> float:
    """Units of work of fitting ``pipe`` on ``rows`` documents."""
    head = head_of(pipe)
    if isinstance(head, SizesItself):
        return float(head.fit_work(rows))
    epochs = head.get_params().get("epochs") if hasattr(head, "get_params") else None
    return max(rows, 1) ** 1.1 * (epochs if isinstance(epochs, int) and epochs > 0 else 1)


def predict_work(pipe, rows: int) -> float | None:
    """Units of work of predicting ``rows`` documents, for a head that counts it; else None."""
    head = head_of(pipe)
    return float(head.predict_work(rows)) if isinstance(head, SizesItself) else None


def sample_seconds(encoder, sample) -> float:
    """Seconds a document, measured (with the margin), from encoding ``sample`` (into
    ``encoder``'s cache: a pass after it skips them)."""
    began = time.monotonic()
    encoder.transform(sample)
    return MARGIN * (time.monotonic() - began) / len(sample)


def timed_pass(encoder, docs, per_doc: float, left=None) -> tuple[int, float]:
    """Encode ``docs`` (into ``encoder``'s cache) in chunks of about 10 s at ``per_doc`` seconds a
    document, so Ctrl-C loses one: (documents encoded, seconds). With ``left`` (a callable: the
    seconds the search has left), it stops once the documents still to encode, at the pass's own
    rate so far, would not fit in them."""
    step, began = max(32, int(10 / max(per_doc, 1e-6))), time.monotonic()
    for done in range(step, len(docs) + step, step):
        encoder.transform(docs[done - step:done])
        spent = time.monotonic() - began
        if left is not None and done < len(docs) and spent / done * (len(docs) - done) > left():
            return done, spent
    return len(docs), time.monotonic() - began


@dataclass
class PairState:
    """What one pair costs: ``overhead`` seconds per fit, ``rate`` seconds per unit of work (that
    of the largest fit measured, ``rate_work`` units), ``predict_rate`` seconds per predicted
    row, and the ``margin`` its estimates carry (`MARGIN` once measured here; 1 for a cost
    scaled from another pair)."""

    overhead: float = 0.0
    rate: float = math.nan
    rate_work: float = 0.0
    predict_rate: float = math.nan
    fits: int = 0
    margin: float = MARGIN
    # bytes the dearest measured fit grew the process by, and the rows it fitted (0: a head that
    # sizes itself, whose memory is its batches', whatever the rows)
    memory: float = math.nan
    memory_rows: int = 0
    # bytes its head declares a fit needs before one is measured (its `fit_memory`; NaN: none)
    memory_prior: float = math.nan
    # sized on a cost scaled from another pair's, or on none: its own probe comes first once the
    # order chooses it (`await_probe`; the engine records the probe's end, `probed`)
    probe_due: bool = False
    # its head as this data and machine set it (the length its documents need, the batch the
    # memory allows), once planned (`embedkit.tuning._plans.Plans.head`); where its model is not
    # on this machine, the error that says so
    head: Any = field(default=None, repr=False, compare=False)

    @property
    def measured(self) -> bool:
        return not math.isnan(self.rate)

    def observe(self, work: float, seconds: float) -> None:
        """A fit of ``work`` units took ``seconds``: measured here, it carries the margin. The
        rate is the largest fit's, the nearest to the fits ahead: what a fit pays whatever its
        rows weighs less as it grows (a probe's few hundred rows overstate a large fit of a
        cheap learner), and a cost that grows faster than its rows shows in it. Fits within half a
        growth step of each other's work (a factor ``sqrt(GROWTH)``) measure the same cost: the
        dearer stands, for the noise of two busy cores."""
        rate, near = max(seconds - self.overhead, 0.0) / max(work, 1e-9), math.sqrt(GROWTH)
        if math.isnan(self.rate) or work > near * self.rate_work:
            self.rate, self.rate_work = rate, work
        elif work * near >= self.rate_work:
            self.rate, self.rate_work = max(self.rate, rate), max(self.rate_work, work)
        self.fits, self.margin = self.fits + 1, MARGIN

    def observe_predict(self, rows: int, seconds: float) -> None:
        rate = seconds / max(rows, 1)
        self.predict_rate = rate if math.isnan(self.predict_rate) else max(self.predict_rate, rate)

    def observe_memory(self, rows: int, grown: float) -> None:
        """A fit on ``rows`` rows (0: its memory does not grow with them) grew the process by
        ``grown`` bytes: kept where it is the dearest a row (or the largest) measured."""
        if math.isnan(self.memory) or grown * max(self.memory_rows, 1) > self.memory * max(rows, 1):
            self.memory, self.memory_rows = grown, rows

    def declare_memory(self, need: float) -> None:
        """Its head declares a fit needs ``need`` bytes (its `fit_memory`): the need until a fit
        is measured."""
        self.memory_prior = need

    def await_probe(self) -> None:
        """Its cost is not measured on itself yet: a probe of its own measures it before a fit."""
        self.probe_due = True

    def probed(self) -> None:
        """Its probe ended (measured, or failed: the prior then stands)."""
        self.probe_due = False

    def set_head(self, head) -> None:
        """Its head as planned (or the error of its missing model): every later plan reads it."""
        self.head = head

    def forget_head(self) -> None:
        """Its documents changed (a table's twin read one column): planned again when asked."""
        self.head = None

    def memory_need(self, rows: int) -> float:
        """Bytes a fit on ``rows`` rows is expected to grow the process by, with the margin:
        the dearest measured, scaled linearly in the rows where it grows with them, down by at
        most one growth step (`GROWTH`: what a fit holds whatever its rows, a model's weights,
        would be missed further down); before any, its head's declared need (`memory_prior`),
        else NaN."""
        if math.isnan(self.memory):
            return MARGIN * self.memory_prior
        scale = max(rows / self.memory_rows, 1 / GROWTH) if self.memory_rows else 1.0
        return MARGIN * self.memory * scale

    def fit_seconds(self, work: float) -> float:
        """Seconds of a fit of ``work`` units as measured, without the margin (NaN before any
        measurement)."""
        return self.overhead + self.rate * work

    def seconds(self, work: float, predict_rows: int = 0, predict_units: float | None = None,
                margin: float | None = None) -> float:
        """Seconds of a fit of ``work`` units and predictions of ``predict_rows`` rows, with the
        state's margin (or ``margin``); predictions are counted in units of work where
        ``predict_units`` is given and no prediction was measured yet."""
        predict = (self.predict_rate * predict_rows if not math.isnan(self.predict_rate)
                   else self.rate * (predict_units or 0.0))
        return (self.margin if margin is None else margin) * (self.fit_seconds(work) + predict)

    def scaled(self, ratio: float) -> PairState:
        """This pair's cost for a model ``ratio`` times its compute, expected (no margin): what
        another pair is sized on before its own probe measures it."""
        return PairState(overhead=self.overhead * ratio, rate=self.rate * ratio, margin=1.0)

    def measure_steps(self, fit, works: tuple[float, float]) -> None:
        """Two timed fits of different work (``fit(i)`` runs the i-th): their difference is the
        rate, the rest the overhead; a noisy difference never makes the rate cheaper than half
        the larger fit's average."""
        times = []
        for i in range(2):
            began = time.monotonic()
            fit(i)
            times.append(time.monotonic() - began)
        (w0, w1), (t0, t1) = works, times
        rate = max((t1 - t0) / max(w1 - w0, 1e-9), 0.5 * t1 / max(w1, 1e-9))
        self.overhead = max(t0 - rate * w0, 0.0)
        self.rate = rate if math.isnan(self.rate) else max(self.rate, rate)
        self.fits, self.margin = self.fits + 2, MARGIN


class States(dict):
    """``{pair: PairState}``; a pair not measured yet gets an empty state."""

    def __missing__(self, key):
        state = self[key] = PairState()
        return state
