"""What each pair of a budgeted search costs on this machine: one record per pair.

The search (`embedkit.tuning._engine`), its schedule (`embedkit.tuning._schedule`), the refit and the seeds of
the finish (`embedkit.tuning`) and a fine-tuning head's sizing all read the same record, so a
measurement made once (a probe, a fit, a refit) informs every later estimate of that pair.

A fit's cost is counted in **units of work**: a head that knows its own (`fit_work`: a
fine-tuning head counts training steps) says so; any other pipeline counts ``rows ** 1.1``,
times its head's ``epochs`` where it has one. A record keeps what a fit pays whatever its size
(``overhead``: loading a model), the dearest measured seconds per unit of work, and seconds per
predicted row.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

__all__ = ["MARGIN", "CostRecord", "Costs", "predict_work", "sample_seconds", "timed_pass",
           "work_of"]

#: estimates are the record's measurement times this margin
MARGIN = 1.25


def _head(pipe):
    return pipe.steps[-1][1] if hasattr(pipe, "steps") else pipe


def work_of(pipe, rows: int) -> float:
    """Units of work of fitting ``pipe`` on ``rows`` documents."""
    head = _head(pipe)
    if hasattr(head, "fit_work"):
        return float(head.fit_work(rows))
    epochs = head.get_params().get("epochs") if hasattr(head, "get_params") else None
    return max(rows, 1) ** 1.1 * (epochs if isinstance(epochs, int) and epochs > 0 else 1)


def predict_work(pipe, rows: int) -> float | None:
    """Units of work of predicting ``rows`` documents, for a head that counts it; else None."""
    head = _head(pipe)
    return float(head.predict_work(rows)) if hasattr(head, "predict_work") else None


def sample_seconds(encoder, sample) -> float:
    """Seconds a document (with the margin), from encoding ``sample`` (into ``encoder``'s cache:
    a pass after it skips them)."""
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
class CostRecord:
    """What one pair cost: ``overhead`` seconds per fit, ``rate`` seconds per unit of work (the
    dearest measured), ``predict_rate`` seconds per predicted row."""

    overhead: float = 0.0
    rate: float = math.nan
    predict_rate: float = math.nan
    fits: int = 0

    @property
    def measured(self) -> bool:
        return not math.isnan(self.rate)

    def observe(self, work: float, seconds: float) -> None:
        """A fit of ``work`` units took ``seconds``."""
        rate = max(seconds - self.overhead, 0.0) / max(work, 1e-9)
        self.rate = rate if math.isnan(self.rate) else max(self.rate, rate)
        self.fits += 1

    def observe_predict(self, rows: int, seconds: float) -> None:
        rate = seconds / max(rows, 1)
        self.predict_rate = rate if math.isnan(self.predict_rate) else max(self.predict_rate, rate)

    def fit_seconds(self, work: float) -> float:
        """Seconds of a fit of ``work`` units (NaN before any measurement)."""
        return self.overhead + self.rate * work

    def seconds(self, work: float, predict_rows: int = 0, predict_units: float | None = None,
                margin: float = MARGIN) -> float:
        """Seconds of a fit of ``work`` units and predictions of ``predict_rows`` rows, with
        ``margin``; predictions are counted in units of work where ``predict_units`` is given
        and no prediction was measured yet."""
        predict = (self.predict_rate * predict_rows if not math.isnan(self.predict_rate)
                   else self.rate * (predict_units or 0.0))
        return margin * (self.fit_seconds(work) + predict)

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
        self.fits += 2


class Costs(dict):
    """``{pair: CostRecord}``; a pair not measured yet gets an empty record."""

    def __missing__(self, key):
        record = self[key] = CostRecord()
        return record
