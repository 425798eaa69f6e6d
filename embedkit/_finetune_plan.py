"""Fine-tuning sized to the time left: the plan `embedkit.Tuner` fine-tunes with.

From the data and a measured probe, not from a table:

* ``max_length`` from the documents' own word-piece lengths (their 95th percentile, rounded up
  to a multiple of 8, between 32 and 256): short texts are not padded to 128, long ones are not
  cut at 64;
* the seconds of one training step, measured on this machine and device by short fits of the
  same recipe on random training rows (one untimed warm-up, then 2 and 6 steps: their
  difference is the step, the rest is loading the model);
* then the richest plan whose estimate fits in the time left: the registry recipe's epochs with
  every block trained, one epoch, one epoch with the lower half of the blocks frozen, and last
  a random subsample of the training rows (never below a quarter of them).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._budget import format_seconds
from .registry import HEADS

__all__ = ["Plan", "plan", "word_piece_lengths"]

#: steps of the two probe fits; their difference is timed
PROBE_STEPS = (2, 6)
#: seconds below which no probe is run (the plan is left out)
MIN_PROBE_SECONDS = 15.0
#: share of a training step that is the forward pass (prediction costs about this much)
FORWARD_SHARE = 0.4


def word_piece_lengths(tokenizer, docs) -> np.ndarray:
    """Word pieces per document under ``tokenizer``, special tokens included."""
    ids = tokenizer(list(docs), add_special_tokens=True, truncation=False,
                    return_attention_mask=False, return_token_type_ids=False,
                    verbose=False)["input_ids"]
    return np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))


def _max_length(lengths: np.ndarray) -> int:
    p95 = float(np.percentile(lengths, 95)) if len(lengths) else 32.0
    return int(min(256, max(32, 8 * math.ceil(p95 / 8))))


def _timed_fit(search, build, rows) -> float:
    began = time.monotonic()
    build().fit(search.X_train[rows], search.y_train[rows])
    return time.monotonic() - began


def _probe(search, probe, batch: int, seed: int) -> tuple[float, float]:
    """Seconds a training step and seconds to load, from short fits of ``probe`` on random
    training rows: an untimed warm-up, then ``PROBE_STEPS`` steps; their difference is the steps."""
    rng, n = np.random.default_rng(seed), len(search.y_train)
    warm, short, long = (rng.choice(n, s * batch, replace=False) for s in (1, *PROBE_STEPS))
    try:  # the first fit pays one-time costs (imports, kernels): it is not timed
        _timed_fit(search, probe, warm)
        t_short, t_long = _timed_fit(search, probe, short), _timed_fit(search, probe, long)
    except ValueError as err:  # e.g. a class missing from a probe slice: the real fit decides
        search.say(f"{search.clock.stamp()} fine-tuning probe: {err}")
        t_short = t_long = math.nan
    steps_probe = [math.ceil(len(r) / batch) for r in (short, long)]
    if math.isnan(t_long) or steps_probe[1] <= steps_probe[0]:
        step, overhead = (t_long if not math.isnan(t_long) else 1.0) / max(steps_probe[1], 1), 0.0
    else:  # the difference is the steps, the rest (loading the model) is paid once per fit; a
        # noisy difference never makes a step cheaper than half the long probe's average
        step = max((t_long - t_short) / (steps_probe[1] - steps_probe[0]), 0.5 * t_long / steps_probe[1])
        overhead = max(t_short - steps_probe[0] * step, 0.0)
    return step, overhead


@dataclass
class Plan:
    """A fine-tuning candidate's recipe: ``build()`` makes it, ``rows`` (None: all) are the
    training rows it fits on, ``estimate`` its seconds; ``fits`` False means no recipe fits and
    ``note`` says what would."""

    label: str
    build: Callable[[], Any]
    params: dict
    estimate: float
    rows: Any = None
    fits: bool = True
    note: str = ""
    #: the probe's measurement, (seconds a step, seconds to load), when one was made
    measured: tuple[float, float] | None = None


def plan(search, head: str, seed: int = 0,
         measured: tuple[float, float] | None = None) -> Plan:
    """The richest fine-tuning recipe for ``head`` (a `TransformerClassifier` entry) that fits
    in ``search``'s time left (`embedkit._search.Search.left`), measured on this machine.

    ``measured`` is an earlier plan's ``measured`` (seconds a step, seconds to load) for the
    same head and data: the probe is not run again and the recipe is chosen from it."""
    from sklearn.pipeline import Pipeline

    from .resources import load_transformer

    base = HEADS[head].factory()
    tokenizer, encoder, _ = load_transformer(base.model)
    depth = int(getattr(encoder.config, "num_hidden_layers", 6))
    del encoder
    lengths = word_piece_lengths(tokenizer, search.X_train)
    max_length = _max_length(lengths)
    batch = int(base.batch_size)
    recipe = {"max_length": max_length, "early_stopping": False, "random_state": seed}

    def build_with(**extra):
        params = {**recipe, **extra}

        def build():
            return Pipeline([("features", "passthrough"),
                             ("head", HEADS[head].factory().set_params(**params))])
        return build, params

    n = len(search.y_train)
    # the registry's rough guess, made at the recipe's max_length: longer documents cost more
    prior = (search.margin * HEADS[head].cost * max(n, 100) / 1000
             * max(1.0, max_length / int(base.max_length)))
    if measured is None and search.left() < max(MIN_PROBE_SECONDS, 0.25 * prior):
        # not even time to measure it
        enough = search.clock.elapsed() + prior + search.finish_reserve()
        return Plan(label=f"{head} (max_length={max_length}, epochs={base.epochs})",
                    build=lambda: None, params={}, estimate=prior, fits=False,
                    note=f"too little time left to measure it ({format_seconds(max(search.left(), 0))}); "
                         f"it needs roughly {format_seconds(prior)}, a budget of about "
                         f"{format_seconds(enough)}")
    if measured is None and (n <= PROBE_STEPS[1] * batch or prior <= 0.2 * search.left()):
        # small data, or surely affordable: the recipe itself is quicker than measuring it, and
        # its own fit time then sizes whatever comes after (its variants, the refit's seeds)
        build, params = build_with()
        label = f"{head} (max_length={max_length}, epochs={base.epochs}, seed 0)"
        return Plan(label=label, build=build, params={f"head__{a}": b for a, b in params.items()},
                    estimate=prior)
    if measured is None:
        measured = _probe(search, build_with(epochs=1)[0], batch, seed)
    step, overhead = measured
    search.say(f"{search.clock.stamp()} fine-tuning probe: {step:.2f} s a step of {batch} at "
               f"max_length {max_length} (95% of the documents fit), {overhead:.1f} s to load")

    predict = FORWARD_SHARE * step * math.ceil(len(search.y_valid) / batch)
    full_epochs = int(base.epochs)
    options = [(full_epochs, depth, n), (1, depth, n), (1, max(depth // 2, 1), n)]
    if base.fine_tune != "last_k":  # a full fine-tuning keeps its recipe; only epochs and rows move
        options = [(full_epochs, None, n), (1, None, n)]

    def cost(epochs, k, rows):
        share = 1.0 if k is None else (FORWARD_SHARE + (1 - FORWARD_SHARE) * k / depth)
        return search.margin * (overhead + epochs * math.ceil(rows / batch) * step * share + predict)

    left = search.left()
    chosen = next(((e, k, r) for e, k, r in options if cost(e, k, r) <= left), None)
    if chosen is None:  # a subsample of the rows: the largest that fits, at least a quarter
        e, k, _ = options[-1]
        per_row = (cost(e, k, n) - cost(e, k, 0)) / n
        rows = int((left - cost(e, k, 0)) / per_row) if per_row > 0 else 0
        if rows >= max(n // 4, 8 * batch):
            chosen = (e, k, rows)
    if chosen is None:
        e, k, r = options[0]
        enough = search.clock.elapsed() + cost(*options[0]) + search.finish_reserve()
        worst = cost(*options[-1])
        return Plan(label=f"{head} (max_length={max_length}, epochs={e})", build=lambda: None,
                    params={}, estimate=worst, fits=False, measured=measured,
                    note=f"one fit needs about {format_seconds(worst)} even with one epoch and "
                         f"half the blocks frozen; a budget of about {format_seconds(enough)} "
                         "would include the full recipe")
    epochs, k, rows = chosen
    extra = {"epochs": epochs, **({} if k is None else {"k": k})}
    build, params = build_with(**extra)
    shown = {"max_length": max_length, "epochs": epochs, **({} if k is None else {"k": k}),
             **({"rows": rows} if rows < n else {})}
    label = f"{head} (" + ", ".join(f"{a}={b}" for a, b in shown.items()) + ", seed 0)"
    return Plan(label=label, build=build, params={f"head__{a}": b for a, b in params.items()},
                estimate=cost(*chosen), rows=search.sample_rows(rows) if rows < n else None,
                measured=measured)
