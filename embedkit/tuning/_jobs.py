"""The jobs of a budgeted search: work that scores no model, run on a lane like a fit.

* `load_encoder`: the prologue's frozen encoder loaded, and its seconds a document measured on
  a sample of the documents (`embedkit.tuning._costs.sample_seconds`);
* `encode`: a frozen encoder's pass over documents, into the cache every model that reads it
  shares; it stops where its own rate shows the rest would not fit the time left;
* `prepare`: a step's one-time preparation (a distillation, a model's fetch; kept on disk);
* `probe`: a few timed training steps of a head that sizes itself (`embedkit.tuning._plans.probe_fits`).

Each returns a `embedkit.tuning._candidate.Job`; what its ``run`` returns (or raises) goes back to
the schedule (`embedkit.tuning._schedule.Schedule.tell`), which reads it.
"""

from __future__ import annotations

import time

import numpy as np

from ..base import with_cache
from ..registry import HEADS, REPRESENTATIONS
from ._candidate import Job
from ._costs import timed_pass
from ._plans import probe_fits

__all__ = ["encode", "load_encoder", "prepare", "probe"]


def _encoder(s, representation: str):
    encoder = REPRESENTATIONS[representation].factory()
    return encoder if s.asked.cache is None else with_cache(encoder, s.asked.cache)


def load_encoder(s, representation: str, estimate: float) -> Job:
    """Load ``representation`` and measure its seconds a document (without margin) on 64 of the
    documents after a warm-up batch of 8, seeded: ``run()`` returns ``(seconds a document,
    sampled positions, seconds a document it has never seen)``: the first through the cache,
    as the search's passes will run (documents cached by an earlier search cost nothing), the
    last without it, as predicting new documents will."""
    def run():
        encoder = _encoder(s, representation).fit(s.data.texts[:2])  # loads the model, once
        sample = np.random.default_rng(s.data.seed).choice(len(s.data.texts), min(72, len(s.data.texts)),
                                                      replace=False)
        encoder.transform(s.data.texts[sample[:8]])  # the first batch pays the kernels' warm-up
        sample = sample[8:] if len(sample) > 8 else sample
        began = time.monotonic()
        encoder.transform(s.data.texts[sample])
        cached = (time.monotonic() - began) / len(sample)
        if encoder.get_params().get("cache") is None:  # every pass was a fresh one
            return cached, sample, cached
        began = time.monotonic()
        encoder.set_params(cache=None).transform(s.data.texts[sample])
        return cached, sample, (time.monotonic() - began) / len(sample)

    return Job(f"{representation}: loading and timing it", run, estimate=estimate,
               kind="load", about=representation)


def encode(s, representation: str, index: np.ndarray, per_doc: float, estimate: float) -> Job:
    """A pass of ``representation`` over the documents at ``index`` into the cache, in chunks
    of about 10 s (on a Dask cluster, spread over its workers): ``run()`` returns ``(documents
    encoded, seconds, index)``; it stops early where its own rate shows the rest would not fit
    the time left."""
    def run():
        encoder = _encoder(s, representation).fit(s.data.texts[index[:2]])
        began = time.monotonic()
        if "cluster" in s.lanes:
            from ..cache import store_encoded

            docs = s.data.texts[index]
            store_encoded(encoder, list(docs), s.lanes["cluster"].encode(encoder, docs))
            return len(index), time.monotonic() - began, index
        done, seconds = timed_pass(encoder, s.data.texts[index], per_doc, s.time.left)
        return done, seconds, index

    return Job(f"{representation}: encoding {len(index):,} documents", run, estimate=estimate,
               kind="encode", about=representation)


def prepare(name: str, estimate: float) -> Job:
    """The one-time preparation of the registry step ``name`` (a fetch, a distillation)."""
    entry = REPRESENTATIONS.get(name) or HEADS[name]
    return Job(f"{name}: preparing it once", lambda: entry.factory().prepare(),
               estimate=estimate, kind="prepare", about=name)


def probe(s, c, plans, estimate: float) -> Job:
    """A few timed training steps of ``c``'s head, as ``plans`` set it (`Plans.head`), on its
    device."""
    return Job(f"{c.head}: measuring a training step", probe_fits(s, c, plans.head(c), plans.own(c)),
               lane=c.lane, estimate=estimate, kind="probe", about=c.pair)
