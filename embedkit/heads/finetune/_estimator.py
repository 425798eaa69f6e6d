"""Fine-tune a pretrained Transformer end to end as one scikit-learn estimator.

`TransformerClassifier` / `TransformerRegressor` own their tokenizer and encoder: they take raw
documents, put a small head (linear, MLP or attention pooling) on the encoder and train both
through `NeuralHead`'s skorch training assembly, customising its hooks: AdamW with separate
encoder/head learning rates, warm-up + linear decay, gradient accumulation, length-grouped
batches, a validation metric and early stopping. After fitting, ``transform`` gives the
fine-tuned encoder's features, so what the model learned can feed other heads, and
``save_pretrained`` writes a Hugging Face model folder.
"""

from __future__ import annotations

import math
import os
from functools import partial
from numbers import Real
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..._batching import run_batches
from ..._params import Interval, StrOptions, positive_int, validate_params
from ...base import store_params
from ...data.documents import CHARS_PER_TOKEN, validate_documents, within_reach
from ...machine import batch_settings, resolve_precision
from ...sequences import Sequences
from .._base import LEARNING_RATE, NeuralHead, finite_outputs
from .._data import HeadDataset, HeadInput
from .._tasks import NeuralClassifierMixin, NeuralRegressorMixin, ReadsText
from ._data import collate_token_ids
from ._module import FineTuneModule, freeze_encoder
from .sizing import SizedForBudget

__all__ = ["TransformerClassifier", "TransformerRegressor"]


def _torch_at_least(major: int, minor: int) -> bool:
    found = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    return found >= (major, minor)


class _FineTune(SizedForBudget, ReadsText, TransformerMixin, NeuralHead):
    _accepts = ("text",)
    _parameter_constraints: ClassVar[dict] = {
        **{k: v for k, v in NeuralHead._parameter_constraints.items()
           if k not in ("optimizer", "gradient_clip")},  # AdamW, no clipping: not parameters here
        "model": [str, os.PathLike],
        "fine_tune": [StrOptions({"full", "last_k", "none"})],
        "k": [positive_int()],  # against the model's depth: checked when it is loaded
        "head": [StrOptions({"linear", "mlp", "attention"})],
        "pooling": [StrOptions({"cls", "mean"})],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "head_lr": [LEARNING_RATE],
        "warmup_ratio": [Interval(Real, 0, 1, closed="left")],
        "gradient_accumulation": [positive_int()],
        "max_length": [positive_int(4)],  # room for the special tokens; the model's limit at load
        "trust_remote_code": ["boolean"],
        "output": [StrOptions({"pooled", "sequence"})],
        "precision": [StrOptions({"auto", "fp32", "bf16"})],
        "max_seconds": [None, Interval(Real, 0, None, closed="neither")],
    }
    max_seconds = None  # what a model saved before the parameter existed reads

    def __init__(self, model: str = "all-minilm-l6-v2", fine_tune: str = "full", k: int = 2,
                 head: str = "linear", pooling: str = "mean", dropout: float = 0.1,
                 lr: float = 5e-5, head_lr: float = 1e-3, warmup_ratio: float = 0.1,
                 weight_decay: float = 0.01, epochs: int = 3, batch_size: int = 16,
                 gradient_accumulation: int = 1, max_length: int = 128,
                 early_stopping="auto", validation_fraction: float = 0.1, patience: int = 2,
                 class_weight=None, random_state: int | None = 0, device: str = "auto",
                 trust_remote_code: bool = False, output: str = "pooled", verbose: int = 0,
                 precision: str = "auto", max_seconds: float | None = None):
        store_params(self, locals())

    def _as_input(self, X, *, reset: bool) -> HeadInput:
        if isinstance(X, Sequences) or hasattr(X, "lengths") or (
                hasattr(X, "dtype") and getattr(X, "ndim", 1) == 2 and X.dtype.kind in "fiub") or (
                hasattr(X, "tocsr")):
            raise ValueError(
                f"{type(self).__name__} takes raw documents (it owns its tokenizer and encoder) but "
                f"received {type(X).__name__} features. In a Pipeline put it after a 'passthrough' "
                "features step: Pipeline([('features', 'passthrough'), ('head', "
                f"{type(self).__name__}())])."
            )
        return HeadInput("text", validate_documents(X), 0)

    # -- model --------------------------------------------------------------------------------
    def _load(self):
        from ...storage.hf_folders import max_tokens
        from ...storage.resources import load_transformer

        tokenizer, encoder, source = load_transformer(
            self.model, trust_remote_code=self.trust_remote_code)
        limit = max_tokens(encoder.config)
        if limit and self.max_length > limit:
            raise ValueError(
                f"{type(self).__name__}(max_length={self.max_length}) exceeds the {limit} "
                f"positions of {self.model!r}; use max_length <= {limit}.")
        if tokenizer.pad_token_id is None:
            raise ValueError(f"the tokenizer of {self.model!r} has no padding token; set "
                             "tokenizer.pad_token (e.g. to its eos token) in a saved model folder.")
        return tokenizer, encoder, source

    def _build(self, encoder, n_outputs: int, device: str) -> FineTuneModule:
        frozen = freeze_encoder(encoder, self.fine_tune, self.k, type(self).__name__, self.model)
        n_params = sum(p.numel() for p in encoder.parameters())
        step = 6.0 * n_params * self.batch_size * self.max_length  # FLOPs of a training step
        self.precision_ = resolve_precision(self.precision, device, step)
        return FineTuneModule(encoder, n_outputs, self.head, self.pooling, float(self.dropout),
                              frozen, precision=self.precision_)

    def _tokenize(self, docs: list[str]) -> list[np.ndarray]:
        docs = within_reach(docs, int(self.max_length) * CHARS_PER_TOKEN)  # the rest is cut anyway
        enc = self.tokenizer_(docs, truncation=True, max_length=self.max_length,
                              return_attention_mask=False, return_token_type_ids=False)
        return [np.asarray(ids, dtype=np.int64) for ids in enc["input_ids"]]

    # -- NeuralHead.fit hooks -------------------------------------------------------------------
    def _build_module(self, inputs: HeadInput, n_outputs: int) -> FineTuneModule:
        """Load the pretrained tokenizer and encoder, freeze as asked, put the head on top."""
        self.tokenizer_, encoder, self.source_ = self._load()
        return self._build(encoder, n_outputs, self.device_)

    def _dataset(self, inputs: HeadInput, y_enc: np.ndarray):
        """Token ids of every document, padded per batch with the tokenizer's padding id (on a
        GPU to a multiple of 8 tokens: fewer distinct shapes, each of which cuDNN's attention
        plans once, and tensor-core-sized matrices)."""
        multiple = 8 if self.device_.startswith("cuda") else 1
        collate = partial(collate_token_ids, pad_id=self.tokenizer_.pad_token_id,
                          multiple=multiple)
        return HeadDataset(self._tokenize(inputs.data), y_enc), collate

    def _train_iterator(self, train, generator) -> dict:
        """Shuffled batches of similar lengths (`LengthGroupedBatches`)."""
        from ._data import LengthGroupedBatches

        lengths = [len(train[i][0]) for i in range(len(train))]  # train: dataset or its Subset
        # the batch sampler makes the batches
        return {"batch_sampler": LengthGroupedBatches(lengths, self.batch_size, generator),
                "batch_size": 1}

    def _optimizer(self) -> dict:
        """AdamW; encoder parameters train at ``lr``, the head at ``head_lr``; no weight decay
        on biases and normalisation weights (skorch's param groups: first matching pattern wins)."""
        groups = [("encoder.*bias", {"lr": self.lr, "weight_decay": 0.0}),
                  ("encoder.*[Nn]orm*", {"lr": self.lr, "weight_decay": 0.0}),
                  ("encoder.*", {"lr": self.lr}),
                  ("*bias", {"weight_decay": 0.0})]
        # the fused AdamW kernel (CPU and CUDA since torch 2.4) updates the weights in one pass,
        # several times faster than the loop over parameters (results/defaults.md)
        fused = self.device_.split(":")[0] in ("cpu", "cuda") and _torch_at_least(2, 4)
        return {"optimizer": torch.optim.AdamW, "optimizer__param_groups": groups,
                "optimizer__weight_decay": self.weight_decay, "lr": self.head_lr,
                **({"optimizer__fused": True} if fused else {})}

    def _callbacks(self, batches_per_epoch: int) -> list:
        """transformers' linear warm-up then linear decay, stepped once per optimizer step."""
        from transformers import get_linear_schedule_with_warmup

        from ._training import OptimizerStepLR

        steps = math.ceil(batches_per_epoch / self.gradient_accumulation) * self.epochs
        return [("lr_schedule", OptimizerStepLR(
            get_linear_schedule_with_warmup, num_warmup_steps=round(self.warmup_ratio * steps),
            num_training_steps=steps, step_every="batch"))]

    def _valid_scoring(self) -> list:
        """Validation accuracy (classifier), micro-F1 (multi-label) or R^2 (regressor) per epoch."""
        from skorch.callbacks import EpochScoring

        from ._training import valid_accuracy, valid_f1_micro, valid_r2

        if self._task != "classification":
            scorer, metric = valid_r2, "valid_r2"
        elif self.multilabel_:
            scorer, metric = valid_f1_micro, "valid_f1"
        else:
            scorer, metric = valid_accuracy, "valid_acc"
        return [(metric, EpochScoring(scorer, lower_is_better=False, name=metric))]

    def _net_class(self) -> tuple[type, dict]:
        """`FineTuneNet`: only trainable parameters, gradient accumulation."""
        from ._training import FineTuneNet

        return FineTuneNet, {"accumulate": self.gradient_accumulation}

    def _fitted(self, net, n_outputs: int) -> None:
        """Keep the module only (no optimizer state): the estimator pickles at model size."""
        self.module_ = net.module_.eval()
        self.dim_ = int(self.module_.encoder.config.hidden_size)
        self.n_outputs_ = n_outputs

    # -- inference ----------------------------------------------------------------------------
    def _run(self, docs: list[str], what: str):
        """Run the fitted module over ``docs`` with the package's encode loop
        (`embedkit._batching.run_batches`: length-sorted, dynamically padded batches on
        ``device_``): ``"logits"``, ``"pooled"`` features or token ``"sequence"`` vectors."""
        ids = self._tokenize(docs) if docs else []
        module = self.module_.eval()

        def forward(input_ids, mask):  # device tensors: the loop copies them back unblocking
            attention_mask = torch.ones_like(input_ids) if mask is None else mask.long()
            if what == "logits":
                return module(input_ids=input_ids, attention_mask=attention_mask)
            hidden, pooled, _ = module.features(input_ids=input_ids, attention_mask=attention_mask)
            return pooled if what == "pooled" else hidden

        device = self._device()
        if device.split(":")[0] == "cpu":  # as measured on CPU: no bound on padded tokens
            size, budget = max(self.batch_size, 64), None
        else:  # an accelerator: the encode loop's batches for it
            size, budget = batch_settings(device)
        batches = run_batches(ids, forward, device=device, batch_size=size, max_tokens=budget,
                              pad_id=self.tokenizer_.pad_token_id, desc=type(self).__name__)
        if what == "sequence":
            steps: list = [None] * len(ids)
            for rows, hidden in batches:
                for j, i in enumerate(rows):
                    steps[i] = hidden[j, : len(ids[i])]
            tokens = [self.tokenizer_.convert_ids_to_tokens(r.tolist()) for r in ids]
            return Sequences.from_rows(steps, tokens=tokens, dim=self.dim_)
        out = np.zeros((len(ids), self.n_outputs_ if what == "logits" else self.dim_), np.float32)
        for rows, part in batches:
            out[rows] = part
        return out

    def _forward(self, X) -> np.ndarray:
        check_is_fitted(self, "module_")
        return finite_outputs(self._run(self._as_input(X, reset=False).data, "logits"),
                               type(self).__name__)

    def transform(self, X):
        """The fine-tuned encoder's features of ``X``.

        Returns a float32 array ``(n_docs, hidden)`` pooled as the model pools (``pooling``, or
        the learned attention weights for ``head="attention"``), or for ``output="sequence"`` a
        `Sequences` of token vectors (special tokens included) with the word pieces attached.
        """
        check_is_fitted(self, "module_")
        validate_params(self, only=("output",))  # the one parameter read again after fit
        docs = self._as_input(X, reset=False).data
        return self._run(docs, "sequence" if self.output == "sequence" else "pooled")

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the pooled feature columns."""
        check_is_fitted(self, "module_")
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}_dim{i}" for i in range(self.dim_)], dtype=object)

    # -- sizing for a time budget (`.sizing.SizedForBudget`) ---------------------------------
    def ready(self) -> bool:
        """Whether the model is on this machine (a named resource fetched or installed)."""
        from ...storage.resources import RESOURCES, present

        return str(self.model) not in RESOURCES or present(str(self.model))

    def prepare(self) -> None:
        """Fetch the model if it is a named resource not fetched yet (once, kept on disk)."""
        from ...storage.resources import RESOURCES, fetch

        if str(self.model) in RESOURCES:
            fetch(str(self.model))

    def length_for(self, docs) -> int:
        """The ``max_length`` that ``docs`` call for (95% of them fit)."""
        from .sizing import length_for

        return length_for(self, docs)

    def save_pretrained(self, path) -> Path:
        """Write a Hugging Face model folder: the fine-tuned encoder (safetensors + config),
        the tokenizer, ``embedkit_head.safetensors`` (pooling/head weights) and ``embedkit.json``
        (embedkit parameters, label mapping). ``AutoModel.from_pretrained(path)`` loads the
        encoder; ``load(path)`` restores this estimator.
        """
        from ._persist import save_pretrained

        check_is_fitted(self, "module_")
        return save_pretrained(self, path)

    @classmethod
    def load(cls, path, device: str = "auto"):
        """Restore an estimator written by `save_pretrained` (safetensors only, no pickle).

        Parameters
        ----------
        path : str or Path
        device : {"auto", "cpu", "cuda"}, default="auto"
        """
        from ._persist import load_pretrained

        return load_pretrained(cls, path, device)

    def _to_state(self, folder):
        """State for `embedkit.save`: the model folder of `save_pretrained`, written to ``folder``."""
        check_is_fitted(self, "module_")
        self.save_pretrained(folder)
        return {"model": self.model, "device": self.device}

    @classmethod
    def _from_state(cls, state: dict, folder):
        """Inverse of `_to_state`: `load` the model folder, with the original ``model``/``device``.

        A folder whose parameters ask for ``trust_remote_code`` is refused before anything loads.
        """
        import json

        params = json.loads((folder / "embedkit.json").read_text()).get("params", {})
        if params.get("trust_remote_code", False) is not False:
            raise ValueError(f"{folder} asks for trust_remote_code; embedkit model folders never "
                             "run code shipped with a model.")
        est = cls.load(folder, device=state["device"])
        est.model = state["model"]  # a refit starts again from the pretrained model
        return est


_PARAMS_DOC = """
    Parameters
    ----------
    model : str, default="all-minilm-l6-v2"
        A named resource (the packaged MiniLM), a local Hugging Face model folder (safetensors
        weights), or a hub id where the network allows.
    fine_tune : {"full", "last_k", "none"}, default="full"
        Train every encoder weight, only the top ``k`` Transformer blocks (and anything above
        them), or none (a frozen encoder under a trained head). Frozen parts run in eval mode.
    k : int, default=2
        Number of top blocks trained with ``fine_tune="last_k"``.
    head : {"linear", "mlp", "attention"}, default="linear"
        On the pooled vector: one linear layer, or a hidden GELU layer of the encoder's width
        then a linear layer; "attention" learns attention-pooling weights over the tokens
        (replacing ``pooling``) then a linear layer.
    pooling : {"cls", "mean"}, default="mean"
        The first token's vector, or the masked mean of the token vectors.
    dropout : float, default=0.1
        Dropout on the pooled vector (and in the MLP head).
    lr : float in (0, 1], default=5e-5
        Learning rate of the encoder.
    head_lr : float in (0, 1], default=1e-3
        Learning rate of the head (and attention pooling).
    warmup_ratio : float, default=0.1
        Fraction of the optimizer steps with a linear warm-up from 0; the rate then decays
        linearly to 0 at the last step (transformers' ``get_linear_schedule_with_warmup``, one
        step per weight update).
    weight_decay : float, default=0.01
        AdamW weight decay (not applied to biases and normalisation weights).
    epochs : int, default=3
        Maximum number of epochs.
    batch_size : int, default=16
    gradient_accumulation : int, default=1
        Update the weights every this many batches (effective batch ``batch_size * this``).
    max_length : int >= 4, default=128
        Documents are truncated to this many word pieces (special tokens included); at most
        the model's position limit.
    early_stopping : bool or "auto", default="auto"
        Hold out ``validation_fraction`` (stratified for classification), record the validation
        loss and metric per epoch, stop after ``patience`` epochs without improvement of the
        validation loss and keep the best epoch's weights. "auto" turns it on from 1,000 rows.
    validation_fraction : float, default=0.1
    patience : int, default=2
    class_weight : None, "balanced" or dict, default=None
        Weights of the classes in the loss (classifier only).
    random_state : int, default=0
        Seeds the head's initialisation, dropout, shuffling and the validation split: two fits
        on CPU give identical weights.
    device : {"auto", "cpu", "cuda", "mps"}, default="auto"
        "auto" uses CUDA when available, else the CPU.
    trust_remote_code : bool, default=False
        Allow models that ship their own Python code (only for models you trust).
    output : {"pooled", "sequence"}, default="pooled"
        What ``transform`` returns: pooled float32 features ``(n_docs, hidden)`` or a
        `Sequences` of the fine-tuned token vectors with their word pieces.
    verbose : int, default=0
        1: one line per epoch (loss, validation score), plus a progress bar when stderr is a
        terminal; 2: the progress bar always.
    precision : {"auto", "fp32", "bf16"}, default="auto"
        Arithmetic of training and inference: "bf16" runs the encoder and head under bfloat16
        autocast (weights, gradients and optimizer state stay float32), "fp32" in float32.
        "auto": bf16 on a CUDA GPU with bf16 units when a training step is large (6 x the
        encoder's parameters x ``batch_size`` x ``max_length`` >= 1e12 FLOPs, e.g. a base-size
        model at batch 16 x 128 tokens), fp32 otherwise (CPU, MPS, small models on short texts,
        where a step is bound by kernel launches and autocast's casts cost more than bf16
        saves); speed and accuracy of both in ``pipelines/benchmarks/results/bench_gpu.md``.
    max_seconds : float > 0 or None, default=None
        End the training once it has run this many seconds (at the end of a batch;
        ``n_steps_`` says how many optimizer steps ran), with early stopping's best epoch's
        weights where one was validated, else the weights as trained so far: a fit that must
        end by a deadline (`embedkit.tune`'s refit) keeps the steps it reached. Where it stops,
        the model depends on the machine's speed, not only the seed. None: every epoch.{threshold}

    Attributes
    ----------
    module_ : FineTuneModule
        The fine-tuned encoder with its head.
    tokenizer_ : transformers tokenizer
    history_ : list of dict
        Per epoch: ``train_loss``, and with early stopping ``valid_loss`` and ``valid_acc``
        (classifier), ``valid_f1`` (micro-F1, multi-label classifier) or ``valid_r2``
        (regressor); `plot_history` draws it.
    dim_ : int
        Width of the features ``transform`` returns.
    device_ : str
        The device ``device`` resolved to at fit (or at `load`), where the model trains and
        predicts.
    precision_ : {"fp32", "bf16"}
        The precision ``precision`` resolved to for ``device_``.
    n_steps_ : int
        Optimizer steps the training ran.
    out_of_time_ : bool
        Whether ``max_seconds`` ended the training before its last epoch.

    Notes
    -----
    Pickling a fitted estimator (pickle, joblib) stores the fine-tuned weights and tokenizer
    with it, so the file is as large as the model; as with any pickle, only load files you
    wrote. `save_pretrained` / `load` is the safe exchange format (safetensors + JSON).
"""


class TransformerClassifier(NeuralClassifierMixin, ClassifierMixin, _FineTune):
    """Fine-tune a pretrained Transformer with a classification head, end to end.

    It takes raw documents: it owns the tokenizer (batches are padded to their longest row)
    and the encoder. In a Pipeline or grid that swaps features steps, give it a
    ``"passthrough"`` features step. After fitting, ``transform`` returns the fine-tuned
    encoder's features, to feed other heads. Multi-label targets (a 0/1 indicator matrix or
    a list of label lists) train one sigmoid per label, as every embedkit classifier does
    (`MLPClassifier`).
    {params}
    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> docs = ["a great film", "loved it", "awful plot", "boring and bad"] * 4
    >>> y = ["pos", "pos", "neg", "neg"] * 4
    >>> clf = TransformerClassifier(epochs=2, max_length=32, head_lr=3e-3)
    >>> pipe = Pipeline([("features", "passthrough"), ("head", clf)]).fit(docs, y)
    >>> pipe.predict(["what a great film"]).tolist()
    ['pos']
    >>> clf.transform(["what a great film"]).shape
    (1, 384)
    """


class TransformerRegressor(NeuralRegressorMixin, RegressorMixin, _FineTune):
    """Fine-tune a pretrained Transformer with a regression head (mean squared error).

    Parameters as `TransformerClassifier` (``class_weight`` does not apply; the validation
    metric is R^2).
    {params}
    Examples
    --------
    >>> reg = TransformerRegressor(epochs=2, max_length=32)
    >>> reg.fit(["tiny", "small", "big", "huge"], [0.0, 1.0, 2.0, 3.0]).predict(["large"]).shape
    (1,)
    """


_THRESHOLD_DOC = """
    threshold : float in (0, 1) or "tune", default="tune"
        Multi-label targets only: the probability above which a label is predicted; "tune"
        holds out ``validation_fraction`` of the rows and picks the value maximising micro-F1
        on them (`embedkit.data.targets.tune_threshold`)."""
TransformerClassifier.__doc__ = TransformerClassifier.__doc__.replace(
    "{params}", _PARAMS_DOC.replace("{threshold}", _THRESHOLD_DOC))
TransformerRegressor.__doc__ = TransformerRegressor.__doc__.replace(
    "{params}", _PARAMS_DOC.replace("{threshold}", ""))
