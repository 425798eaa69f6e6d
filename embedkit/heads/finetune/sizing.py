"""How much fine-tuning a time budget buys: the recipe a fine-tuning head sizes for itself.

A budgeted search (`embedkit.Tuner`) measures what one unit of training work costs on its
machine and device; the head says how much work a fit is and which cheaper recipes it has, and
picks the richest one that fits the seconds it is given:

* **work** of a fit: training steps (epochs x batches) x ``batch_size / 32`` x the share of the
  network that is trained (the forward pass through frozen blocks still runs) x
  ``max_length / 64``: a unit is one step of 32 documents of 64 word pieces;
* **compute** of the encoder (blocks x width squared), so a unit measured on one encoder
  estimates another's before it is measured;
* **recipes**, richest first: its own epochs with its blocks trained; one epoch; that with the
  lower half of the blocks frozen (``fine_tune="last_k"`` only); then the cheapest of them on as
  many rows as fit, down to ``MIN_ROWS`` (or all); only then, as a last resort, the same cut
  to ``SHORT_LENGTH`` word pieces where the documents call for more (the start of a document is
  what the time buys), on all rows, then on fewer;
* **max_length** from the documents' own word-piece lengths (their 95th percentile, rounded up
  to a multiple of 8, between 32 and 256);
* **the share of the gain** a cut recipe is expected to keep (`gain_share`): accuracy does not
  fall with the work a recipe drops but far more slowly (a pretrained encoder learns most of a
  task in its first epoch), and a subsample costs little while it holds enough examples of
  every class;
* **memory** of a fit (`fit_memory`), before anything is loaded: the encoder's weights, with
  their gradients and AdamW's two moments where they are trained, and what the trained blocks
  keep for the backward pass of the largest batch; a search with less memory than that halves
  the batch and doubles the gradient accumulation (`batched_for`: the same effective batch, the
  same work), down to one document a batch.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from ...data.documents import CHARS_PER_TOKEN, within_reach

__all__ = ["FORWARD_SHARE", "REFERENCE_BATCH", "REFERENCE_LENGTH", "SizedForBudget", "compute",
           "fewest_rows", "fit_memory", "fit_work", "gain_share", "least_work", "length_for",
           "parameters", "predict_work", "rate_from_pass", "sized_for"]

#: share of a training step that is the forward pass (a frozen block, or prediction, costs this)
FORWARD_SHARE = 0.4
#: the max_length and batch one unit of work is counted at
REFERENCE_LENGTH, REFERENCE_BATCH = 64, 32
#: the shortest max_length a recipe is cut to when the time left cannot pay for the data's own
SHORT_LENGTH = 64
#: the fewest rows a recipe is cut to (eight batches at least)
MIN_ROWS = 1000
#: a cut recipe keeps (its work / its own recipe's, on every row) ** this of the gain: one epoch
#: of two keeps 84%, half the blocks trained too 77% (from the tuning runs' validation scores of
#: cut recipes: pipelines/benchmarks/results/tune_budget.md)
WORK_EXPONENT = 0.25
#: a subsample keeps the whole gain from this many training rows per class, less below (in
#: proportion): a slice with a few hundred examples of every class is most of what fine-tuning
#: needs, one with far fewer of some classes is not (the same validation scores)
ROWS_PER_CLASS = 500
#: bytes a weight of the encoder takes in float32 while it is trained (itself, its gradient,
#: AdamW's two moments: 16; and what the load and the update hold beside them for a moment) and
#: while it is not; a trained block keeps for the backward pass, per word piece of a batch, this
#: many bytes times its width (the inputs of its linear maps, its activation, its dropout masks)
#: and this many times its attention heads times the batch's length (the attention weights,
#: before and after the softmax and the dropout); and what any fit holds beside (the tokenized
#: documents, the trainer). Fitted on the nine fits of `pipelines/benchmarks/bench_memory.py`
#: (MiniLM and mpnet, fine-tuning and SetFit, 64 to 256 word pieces, batches of 4 to 32 texts):
#: least squares gave 1.5 times the 16 bytes a trained weight, 0.7 times 70 a width, 2 times 9
#: an attention head and 180 MB, each within 11% of every fit; rounded up here
TRAINED_WEIGHT_BYTES, FROZEN_WEIGHT_BYTES = 25, 6
ACTIVATION_WIDTH, ACTIVATION_ATTENTION = 52, 19
FIT_OVERHEAD = 200 * 2**20


@functools.cache
def _config(model: str):
    """The encoder's shape: a named resource's declared one (no file read, nothing fetched),
    else its folder's config."""
    from types import SimpleNamespace

    from transformers import AutoConfig

    from ...storage.resources import RESOURCES, resource_path

    if "shape" in RESOURCES.get(model, {}):
        return SimpleNamespace(**RESOURCES[model]["shape"])
    source = str(resource_path(model)) if model in RESOURCES else str(model)
    return AutoConfig.from_pretrained(source, local_files_only=True)


def depth(model: str) -> int:
    """Transformer blocks of ``model`` (read from its config, not its weights)."""
    return int(getattr(_config(str(model)), "num_hidden_layers", 6))


def parameters(model: str) -> tuple[float, float]:
    """``(embeddings, blocks)``: the weights of ``model``'s embedding tables and of its
    transformer blocks, counted from its config (BERT-like shapes: the attention's four maps and
    the feed-forward's two, with their biases)."""
    config = _config(str(model))
    width = float(getattr(config, "hidden_size", 384))
    inner = float(getattr(config, "intermediate_size", 4 * width))
    tables = float(getattr(config, "vocab_size", 30522)) + float(
        getattr(config, "max_position_embeddings", 512)) + 2
    block = 4 * width * (width + 1) + 2 * width * inner + inner + width + 4 * width
    return tables * width, depth(model) * block


def fit_memory(head, sentences: int | None = None) -> float:
    """Bytes a fit of ``head`` grows the process by, whatever its rows: the encoder's weights
    (`TRAINED_WEIGHT_BYTES` each where trained, `FROZEN_WEIGHT_BYTES` where not), what its
    trained blocks keep for the backward pass of a batch of ``sentences`` texts (default its
    ``batch_size``) of ``max_length`` word pieces (`ACTIVATION_WIDTH`, `ACTIVATION_ATTENTION`),
    and what any fit holds beside (`FIT_OVERHEAD`)."""
    config = _config(str(head.model))
    tables, blocks = parameters(head.model)
    whole = getattr(head, "fine_tune", "full") == "full"  # SetFit trains its body whole
    share = 1.0 if whole else (_share(head) - FORWARD_SHARE) / (1 - FORWARD_SHARE)  # of the blocks
    embedded = TRAINED_WEIGHT_BYTES if whole else FROZEN_WEIGHT_BYTES
    weights = (embedded * tables + TRAINED_WEIGHT_BYTES * share * blocks
               + FROZEN_WEIGHT_BYTES * (1 - share) * blocks)
    length = int(head.max_length)
    tokens = (int(head.batch_size) if sentences is None else sentences) * length
    per_token = (ACTIVATION_WIDTH * float(getattr(config, "hidden_size", 384))
                 + ACTIVATION_ATTENTION * float(getattr(config, "num_attention_heads", 12)) * length)
    return FIT_OVERHEAD + weights + share * depth(head.model) * tokens * per_token


def _share(head) -> float:
    if head.fine_tune == "full":
        return 1.0
    if head.fine_tune == "none":
        return FORWARD_SHARE
    return FORWARD_SHARE + (1 - FORWARD_SHARE) * min(head.k, depth(head.model)) / depth(head.model)


def _per_step(head) -> float:
    return int(head.batch_size) / REFERENCE_BATCH * int(head.max_length) / REFERENCE_LENGTH


def fit_work(head, n_rows: int) -> float:
    """Units of training work of ``head.fit`` on ``n_rows`` documents."""
    steps = int(head.epochs) * math.ceil(n_rows / int(head.batch_size))
    return steps * _share(head) * _per_step(head)


def predict_work(head, n_rows: int) -> float:
    """Units of work of predicting ``n_rows`` documents (forward passes only)."""
    return FORWARD_SHARE * math.ceil(n_rows / int(head.batch_size)) * _per_step(head)


def compute(head) -> float:
    """The encoder's compute per token, up to a constant: its blocks times its width squared."""
    config = _config(str(head.model))
    return float(getattr(config, "num_hidden_layers", 6)) * float(getattr(config, "hidden_size", 384)) ** 2


def rate_from_pass(head, seconds_a_doc: float, encoder) -> float:
    """Seconds a unit of ``head``'s training work, bounded from below by ``encoder``'s measured
    forward pass (``seconds_a_doc``): a training step is its batch's forward pass over
    `FORWARD_SHARE`, at the head's ``max_length`` (the data's 95th percentile, so no shorter
    than the documents the pass measured), times their compute ratio."""
    forward = seconds_a_doc * REFERENCE_BATCH * REFERENCE_LENGTH / int(head.max_length)
    return compute(head) / compute(encoder) * forward / FORWARD_SHARE


def length_for(head, docs) -> int:
    """The ``max_length`` the documents call for: their 95th percentile of word pieces (special
    tokens included), rounded up to a multiple of 8, between 32 and 256."""
    from transformers import AutoTokenizer

    from ...storage.resources import RESOURCES, resource_path

    source = str(resource_path(head.model)) if head.model in RESOURCES else str(head.model)
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    ids = tokenizer(within_reach(list(docs), 256 * CHARS_PER_TOKEN), add_special_tokens=True,
                    truncation=False,
                    return_attention_mask=False, return_token_type_ids=False,
                    verbose=False)["input_ids"]
    lengths = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
    p95 = float(np.percentile(lengths, 95)) if len(lengths) else 32.0
    return int(min(256, max(32, 8 * math.ceil(p95 / 8))))


def _recipes(head) -> tuple[list[dict], list[dict]]:
    """Settings of ``head`` from its own recipe down to the cheapest, richest first: those that
    read the documents to the length they need, then those cut to `SHORT_LENGTH` word pieces
    (where the documents need more: a last resort, after every cut of epochs, blocks and rows)."""
    k = min(int(head.k), depth(head.model)) if head.fine_tune == "last_k" else None
    blocks = {} if k is None else {"k": k}
    full = [{"epochs": int(head.epochs), **blocks}, {"epochs": 1, **blocks}]
    if k is not None and k > 1:
        full.append({"epochs": 1, "k": max(k // 2, 1)})
    short = ([{**o, "max_length": SHORT_LENGTH} for o in full[1:]]
             if int(head.max_length) > SHORT_LENGTH else [])
    unique = [dict(t) for t in dict.fromkeys(tuple(o.items()) for o in full + short)]
    return ([o for o in unique if "max_length" not in o], [o for o in unique if "max_length" in o])


def gain_share(head, params: dict, rows: int, n_rows: int, classes: int) -> float:
    """The share of ``head``'s expected gain (its own recipe on all ``n_rows``) that the recipe
    ``params`` keeps on ``rows`` of them, with ``classes`` classes (`WORK_EXPONENT`,
    `ROWS_PER_CLASS`)."""
    from sklearn.base import clone

    work = clone(head).set_params(**params).fit_work(n_rows) / head.fit_work(n_rows)

    def covered(m: int) -> float:
        return min(1.0, m / max(classes, 1) / ROWS_PER_CLASS)

    return min(1.0, work ** WORK_EXPONENT * covered(rows) / covered(n_rows))


def least_work(head, n_rows: int) -> float:
    """Units of work of ``head``'s cheapest recipe on the fewest rows it is cut to."""
    from sklearn.base import clone

    full, short = _recipes(head)
    return fit_work(clone(head).set_params(**(short or full)[-1]), fewest_rows(head, n_rows))


def fewest_rows(head, n_rows: int) -> int:
    """The fewest of ``n_rows`` training rows a recipe is cut to: `MIN_ROWS` and eight batches at
    least, or all of them."""
    return min(n_rows, max(MIN_ROWS, 8 * int(head.batch_size)))


def sized_for(head, n_rows: int, seconds: float,
              cost: Callable[[float], float]) -> tuple[dict, int] | None:
    """``(params, rows)``: the richest recipe whose ``cost(work)`` (seconds, everything
    included) fits in ``seconds``, on all ``n_rows`` or, for the cheapest recipe, on as many
    rows as fit (at least `MIN_ROWS` and eight batches, or all of them); recipes that read the
    documents to the length they need first, whatever rows they keep, and only then those cut
    to `SHORT_LENGTH` word pieces. None when none fits."""
    from sklearn.base import clone

    from ..._budget import largest

    low = fewest_rows(head, n_rows)
    for recipes in _recipes(head):
        if not recipes:
            continue
        options = [(params, clone(head).set_params(**params)) for params in recipes]
        for params, option in options:
            if cost(fit_work(option, n_rows)) <= seconds:
                return params, n_rows
        params, cheapest = options[-1]
        if low < n_rows and cost(fit_work(cheapest, low)) <= seconds:
            return params, largest(low, n_rows, lambda m, h=cheapest: cost(fit_work(h, m)) <= seconds)
    return None


class SizedForBudget:
    """What a budgeted search (`embedkit.Tuner`) reads of a head that sizes itself: the work of a
    fit and of a prediction, the encoder's compute, the richest recipe that fits some seconds,
    the cheapest, the share of the gain a cut recipe keeps (this module's functions), and the
    fits of a few steps that measure a step (the search's probe, `probe_recipe`); a head whose
    recipe is cut another way overrides them, as `embedkit.heads.SetFitClassifier` does."""

    def length_for(self, docs) -> int:
        """The word pieces this head reads of each of ``docs``: its own ``max_length`` (a head
        that reads as far as the documents need overrides it)."""
        return int(self.max_length)

    def probe_recipe(self, steps: int, n_rows: int) -> tuple[dict, int] | None:
        """``(params, rows)`` of a fit of ``steps`` training steps on ``n_rows`` documents: one
        epoch on a slice of ``steps`` batches; None where that slice is every row (its first fit
        then measures it, as quickly)."""
        rows = steps * int(self.batch_size)
        return None if rows >= n_rows else ({"epochs": 1}, rows)

    def fit_work(self, n_rows: int) -> float:
        """Units of training work of a fit on ``n_rows`` documents."""
        return fit_work(self, n_rows)

    def predict_work(self, n_rows: int) -> float:
        """Units of work of predicting ``n_rows`` documents."""
        return predict_work(self, n_rows)

    def rows_after_training(self, n_rows: int) -> int:
        """Documents a fit on ``n_rows`` passes its encoder over once its training has ended,
        which a time limit on the training (``max_seconds``) must leave time for: none here, a
        fine-tuned model's fit ends with its training."""
        return 0

    def compute(self) -> float:
        """The encoder's compute per token, up to a constant (blocks x width squared)."""
        return compute(self)

    def sized_for(self, n_rows: int, seconds: float, cost) -> tuple[dict, int] | None:
        """The richest recipe of this head (``(params, rows)``) whose ``cost(work)`` fits in
        ``seconds``; None when none does."""
        return sized_for(self, n_rows, seconds, cost)

    def gain_share(self, params: dict, rows: int, n_rows: int, classes: int) -> float:
        """The share of this recipe's expected gain that ``params`` on ``rows`` of ``n_rows``
        keeps."""
        return gain_share(self, params, rows, n_rows, classes)

    def least_work(self, n_rows: int) -> float:
        """Units of work of this head's cheapest recipe on the fewest rows it is cut to."""
        return least_work(self, n_rows)

    def least_said(self, n_rows: int) -> str:
        """This head's cheapest recipe, in words."""
        return f"one epoch on {fewest_rows(self, n_rows):,} rows"

    def fit_memory(self) -> float:
        """Bytes a fit grows the process by, whatever its rows (`fit_memory`)."""
        return fit_memory(self)

    def batched_for(self, room: float) -> dict | None:
        """``{"batch_size": b, "gradient_accumulation": a}``: this head's batch halved, and its
        accumulation doubled (the same documents an update, the same work), until its fit
        (`fit_memory`) takes at most ``room`` bytes; ``{}`` where its own batch does, None where
        one document a batch does not."""
        from sklearn.base import clone

        batch, every = int(self.batch_size), int(self.gradient_accumulation)
        if self.fit_memory() <= room:
            return {}
        while batch > 1:
            batch, every = batch // 2, every * 2
            params = {"batch_size": batch, "gradient_accumulation": every}
            if clone(self).set_params(**params).fit_memory() <= room:
                return params
        return None
