"""Fine-tune a pretrained Transformer end to end as one scikit-learn estimator.

`TransformerClassifier` / `TransformerRegressor` own their tokenizer and encoder: they take raw
documents, put a small head (linear, MLP or attention pooling) on the encoder and train both
with skorch (AdamW with separate encoder/head learning rates, warm-up + linear decay, gradient
accumulation, early stopping). After fitting, ``transform`` gives the fine-tuned encoder's
features, so what the model learned can feed other heads, and ``save_pretrained`` writes a
Hugging Face model folder.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted
from torch import nn

from ..base import NeuralClassifierMixin, NeuralHead, NeuralRegressorMixin, store_params
from ..documents import validate_documents
from ..sequences import Sequences, masked_pool
from ._torch import mlp

__all__ = ["TransformerClassifier", "TransformerRegressor"]

FINE_TUNE = ("full", "last_k", "none")
HEADS = ("linear", "mlp", "attention")
POOLINGS = ("cls", "mean")
_META = "embedkit.json"
_HEAD_WEIGHTS = "embedkit_head.safetensors"


# ---------------------------------------------------------------------------------------------
# torch pieces
# ---------------------------------------------------------------------------------------------


class FineTuneModule(nn.Module):
    """Encoder + pooling + head. ``forward(input_ids, attention_mask)`` returns float32 outputs.

    Submodules named in ``frozen`` (all their parameters frozen) stay in eval mode while the
    rest trains, so a frozen encoder or frozen lower layers behave exactly as at inference
    (no dropout). On CUDA the encoder and head run under bf16 autocast.
    """

    def __init__(self, encoder, n_outputs: int, head: str, pooling: str, dropout: float,
                 frozen: tuple[str, ...] = (), autocast: bool = False):
        super().__init__()
        self.encoder = encoder
        hidden = int(encoder.config.hidden_size)
        self.pooling = pooling
        self.frozen = tuple(frozen)
        self.autocast = bool(autocast)
        self.attention = nn.Linear(hidden, 1) if head == "attention" else None
        self.dropout = nn.Dropout(dropout)
        hidden_layers = (hidden,) if head == "mlp" else ()
        self.head = mlp(hidden, hidden_layers, n_outputs, "gelu", dropout)

    def train(self, mode: bool = True):
        super().train(mode)
        for name in self.frozen:
            self.get_submodule(name).train(False)
        return self

    def _autocast(self, device: torch.device):
        enabled = self.autocast and device.type == "cuda"
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)

    def features(self, input_ids, attention_mask):
        """``(hidden states (B, T, H), pooled (B, H), mask (B, T))``, float32."""
        mask = attention_mask.bool()
        with self._autocast(input_ids.device):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            if self.attention is not None:
                scores = self.attention(hidden).squeeze(-1).float()
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
                weights = torch.softmax(scores, dim=1) * mask  # all-padding rows pool to zero
                pooled = (weights.unsqueeze(-1) * hidden.float()).sum(dim=1)
            elif self.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                pooled = masked_pool(hidden.float(), mask, "mean")
        return hidden.float(), pooled.float(), mask

    def forward(self, input_ids, attention_mask):
        _, pooled, _ = self.features(input_ids, attention_mask)
        with self._autocast(input_ids.device):
            out = self.head(self.dropout(pooled))
        return out.float()


class TokenDataset(torch.utils.data.Dataset):
    """Token-id rows (unpadded int64 arrays) and targets; `PadCollate` batches them."""

    def __init__(self, ids: list, y=None):
        self.ids = ids
        self.y = np.zeros(len(ids), dtype=np.float32) if y is None else y

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return self.ids[i], self.y[i]


class PadCollate:
    """Pad a batch to its longest row (dynamic padding) -> ``({input_ids, attention_mask}, y)``."""

    def __init__(self, pad_id: int):
        self.pad_id = int(pad_id)

    def __call__(self, items):
        rows, ys = zip(*items)
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        width = max(int(lengths.max()), 1)
        ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        for j, row in enumerate(rows):
            ids[j, : len(row)] = row
        mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)
        X = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}
        return X, torch.as_tensor(np.asarray(ys))


class LengthGroupedBatches(torch.utils.data.Sampler):
    """Shuffled mini-batches of similar lengths, so dynamic padding wastes little compute.

    Each epoch: shuffle the rows, sort each window of ``window`` batches' worth of rows by
    length, cut it into batches and shuffle the order of all batches. Seeded by ``generator``.
    """

    def __init__(self, lengths, batch_size: int, generator: torch.Generator, window: int = 50):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size = int(batch_size)
        self.generator = generator
        self.window = int(window)

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self):
        bs = self.batch_size
        perm = torch.randperm(len(self.lengths), generator=self.generator).numpy()
        batches = []
        for start in range(0, len(perm), bs * self.window):
            chunk = perm[start:start + bs * self.window]
            chunk = chunk[np.argsort(-self.lengths[chunk], kind="stable")]
            batches += [chunk[i:i + bs].tolist() for i in range(0, len(chunk), bs)]
        for i in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[i]


class WarmupLinear:
    """LambdaLR factor: linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total``."""

    def __init__(self, warmup: int, total: int):
        self.warmup = int(warmup)
        self.total = max(int(total), 1)

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / (self.warmup + 1)
        return max(0.0, (self.total - step) / max(1, self.total - self.warmup))


def _make_net_class():
    from skorch import NeuralNet
    from skorch.callbacks import LRScheduler
    from skorch.utils import TeeGenerator

    class FineTuneNet(NeuralNet):
        """skorch NeuralNet that optimises only trainable parameters and accumulates gradients
        over ``accumulate`` batches (skorch's documented ``train_step`` override); the last,
        possibly shorter, group of an epoch also updates the weights."""

        def __init__(self, *args, accumulate: int = 1, **kwargs):
            super().__init__(*args, **kwargs)
            self.accumulate = accumulate

        def get_all_learnable_params(self):
            for name, param in super().get_all_learnable_params():
                if param.requires_grad:
                    yield name, param

        def get_loss(self, y_pred, y_true, X=None, training=False):
            loss = super().get_loss(y_pred, y_true, X=X, training=training)
            return loss / self._group if training else loss

        def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
            if training and iterator is not None:
                self._batch, self._n_batches = 0, len(iterator)
            super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)

        def train_step(self, batch, **fit_params):
            acc, i, n = self.accumulate, self._batch, self._n_batches
            start = i - i % acc
            self._group = min(acc, n - start)  # batches in this accumulation group
            self._batch = i + 1
            if i == start:
                self._zero_grad_optimizer()
            step = self.train_step_single(batch, **fit_params)
            self.stepped_ = self._batch == start + self._group
            if self.stepped_:
                self.notify("on_grad_computed",
                            named_parameters=TeeGenerator(self.get_all_learnable_params()),
                            batch=batch)
                self._step_optimizer(None)
            step["loss"] = step["loss"] * self._group  # report the batch's own loss
            return step

    class OptimizerStepLR(LRScheduler):
        """skorch's LRScheduler, stepped once per optimizer step (not per accumulated batch)."""

        def on_batch_end(self, net, training, **kwargs):
            if training and getattr(net, "stepped_", True):
                super().on_batch_end(net, training, **kwargs)

    return FineTuneNet, OptimizerStepLR


def _valid_accuracy(net, X, y) -> float:
    return float((np.asarray(net.predict(X)).argmax(axis=1) == np.asarray(y)).mean())


def _valid_r2(net, X, y) -> float:
    from sklearn.metrics import r2_score

    y = np.asarray(y)
    return float(r2_score(y, np.asarray(net.predict(X)).reshape(y.shape)))


def _layer_list(encoder) -> tuple[str, nn.ModuleList]:
    """The encoder's stack of Transformer blocks: the longest ``ModuleList`` named layer(s)."""
    n = getattr(encoder.config, "num_hidden_layers", None)
    best = None
    for name, module in encoder.named_modules():
        if isinstance(module, nn.ModuleList) and name.split(".")[-1] in ("layer", "layers", "h", "block", "blocks"):
            if best is None or len(module) > len(best[1]) or len(module) == n:
                best = (name, module)
    if best is None:
        raise ValueError(
            f"fine_tune='last_k' could not find the layer stack of {type(encoder).__name__}; "
            "use fine_tune='full' or 'none' for this model."
        )
    return best


# ---------------------------------------------------------------------------------------------
# the estimators
# ---------------------------------------------------------------------------------------------


class _FineTune(TransformerMixin, NeuralHead):
    _accepts = ("text",)

    def __init__(self, model: str = "all-minilm-l6-v2", fine_tune: str = "full", k: int = 2,
                 head: str = "linear", pooling: str = "mean", dropout: float = 0.1,
                 lr: float = 5e-5, head_lr: float = 1e-3, warmup_ratio: float = 0.1,
                 weight_decay: float = 0.01, epochs: int = 3, batch_size: int = 16,
                 gradient_accumulation: int = 1, max_length: int = 128,
                 early_stopping="auto", validation_fraction: float = 0.1, patience: int = 2,
                 class_weight=None, random_state: int | None = 0, device: str = "auto",
                 trust_remote_code: bool = False, output: str = "pooled", verbose: int = 0):
        store_params(self, locals())

    # -- checks -----------------------------------------------------------------------------
    def _check_params(self) -> None:
        name = type(self).__name__
        choices = {"fine_tune": FINE_TUNE, "head": HEADS, "pooling": POOLINGS,
                   "output": ("pooled", "sequence"), "device": ("auto", "cpu", "cuda", "mps")}
        for param, allowed in choices.items():
            value = getattr(self, param)
            if value not in allowed and not (param == "device" and str(value).startswith("cuda:")):
                raise ValueError(f"{name}({param}={value!r}) is not valid; choose one of {allowed}.")
        for param in ("epochs", "batch_size", "gradient_accumulation", "max_length", "k", "patience"):
            value = getattr(self, param)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}({param}={value!r}) must be an integer >= 1.")
        if not 0.0 <= float(self.warmup_ratio) < 1.0:
            raise ValueError(f"{name}(warmup_ratio={self.warmup_ratio!r}) must lie in [0, 1).")
        if not 0.0 < float(self.validation_fraction) < 1.0:
            raise ValueError(
                f"{name}(validation_fraction={self.validation_fraction!r}) must lie in (0, 1).")
        if self.device != "auto" and str(self.device).startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"{name}(device={self.device!r}) but CUDA is not available here; "
                             "use device='auto' or 'cpu'.")

    def _docs(self, X) -> list[str]:
        if isinstance(X, Sequences) or hasattr(X, "lengths") or (
                hasattr(X, "dtype") and getattr(X, "ndim", 1) == 2 and X.dtype.kind in "fiub") or (
                hasattr(X, "tocsr")):
            raise ValueError(
                f"{type(self).__name__} takes raw documents (it owns its tokenizer and encoder) but "
                f"received {type(X).__name__} features. In a Pipeline put it after a 'passthrough' "
                "features step: Pipeline([('features', 'passthrough'), ('head', "
                f"{type(self).__name__}())])."
            )
        return validate_documents(X)

    # -- model --------------------------------------------------------------------------------
    def _load(self):
        from ..resources import load_transformer

        tokenizer, encoder, source = load_transformer(
            self.model, trust_remote_code=self.trust_remote_code)
        limit = getattr(encoder.config, "max_position_embeddings", None)
        if limit and self.max_length > limit:
            raise ValueError(
                f"{type(self).__name__}(max_length={self.max_length}) exceeds the {limit} "
                f"positions of {self.model!r}; use max_length <= {limit}.")
        if tokenizer.pad_token_id is None:
            raise ValueError(f"the tokenizer of {self.model!r} has no padding token; set "
                             "tokenizer.pad_token (e.g. to its eos token) in a saved model folder.")
        return tokenizer, encoder, source

    def _freeze(self, encoder) -> tuple[str, ...]:
        """Freeze encoder parameters as ``fine_tune`` says; return fully frozen submodule names."""
        if self.fine_tune == "full":
            return ()
        names = [n for n, _ in encoder.named_parameters()]
        if self.fine_tune == "none":
            frozen = set(names)
        else:
            stack_name, stack = _layer_list(encoder)
            if self.k > len(stack):
                raise ValueError(f"{type(self).__name__}(k={self.k}) but {self.model!r} has "
                                 f"{len(stack)} layers; use k <= {len(stack)} or fine_tune='full'.")
            first = next(stack[len(stack) - self.k].parameters())
            cut = next(i for i, (_, p) in enumerate(encoder.named_parameters()) if p is first)
            frozen = set(names[:cut])  # embeddings and every block below the top k
        for n, p in encoder.named_parameters():
            if n in frozen:
                p.requires_grad_(False)
        modules = []
        for mname, module in encoder.named_modules():
            params = [n for n, _ in module.named_parameters(prefix=mname)]
            covered = any(mname.startswith(m + ".") for m in modules)
            if params and mname and not covered and all(p in frozen for p in params):
                modules.append(mname)
        if self.fine_tune == "none":
            modules = [""]
        return tuple("encoder" + (f".{m}" if m else "") for m in modules)

    def _build(self, encoder, n_outputs: int, device: str) -> FineTuneModule:
        frozen = self._freeze(encoder)
        return FineTuneModule(encoder, n_outputs, self.head, self.pooling, float(self.dropout),
                              frozen, autocast=str(device).startswith("cuda"))

    def _tokenize(self, docs: list[str]) -> list[np.ndarray]:
        enc = self.tokenizer_(docs, truncation=True, max_length=self.max_length,
                              return_attention_mask=False, return_token_type_ids=False)
        return [np.asarray(ids, dtype=np.int64) for ids in enc["input_ids"]]

    # -- training -----------------------------------------------------------------------------
    def fit(self, X, y):
        """Load the pretrained model, put the head on it and fine-tune on ``(X, y)``.

        Parameters
        ----------
        X : iterable of str
            Raw documents.
        y : array-like of shape (n_docs,) (or (n_docs, n_targets) for regression)

        Returns
        -------
        self
        """
        from skorch.callbacks import EarlyStopping, EpochScoring, ProgressBar
        from skorch.helper import predefined_split
        from torch.optim.lr_scheduler import LambdaLR

        self._check_params()
        docs = self._docs(X)
        y_enc, n_outputs = self._encode_targets(y)
        if len(y_enc) != len(docs):
            raise ValueError(f"X has {len(docs)} documents but y has {len(y_enc)} rows.")
        seed = 0 if self.random_state is None else int(self.random_state)
        device = self._device()
        self.tokenizer_, encoder, self.source_ = self._load()
        torch.manual_seed(seed)
        module = self._build(encoder, n_outputs, device)
        ids = self._tokenize(docs)

        callbacks = []
        train_split = None
        train_rows = np.arange(len(docs))
        classification = self._task == "classification"
        if self._use_early_stopping(len(docs)):
            from sklearn.model_selection import train_test_split

            stratify = y_enc if classification and np.bincount(y_enc).min() >= 2 else None
            train_rows, valid_rows = train_test_split(
                train_rows, test_size=float(self.validation_fraction), stratify=stratify,
                random_state=seed)
            train_split = predefined_split(TokenDataset([ids[i] for i in valid_rows], y_enc[valid_rows]))
            scorer, metric = (_valid_accuracy, "valid_acc") if classification else (_valid_r2, "valid_r2")
            callbacks += [
                (metric, EpochScoring(scorer, lower_is_better=False, name=metric)),
                ("early_stopping", EarlyStopping(patience=self.patience, load_best=True)),
            ]
        n_train = len(train_rows)
        dataset = TokenDataset([ids[i] for i in train_rows], y_enc[train_rows])
        batches = LengthGroupedBatches([len(ids[i]) for i in train_rows], self.batch_size,
                                       torch.Generator().manual_seed(seed))
        net_class, scheduler = _make_net_class()
        steps = math.ceil(len(batches) / self.gradient_accumulation) * self.epochs  # optimizer steps
        schedule = WarmupLinear(round(self.warmup_ratio * steps), steps)
        callbacks.append(("lr_schedule", scheduler(LambdaLR, lr_lambda=schedule, step_every="batch")))
        if self.verbose:
            n_valid = len(docs) - n_train
            callbacks.append(("progress", ProgressBar(
                batches_per_epoch=len(batches) + math.ceil(n_valid / self.batch_size))))
        criterion, extra = self._criterion(y_enc)
        # encoder parameters train at `lr`, the head at `head_lr`; no weight decay on biases and
        # normalisation weights (first matching pattern wins)
        groups = [("encoder.*bias", {"lr": self.lr, "weight_decay": 0.0}),
                  ("encoder.*[Nn]orm*", {"lr": self.lr, "weight_decay": 0.0}),
                  ("encoder.*", {"lr": self.lr}),
                  ("*bias", {"weight_decay": 0.0})]
        collate = PadCollate(self.tokenizer_.pad_token_id)
        net = net_class(
            module=module,
            criterion=criterion,
            optimizer=torch.optim.AdamW,
            optimizer__param_groups=groups,
            optimizer__weight_decay=self.weight_decay,
            lr=self.head_lr,
            max_epochs=self.epochs,
            batch_size=self.batch_size,
            accumulate=self.gradient_accumulation,
            train_split=train_split,
            callbacks=callbacks,
            iterator_train__batch_sampler=batches,
            iterator_train__batch_size=1,  # the batch sampler makes the batches
            iterator_train__collate_fn=collate,
            iterator_valid__collate_fn=collate,
            verbose=1 if self.verbose else 0,
            device=device,
            **extra,
        )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have many workers.*")
            net.fit(dataset, None)
        self.module_ = net.module_.eval()
        self.history_ = [{k: v for k, v in epoch.items() if k != "batches"} for epoch in net.history]
        self.n_epochs_ = len(self.history_)
        self.dim_ = int(encoder.config.hidden_size)
        self.n_outputs_ = n_outputs
        return self

    # -- inference ----------------------------------------------------------------------------
    def _run(self, docs: list[str], what: str):
        """Run the fitted module over ``docs`` in length-sorted, dynamically padded batches."""
        ids = self._tokenize(docs)
        order = np.argsort([len(r) for r in ids], kind="stable")
        collate = PadCollate(self.tokenizer_.pad_token_id)
        device = next(self.module_.parameters()).device
        size = max(self.batch_size, 64)
        self.module_.eval()
        parts = []
        with torch.inference_mode():
            for start in range(0, len(ids), size):
                rows = order[start:start + size]
                X, _ = collate([(ids[i], 0.0) for i in rows])
                X = {k: v.to(device) for k, v in X.items()}
                if what == "logits":
                    parts.append(self.module_(**X).cpu().numpy())
                else:
                    hidden, pooled, _ = self.module_.features(**X)
                    parts.append((hidden if what == "sequence" else pooled).cpu().numpy())
        if what == "sequence":
            lengths = np.fromiter((len(r) for r in ids), dtype=np.int64, count=len(ids))
            width = max(int(lengths.max(initial=0)), 1)
            values = np.zeros((len(ids), width, self.dim_), dtype=np.float32)
            for start, part in zip(range(0, len(ids), size), parts):
                rows = order[start:start + size]
                values[rows, : part.shape[1]] = part
            values *= (np.arange(width)[None, :] < lengths[:, None])[..., None]
            tokens = [self.tokenizer_.convert_ids_to_tokens(r.tolist()) for r in ids]
            return Sequences(values, lengths, tokens=tokens)
        width = self.n_outputs_ if what == "logits" else self.dim_
        out = np.zeros((len(ids), width), dtype=np.float32)
        if parts:
            out[order] = np.concatenate(parts).astype(np.float32, copy=False)
        return out

    def _forward(self, X) -> np.ndarray:
        check_is_fitted(self, "module_")
        return self._run(self._docs(X), "logits")

    def transform(self, X):
        """The fine-tuned encoder's features of ``X``.

        Returns a float32 array ``(n_docs, hidden)`` pooled as the model pools (``pooling``, or
        the learned attention weights for ``head="attention"``), or for ``output="sequence"`` a
        `Sequences` of token vectors (special tokens included) with the word pieces attached.
        """
        check_is_fitted(self, "module_")
        self._check_params()
        return self._run(self._docs(X), "sequence" if self.output == "sequence" else "pooled")

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the pooled feature columns."""
        check_is_fitted(self, "module_")
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}_dim{i}" for i in range(self.dim_)], dtype=object)

    # -- history ------------------------------------------------------------------------------
    def plot_history(self, path=None, ax=None):
        """Draw training/validation loss (and the validation metric, if any) per epoch.

        Parameters
        ----------
        path : str or Path, optional
            Save the figure there (any format matplotlib writes, e.g. ``.png``).
        ax : matplotlib Axes, optional
            Draw into it instead of a new figure.

        Returns
        -------
        matplotlib.figure.Figure
        """
        check_is_fitted(self, "history_")
        from matplotlib.figure import Figure  # no pyplot: works headless (Agg) and in notebooks

        if ax is None:
            fig = Figure(figsize=(6, 4))
            ax = fig.add_subplot()
        else:
            fig = ax.figure
        epochs = [h["epoch"] for h in self.history_]
        for key, style in (("train_loss", "o-"), ("valid_loss", "s--")):
            if any(key in h for h in self.history_):
                ax.plot(epochs, [h.get(key, np.nan) for h in self.history_], style, label=key)
        ax.set_xlabel("epoch")
        ax.set_ylabel("loss")
        metric = next((m for m in ("valid_acc", "valid_r2") if m in self.history_[0]), None)
        if metric:
            twin = ax.twinx()
            twin.plot(epochs, [h[metric] for h in self.history_], "^:", color="tab:green", label=metric)
            twin.set_ylabel(metric)
            twin.legend(loc="upper right")
        ax.legend(loc="upper left")
        ax.set_title(f"{type(self).__name__} ({self.fine_tune})")
        if path is not None:
            fig.savefig(path, bbox_inches="tight")
        return fig

    # -- saving -------------------------------------------------------------------------------
    def save_pretrained(self, path) -> Path:
        """Write a Hugging Face model folder: the fine-tuned encoder (safetensors + config),
        the tokenizer, ``embedkit_head.safetensors`` (pooling/head weights) and ``embedkit.json``
        (embedkit parameters, label mapping). ``AutoModel.from_pretrained(path)`` loads the
        encoder; ``load(path)`` restores this estimator.
        """
        from safetensors.torch import save_file

        check_is_fitted(self, "module_")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.module_.encoder.save_pretrained(path)
        self.tokenizer_.save_pretrained(path)
        head = {k: v.detach().cpu().contiguous() for k, v in self.module_.state_dict().items()
                if not k.startswith("encoder.")}
        save_file(head, str(path / _HEAD_WEIGHTS))
        params = self.get_params()
        if isinstance(params["class_weight"], dict):
            params["class_weight"] = {"pairs": [[np.asarray(k).tolist(), float(v)]
                                                for k, v in params["class_weight"].items()]}
        meta = {"estimator": type(self).__name__, "params": params, "n_outputs": self.n_outputs_,
                "history": self.history_}
        if hasattr(self, "classes_"):
            meta["classes"] = self.classes_.tolist()
            meta["classes_dtype"] = self.classes_.dtype.str if self.classes_.dtype != object else "object"
        else:
            meta["y_ndim"] = self._y_ndim
        (path / _META).write_text(json.dumps(meta, indent=2, default=_json_default))
        return path

    @classmethod
    def load(cls, path, device: str = "auto"):
        """Restore an estimator written by `save_pretrained` (safetensors only, no pickle).

        Parameters
        ----------
        path : str or Path
        device : {"auto", "cpu", "cuda"}, default="auto"
        """
        from safetensors.torch import load_file

        path = Path(path)
        meta_file = path / _META
        if not meta_file.exists():
            raise FileNotFoundError(
                f"{path} has no {_META}; it is not a folder written by save_pretrained. To start "
                f"from a plain Hugging Face model folder use {cls.__name__}(model={str(path)!r}).fit(...)."
            )
        meta = json.loads(meta_file.read_text())
        if meta["estimator"] != cls.__name__:
            raise ValueError(f"{path} holds a {meta['estimator']}; load it with {meta['estimator']}.load.")
        params = dict(meta["params"])
        if isinstance(params.get("class_weight"), dict) and "pairs" in params["class_weight"]:
            params["class_weight"] = {_hashable(k): v for k, v in params["class_weight"]["pairs"]}
        params.update(model=str(path.resolve()), device=device)
        est = cls(**params)
        est._check_params()
        est.tokenizer_, encoder, est.source_ = est._load()
        module = est._build(encoder, int(meta["n_outputs"]), est._device())
        head = load_file(str(path / _HEAD_WEIGHTS))
        missing, unexpected = module.load_state_dict(head, strict=False)
        missing = [m for m in missing if not m.startswith("encoder.")]
        if missing or unexpected:
            raise ValueError(f"{path / _HEAD_WEIGHTS} does not match the head: missing {missing}, "
                             f"unexpected {unexpected}.")
        est.module_ = module.to(est._device()).eval()
        est.history_ = meta.get("history", [])
        est.n_epochs_ = len(est.history_)
        est.dim_ = int(encoder.config.hidden_size)
        est.n_outputs_ = int(meta["n_outputs"])
        if "classes" in meta:
            est.classes_ = np.asarray(meta["classes"], dtype=meta["classes_dtype"])
        else:
            est._y_ndim = int(meta["y_ndim"])
        return est

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


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
    lr : float, default=5e-5
        Learning rate of the encoder.
    head_lr : float, default=1e-3
        Learning rate of the head (and attention pooling).
    warmup_ratio : float, default=0.1
        Fraction of the training steps with a linear warm-up; the rate then decays linearly
        to 0 at the last step (one step per batch).
    weight_decay : float, default=0.01
        AdamW weight decay (not applied to biases and normalisation weights).
    epochs : int, default=3
        Maximum number of epochs.
    batch_size : int, default=16
    gradient_accumulation : int, default=1
        Update the weights every this many batches (effective batch ``batch_size * this``).
    max_length : int, default=128
        Documents are truncated to this many word pieces (special tokens included).
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
        "auto" uses CUDA when available (with bf16 autocast), else the CPU.
    trust_remote_code : bool, default=False
        Allow models that ship their own Python code (only for models you trust).
    output : {"pooled", "sequence"}, default="pooled"
        What ``transform`` returns: pooled float32 features ``(n_docs, hidden)`` or a
        `Sequences` of the fine-tuned token vectors with their word pieces.
    verbose : int, default=0
        1 shows a progress bar and a per-epoch table.

    Attributes
    ----------
    module_ : FineTuneModule
        The fine-tuned encoder with its head.
    tokenizer_ : transformers tokenizer
    history_ : list of dict
        Per epoch: ``train_loss``, and with early stopping ``valid_loss`` and ``valid_acc``
        (classifier) or ``valid_r2`` (regressor); `plot_history` draws it.
    dim_ : int
        Width of the features ``transform`` returns.

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
    encoder's features, to feed other heads.
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


TransformerClassifier.__doc__ = TransformerClassifier.__doc__.replace("{params}", _PARAMS_DOC)
TransformerRegressor.__doc__ = TransformerRegressor.__doc__.replace("{params}", _PARAMS_DOC)
