"""The head contract: `NeuralHead`, the skorch training assembly every head shares (the
classifier / regressor mixins: `embedkit.heads._tasks`; targets, their losses and thresholds:
`embedkit.heads._targets`).

``NeuralHead.fit`` is a template: it checks the parameters against the class's table (before
anything else), validates the input and targets, seeds, splits off the validation rows,
assembles skorch's ``NeuralNet``, trains it and checks the training did not diverge. A head
customises hooks (``_build_module``, ``_dataset``, ``_train_iterator``, ``_optimizer``,
``_callbacks``, ``_valid_scoring``, ``_net_class``, ``_fitted``), never ``fit`` itself. torch
and skorch are imported inside the methods that need them.
"""

from __future__ import annotations

import math
import warnings
from numbers import Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._params import (
    SEED,
    Device,
    Interval,
    RealNotInt,
    StrOptions,
    positive_int,
    validate_params,
)
from ..base import CheckedKeywords, progress_bars
from ..data.targets import tune_threshold
from ..machine import resolve_device
from ..sequences import Sequences, TokenIds
from ._data import HeadInput
from ._targets import (
    check_target_rows,
    encode_regression_targets,
    encode_targets,
    loss_for_targets,
)

__all__ = ["NeuralHead"]

_OPTIMIZERS = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "rmsprop": "RMSprop", "adagrad": "Adagrad"}

#: learning rates: above 1 no optimizer here trains (Adam's default is 1e-3, SGD's usual range
#: 0.01-0.5), so a larger value is a typo (1e6 for 1e-6); within the range a training run whose
#: loss or weights stop being finite is reported by the divergence check in `NeuralHead.fit`.
LEARNING_RATE = Interval(Real, 0, 1, closed="right")



class NeuralHead(CheckedKeywords, BaseEstimator):
    """Base of every neural head: input handling, the skorch-driven training loop, prediction.

    Subclasses list the input forms they accept in ``_accepts`` (`embedkit.base.FORMS`) and
    implement ``_build_module(inputs, n_outputs)`` returning a ``torch.nn.Module`` whose
    ``forward`` takes ``x`` (a ``(B, D)`` float tensor for pooled input, ``(B, T, D)`` floats for
    sequences, ``(B, T)`` ids) and, for sequences and ids, ``lengths``. They define the common
    training parameters in their ``__init__``: lr, epochs, batch_size, optimizer, weight_decay,
    early_stopping, validation_fraction, patience, class_weight, gradient_clip, random_state,
    device, verbose, and declare every parameter in ``_parameter_constraints`` (extending this
    class's table of the training ones; see `embedkit._params`), which `fit` checks first. A
    head with another way to train (e.g. the fine-tuning head) overrides the other hooks of `fit`.
    `fit` resolves ``device`` once and stores it as ``device_``, where the head trains and
    predicts (loading a model folder resolves it again, for the machine that loads it).
    """

    _accepts: tuple[str, ...] = ("pooled", "sequence", "ids")
    _task: str = "classification"

    #: the training parameters every head shares; each head adds its own (`embedkit._params`)
    _parameter_constraints: ClassVar[dict] = {
        "lr": [LEARNING_RATE],
        "epochs": [positive_int()],
        "batch_size": [positive_int()],
        "optimizer": [StrOptions(set(_OPTIMIZERS))],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "validation_fraction": [Interval(RealNotInt, 0, 1, closed="neither")],
        "patience": [positive_int()],
        "class_weight": [None, StrOptions({"balanced"}), dict],
        "gradient_clip": [None, Interval(Real, 0, None, closed="neither")],
        "random_state": [None, SEED],
        "device": [Device()],
        "verbose": ["verbose"],
    }
    #: checks relating several parameters (`embedkit._params.Rule`)
    _parameter_rules: tuple = ()

    # -- hooks --------------------------------------------------------------------------------
    def _build_module(self, inputs: HeadInput, n_outputs: int):  # pragma: no cover - abstract
        raise NotImplementedError

    def _dataset(self, inputs: HeadInput, y_enc: np.ndarray):
        """The torch dataset of all training rows and the collate function that batches it."""
        from ._data import HeadDataset, collate

        return HeadDataset(inputs, y_enc), collate

    def _train_iterator(self, train, generator) -> dict:
        """``iterator_train__*`` settings: shuffled batches of ``batch_size``, seeded."""
        return {"shuffle": True, "generator": generator}

    def _optimizer(self) -> dict:
        """The optimizer's net settings: class, its parameters and the learning rate."""
        import torch

        return {"optimizer": getattr(torch.optim, _OPTIMIZERS[self.optimizer]),
                "optimizer__weight_decay": self.weight_decay, "lr": self.lr}

    def _callbacks(self, batches_per_epoch: int) -> list:
        """Training callbacks besides early stopping and the progress bar."""
        from skorch.callbacks import GradientNormClipping

        clip = self.gradient_clip
        return [] if clip is None else [("clip", GradientNormClipping(clip))]

    def _valid_scoring(self) -> list:
        """Callbacks scoring the validation rows each epoch, before early stopping (none)."""
        return []

    def _net_class(self) -> tuple[type, dict]:
        """The skorch net class and the arguments only that class takes."""
        from skorch import NeuralNet

        return NeuralNet, {}

    def _fitted(self, net, n_outputs: int) -> None:
        """Keep what prediction needs from the trained net."""
        self.net_ = net

    # -- input ------------------------------------------------------------------------------
    def _as_input(self, X, *, reset: bool) -> HeadInput:
        name = type(self).__name__
        if isinstance(X, Sequences):
            form, data, dim = "sequence", X, X.dim
        elif isinstance(X, TokenIds):
            form, data, dim = "ids", X, 0
        else:
            from sklearn.utils.validation import validate_data

            if isinstance(X, (list, tuple)) and X and isinstance(X[0], str) or isinstance(X, str):
                raise ValueError(
                    f"{name} received raw text. Put a representation first, e.g. "
                    f"Pipeline([('features', TfidfEmbedder()), ('head', {name}())])."
                )
            data = validate_data(self, X, reset=reset, accept_sparse="csr",
                                 dtype=(np.float32, np.float64), ensure_min_samples=int(reset))
            form, dim = "pooled", data.shape[1]
            values = data.data if sp.issparse(data) else data
            if values.dtype == np.float64 and values.size and \
                    np.abs(values).max() > np.finfo(np.float32).max:
                raise ValueError(f"{name} computes in float32, but X holds values beyond its range "
                                 "(about 3.4e38); scale the features first.")
        if form not in self._accepts:
            raise ValueError(self._wrong_input_message(form, data))
        if form == "sequence" and not np.isfinite(data.values).all():
            raise ValueError(f"{name} received vectors with NaN or infinity; the representation "
                             "before it must give finite values.")
        if reset:
            self.input_form_ = form
            if form in ("sequence", "ids"):
                self.n_features_in_ = dim if form == "sequence" else data.vocab_size
        elif form != self.input_form_:
            raise ValueError(
                f"{name} was fitted on {self.input_form_} input but received {form} input; "
                "transform with the same representation settings as at fit."
            )
        elif form == "sequence" and dim != self.n_features_in_:
            raise ValueError(
                f"{name} was fitted on vectors of dimension {self.n_features_in_}, got {dim}."
            )
        return HeadInput(form, data, dim)

    def _wrong_input_message(self, form: str, data=None) -> str:
        name = type(self).__name__
        if form == "pooled":
            kind = "sparse" if sp.issparse(data) else "dense"
            return (
                f"{name} needs one vector per token, but received a 2-D {kind} matrix (one "
                "vector per document). Set output='sequence' on the representation, e.g. "
                "GloveEmbedder(output='sequence') or TransformerEmbedder(output='sequence'), or "
                "use TokenIndexer() to learn the embedding inside the head."
            )
        return f"{name} does not accept {form} input; it accepts {', '.join(self._accepts)}."

    # -- training -----------------------------------------------------------------------------
    def _encode_targets(self, y):
        name = type(self).__name__
        if self._task == "classification":
            self.classes_, encoded, self.multilabel_ = encode_targets(y, name)
            return encoded, len(self.classes_)
        y2, self._y_ndim = encode_regression_targets(y, name)
        # trained on standardised targets, so one learning rate suits a score of -4..4 and a
        # price in thousands alike; `predict` maps back
        self.target_mean_ = y2.mean(axis=0)
        scale = y2.std(axis=0)
        self.target_scale_ = np.where(scale > 0, scale, 1.0).astype(np.float32)
        return (y2 - self.target_mean_) / self.target_scale_, y2.shape[1]

    def _criterion(self, y_enc):
        """The loss class and its ``criterion__*`` net arguments (`loss_for_targets`)."""
        return loss_for_targets(y_enc, task=self._task, multilabel=getattr(self, "multilabel_", False),
                                class_weight=getattr(self, "class_weight", None),
                                classes=getattr(self, "classes_", None), name=type(self).__name__)

    def _device(self) -> str:
        """The device ``fit`` resolved (``device_``). A model fitted before ``device_`` existed
        (an old pickle or model folder) resolves ``device`` here, without storing it."""
        device = getattr(self, "device_", None)
        return device if device is not None else resolve_device(getattr(self, "device", "cpu"))

    def _use_early_stopping(self, n: int) -> bool:
        es = self.early_stopping
        return n >= 1000 if isinstance(es, str) else bool(es)

    def fit(self, X, y):
        """Build the network for the shape of ``X`` and train it on ``(X, y)``. A Ctrl-C during
        training raises ``KeyboardInterrupt`` here (skorch alone would end the training and return
        the cut-short head as if fitted).

        Parameters
        ----------
        X : features in a form listed in ``_accepts``
        y : array-like of shape (n_samples,), or for a multi-label classifier a 0/1 indicator
            matrix (n_samples, n_labels) or a list of label lists (`encode_targets`); for
            regression (n_samples,) or (n_samples, n_targets)

        Returns
        -------
        self
        """
        import torch
        from skorch.callbacks import EarlyStopping, ProgressBar
        from skorch.dataset import ValidSplit
        from skorch.helper import predefined_split

        from .._stopping import fit_or_stop

        validate_params(self)
        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None.")
        device = resolve_device(self.device)
        inputs = self._as_input(X, reset=True)
        if len(inputs) == 0:
            raise ValueError(f"{name}.fit received no rows: X is empty; fit needs training data.")
        check_target_rows(y, len(inputs), name)
        y_enc, n_outputs = self._encode_targets(y)
        seed = 0 if self.random_state is None else int(self.random_state)
        torch.manual_seed(seed)
        self.device_ = device  # resolved once: training and prediction run there
        module = self._build_module(inputs, n_outputs)
        self._module_spec = {**inputs.spec(), "n_outputs": int(n_outputs)}  # see _to_state
        criterion, extra = self._criterion(y_enc)
        dataset, collate = self._dataset(inputs, y_enc)
        train, valid, callbacks = dataset, None, []
        multilabel = getattr(self, "multilabel_", False)
        tune = multilabel and self.threshold == "tune"
        early_stopping = self._use_early_stopping(len(inputs))
        if early_stopping or tune:
            stratified = (self._task == "classification" and not multilabel
                          and np.bincount(y_enc).min() >= 2)
            split = ValidSplit(self.validation_fraction, stratified=stratified, random_state=seed)
            train, valid = split(dataset, y_enc)
            callbacks += self._valid_scoring()
        if early_stopping:
            callbacks.append(("early_stopping", EarlyStopping(patience=self.patience, load_best=True)))
        batches = math.ceil(len(train) / self.batch_size)
        callbacks += self._callbacks(batches)
        timed = "max_seconds" in self._parameter_constraints  # a head with a time limit
        if timed:
            clock = _time_limit(self.max_seconds)
            callbacks.append(("time_limit", clock))
        if progress_bars(self.verbose):
            n_valid = 0 if valid is None else len(valid)
            callbacks.append(("progress", ProgressBar(
                batches_per_epoch=batches + math.ceil(n_valid / self.batch_size))))
        optimizer = self._optimizer()
        iterator = self._train_iterator(train, torch.Generator().manual_seed(seed))
        net_class, net_params = self._net_class()
        net = net_class(
            module=module,
            criterion=criterion,
            max_epochs=self.epochs,
            batch_size=self.batch_size,
            train_split=None if valid is None else predefined_split(valid),
            callbacks=callbacks,
            **{f"iterator_train__{k}": v for k, v in iterator.items()},
            iterator_train__collate_fn=collate,
            iterator_valid__collate_fn=collate,
            verbose=1 if self.verbose else 0,
            device=device,
            **optimizer,
            **net_params,
            **extra,
        )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have many workers.*")
            fit_or_stop(net, train)
        self.history_ = [
            {k: v for k, v in epoch.items() if k != "batches"} for epoch in net.history
        ]
        self.n_epochs_ = len(self.history_)
        if timed:
            self.n_steps_, self.out_of_time_ = clock.steps, clock.out_of_time
        self._check_converged(net)
        if multilabel:
            self.threshold_ = (self._valid_threshold(net, valid, y_enc) if tune
                               else float(self.threshold))
        self.n_outputs_ = n_outputs
        self._fitted(net, n_outputs)
        return self

    def _valid_threshold(self, net, valid, y_enc: np.ndarray) -> float:
        """`tune_threshold` on the validation rows' probabilities (the kept epoch's weights)."""
        import torch

        with torch.inference_mode():
            logits = net.forward(valid, training=False).float().cpu().numpy()
        from scipy.special import expit

        return tune_threshold(expit(logits), y_enc[np.asarray(valid.indices)])

    def _check_converged(self, net) -> None:
        """Raise when training diverged: a non-finite loss in any epoch, or non-finite weights."""
        import torch

        bad = next(((i + 1, key, e[key]) for i, e in enumerate(self.history_)
                    for key in ("train_loss", "valid_loss")
                    if key in e and not np.isfinite(e[key])), None)
        trained = [p.detach().sum() for p in net.module_.parameters() if p.requires_grad]
        # one pass per tensor: NaN and infinity survive a sum (frozen weights cannot change)
        if bad is None and (not trained or bool(torch.isfinite(torch.stack(trained)).all())):
            return
        where = (f"the {bad[1].replace('_', ' ')} became {bad[2]} at epoch {bad[0]}" if bad
                 else "the weights became non-finite")
        raise ValueError(
            f"{type(self).__name__} training diverged: {where} (lr={self.lr!r}). Lower lr (e.g. "
            f"lr={float(self.lr) / 10:g}), clip gradients (gradient_clip=1.0), or scale the input "
            "features if they hold very large values."
        )

    # -- model folders (embedkit.storage.persist) -------------------------------------------------------
    def _to_state(self, folder):
        """State for `embedkit.save`: the attributes but the skorch net, whose module's weights
        go to ``folder/module.safetensors`` with what rebuilds it (`HeadInput.spec`)."""
        state = dict(self.__getstate__())  # a copy: object.__getstate__ gives __dict__ itself
        net = state.pop("net_", None)
        if net is not None:
            from safetensors.torch import save_file

            if "_module_spec" not in state:
                raise ValueError(f"{type(self).__name__} was fitted by an older embedkit; fit it "
                                 "again before embedkit.save.")
            save_file({k: v.detach().cpu().contiguous() for k, v in net.module_.state_dict().items()},
                      str(folder / "module.safetensors"))
        return state

    @classmethod
    def _from_state(cls, state: dict, folder):
        """Inverse of `_to_state`: rebuild the module from its spec, load its weights (strict),
        and wrap it in a skorch net for prediction."""
        self = cls.__new__(cls)
        self.__setstate__(state)
        if folder is not None and (folder / "module.safetensors").is_file():
            import torch
            from safetensors.torch import load_file
            from skorch import NeuralNet

            from ._data import collate

            # saved on another machine maybe (a GPU's): the device is resolved again, here
            self.device_ = resolve_device(getattr(self, "device", "cpu"))
            spec = self._module_spec
            module = self._build_module(HeadInput.stub(spec), int(spec["n_outputs"]))
            module.load_state_dict(load_file(str(folder / "module.safetensors")), strict=True)
            self.net_ = NeuralNet(module=module, criterion=torch.nn.MSELoss,
                                  batch_size=self.batch_size, iterator_valid__collate_fn=collate,
                                  device=self.device_).initialize()
            self.net_.module_.eval()
        return self

    # -- prediction ---------------------------------------------------------------------------
    def _forward(self, X) -> np.ndarray:
        import torch

        from ._data import HeadDataset

        check_is_fitted(self, "net_")
        inputs = self._as_input(X, reset=False)
        n, size = len(inputs), int(self.batch_size)
        if n == 0:
            return np.zeros((0, self.n_outputs_), dtype=np.float32)
        # The last, partial batch is padded with copies of its first row: float32 matrix
        # products of one row take another kernel than those of many, so without this a row's
        # output would depend on how many rows came with it (sklearn's subset-invariance check).
        full = n - n % size
        parts = [inputs] if full == n else []
        if full and full < n:
            parts.append(HeadInput(inputs.form, inputs.data[:full], inputs.dim))
        if full < n:
            tail = np.concatenate([np.arange(full, n), np.full(size - (n - full), full)])
            parts.append(HeadInput(inputs.form, inputs.data[tail], inputs.dim))
        outs = []
        with torch.inference_mode():
            for part in parts:
                outs.append(self.net_.forward(HeadDataset(part), training=False))
        return finite_outputs(torch.cat(outs)[:n].float().cpu().numpy(), type(self).__name__)

    # -- history ------------------------------------------------------------------------------
    def plot_history(self, path=None, ax=None, title: str | None = None):
        """Draw training/validation loss (and the validation metric, if any) per epoch.

        Parameters
        ----------
        path : str or Path, optional
            Save the figure there (any format matplotlib writes, e.g. ``.png``).
        ax : matplotlib Axes, optional
            Draw into it instead of a new figure.
        title : str, optional
            Defaults to the class name.

        Returns
        -------
        matplotlib.figure.Figure

        Examples
        --------
        >>> import numpy as np
        >>> from embedkit import MLPClassifier
        >>> X, y = np.random.RandomState(0).randn(20, 3), [0, 1] * 10
        >>> fig = MLPClassifier(epochs=3).fit(X, y).plot_history()
        >>> fig.axes[0].get_xlabel()
        'epoch'
        """
        from ..plots import history_chart

        check_is_fitted(self, "history_")
        return history_chart(self.history_, path, ax, title=title or type(self).__name__)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = "pooled" in self._accepts
        tags.non_deterministic = False
        return tags


def _time_limit(seconds: float | None):
    """A skorch callback counting the optimizer steps of a training (``steps``) and, where
    ``seconds`` is not None, ending it at the first batch's end past ``seconds`` from the
    training's start (`OutOfTime`; ``out_of_time`` says it did)."""
    import time

    from skorch.callbacks import Callback

    from .._stopping import OutOfTime

    class TimeLimit(Callback):
        def on_train_begin(self, net, **kwargs):
            self.began, self.steps, self.out_of_time = time.monotonic(), 0, False

        def on_batch_end(self, net, training, **kwargs):
            self.steps += training and getattr(net, "stepped_", True)  # accumulation: its steps
            if seconds is not None and time.monotonic() - self.began >= seconds:
                self.out_of_time = True
                raise OutOfTime

    return TimeLimit()


def finite_outputs(out: np.ndarray, name: str) -> np.ndarray:
    if not np.isfinite(out).all():
        rows = np.flatnonzero(~np.isfinite(out).all(axis=1))
        raise ValueError(
            f"{name} produced non-finite outputs for {len(rows)} row(s) (first: {rows[0]}): the "
            "input holds values too large for float32 arithmetic; scale the features first."
        )
    return out
