"""The two contracts: `Representation` (text -> features) and `NeuralHead` (features -> predictions).

Heavy libraries (torch, skorch) are imported inside the methods that need them, so that
``import embedkit`` stays fast.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .documents import validate_documents
from .sequences import Sequences, TokenIds

__all__ = ["Representation", "NeuralHead", "HeadInput", "FORMS", "OUTPUTS", "store_params"]

#: The forms features take between the two contracts: one vocabulary for a representation's
#: ``output=`` (``_outputs``), a head's ``_accepts`` and the registry's compatibility.
#: "pooled": one vector per document (a dense array, or a scipy-sparse matrix for
#: bag-of-words); "sequence": one vector per token (`Sequences`); "ids": token ids
#: (`TokenIds`); "text": the raw documents, for heads that own their encoder.
FORMS = ("pooled", "sequence", "ids", "text")
#: the forms a representation can output
OUTPUTS = FORMS[:3]


def store_params(estimator, params: dict) -> None:
    """Store every constructor argument as an attribute of the same name, unchanged.

    The whole body of an embedkit ``__init__`` is ``store_params(self, locals())``: scikit-learn
    needs each parameter spelled out in the signature, and nothing else may happen there.
    """
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


class Representation(TransformerMixin, BaseEstimator):
    """Base class of every text representation.

    Subclasses keep ``__init__`` to storing arguments (one of them ``output``), list the output
    forms they can produce in ``_outputs``, and implement ``_fit(docs, y)`` (which sets
    ``dim_``, the vector dimension) and ``_transform(docs)``. The public methods are this
    class's and are not overridden: they validate the input, check the output form and the
    fitted state, reset the cache key's fitted-state digest at every fit, check outputs are
    finite, and name features for ``set_output(transform="pandas")``. A representation whose
    training yields vectors of its training documents implements `_training_features`.
    """

    #: output forms this representation can produce
    _outputs: tuple[str, ...] = ("pooled",)
    #: why a missing form is missing (appended to the error)
    _outputs_note: str = ""
    #: prefix of generated feature names
    _feature_prefix: str = "dim"

    # -- subclass API -------------------------------------------------------------------
    def _fit(self, docs: list[str], y=None) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _transform(self, docs: list[str]):  # pragma: no cover - abstract
        raise NotImplementedError

    def _feature_names(self) -> list[str] | None:
        """Names of pooled output columns; None means ``<prefix>0 .. <prefix>{dim-1}``."""
        return None

    def _training_features(self, docs: list[str]):
        """Features of the documents just fitted on, for `fit_transform`.

        The default encodes them as `transform` does (through the cache, if any). A
        representation whose training produces its own vectors of the training documents
        (Doc2Vec's trained paragraph vectors) returns those instead.
        """
        return self._encode(docs)

    # -- public API ---------------------------------------------------------------------
    def fit(self, X, y=None):
        """Load or train the model on the documents ``X`` (an iterable of str)."""
        self._fit_documents(X, y)
        return self

    def transform(self, X):
        """Encode documents in the form chosen by ``output``."""
        check_is_fitted(self)
        self._check_output()
        docs = validate_documents(X)
        return self._checked(self._encode(docs))

    def fit_transform(self, X, y=None, **fit_params):
        """Fit on ``X`` and return the features of ``X``, in the form chosen by ``output``.

        The same steps as ``fit(X, y).transform(X)`` (validation, fitting, resetting the
        fitted-state part of the cache key), except that a representation whose training
        yields vectors of its training documents returns those (see `_training_features`).
        """
        if fit_params:
            raise TypeError(f"{type(self).__name__}.fit_transform() got unexpected keyword "
                            f"arguments {sorted(fit_params)}; it takes only X and y.")
        docs = self._fit_documents(X, y)
        return self._checked(self._training_features(docs))

    def _fit_documents(self, X, y) -> list[str]:
        """Validate ``X``, fit on it and reset the cached fitted-state digest; returns the documents."""
        self._check_output()
        docs = validate_documents(X)
        self._fit(docs, y)
        self._cache_state = None  # fitted state changed: its digest is recomputed when needed
        return docs

    def _encode(self, docs: list[str]):
        """Hook between validation and ``_transform``: the embedding cache wraps it.

        With ``cache`` set (see `embedkit.cache`), only documents missing from the cache reach
        ``_transform``; every representation gets this without code of its own.
        """
        if getattr(self, "cache", None) is None:
            return self._transform(docs)
        from .cache import cached_encode

        return cached_encode(self, docs)

    def _checked(self, out):
        _check_finite(out, type(self).__name__)
        return out

    #: parameters that do not change the vectors, beyond `embedkit.cache.NEUTRAL_PARAMS`
    _cache_exclude: tuple[str, ...] = ()
    #: fitted attributes left out of the fitted-state digest (e.g. transform-time statistics)
    _cache_state_exclude: tuple[str, ...] = ()

    def _cache_identity(self):
        """What, besides the parameters, decides the vectors: part of the cache key.

        The default is a digest of the fitted attributes (names ending in ``_``), computed once
        per fit. Representations with pretrained weights override it with the weights' identity
        (e.g. a file digest), which is cheaper and stable across processes.
        """
        digest = getattr(self, "_cache_state", None)
        if digest is None:
            from .cache import state_digest

            skip = set(self._cache_state_exclude)
            state = {k: v for k, v in sorted(vars(self).items())
                     if k.endswith("_") and not k.startswith("_") and k not in skip}
            digest = self._cache_state = state_digest(state)
        return {"fitted": digest}

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Column names of the pooled output, so ``set_output(transform="pandas")`` works."""
        check_is_fitted(self)
        if getattr(self, "output", "pooled") != "pooled":
            raise ValueError(
                f"{type(self).__name__}(output={self.output!r}) has no feature columns; "
                "only output='pooled' does."
            )
        names = self._feature_names()
        if names is None:
            prefix = type(self).__name__.lower().replace("embedder", "")
            names = [f"{prefix}_{self._feature_prefix}{i}" for i in range(self.dim_)]
        return np.asarray(names, dtype=object)

    def _check_output(self) -> None:
        output = getattr(self, "output", "pooled")
        if output not in self._outputs:
            allowed = ", ".join(repr(o) for o in self._outputs)
            note = f" {self._outputs_note}" if self._outputs_note else ""
            raise ValueError(
                f"{type(self).__name__}(output={output!r}) is not available; it supports "
                f"output in ({allowed}).{note}"
            )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.requires_fit = True
        return tags


def _check_finite(out: Any, name: str) -> None:
    values = out.values if isinstance(out, Sequences) else out.data if sp.issparse(out) else out
    if isinstance(values, np.ndarray) and values.dtype.kind == "f" and not np.isfinite(values).all():
        raise FloatingPointError(
            f"{name} produced non-finite values; this is a bug in embedkit, please report it "
            "with the input that triggers it."
        )


# ---------------------------------------------------------------------------------------
# Heads
# ---------------------------------------------------------------------------------------


@dataclass
class HeadInput:
    """Any input a head accepts, normalised: what kind it is and how to cut a batch from it."""

    form: str  # one of FORMS: "pooled" | "sequence" | "ids"
    data: Any  # ndarray | csr_matrix (pooled) | Sequences | TokenIds
    dim: int  # feature / vector dimension (0 for ids)

    def __len__(self) -> int:
        return self.data.shape[0]

    @property
    def sparse(self) -> bool:
        """Pooled input held as a scipy-sparse matrix (densified one batch at a time)."""
        return sp.issparse(self.data)

    @property
    def vocab_size(self) -> int:
        return self.data.vocab_size if self.form == "ids" else 0

    @property
    def vectors(self):
        return self.data.vectors if self.form == "ids" else None

    def row(self, i: int):
        """One row as `embedkit.heads._torch.collate` expects it."""
        d = self.data
        if self.form == "pooled":
            return d[i]
        n = int(d.lengths[i])
        body = d.values[i, :n] if self.form == "sequence" else d.ids[i, :n]
        return (self.form, body, n)


class NeuralHead(BaseEstimator):
    """Base of every neural head: input handling, the skorch-driven training loop, prediction.

    Subclasses list the input forms they accept in ``_accepts`` (`FORMS`) and implement
    ``_build_module(inputs, n_outputs)`` returning a ``torch.nn.Module`` whose ``forward`` takes
    ``x`` (a ``(B, D)`` float tensor for dense/sparse input, ``(B, T, D)`` floats for sequences,
    ``(B, T)`` ids) and, for sequences and ids, ``lengths``. They define the common training
    parameters in their ``__init__``: lr, epochs, batch_size, optimizer, weight_decay,
    early_stopping, validation_fraction, patience, class_weight, gradient_clip, random_state,
    device, verbose.
    """

    _accepts: tuple[str, ...] = ("pooled", "sequence", "ids")
    _task: str = "classification"

    def _build_module(self, inputs: HeadInput, n_outputs: int):  # pragma: no cover - abstract
        raise NotImplementedError

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
            data = validate_data(
                self, X, reset=reset, accept_sparse="csr", dtype=(np.float32, np.float64)
            )
            form, dim = "pooled", data.shape[1]
        if form not in self._accepts:
            raise ValueError(self._wrong_input_message(form, data))
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
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import column_or_1d

        if self._task == "classification":
            y = column_or_1d(y, warn=True)
            check_classification_targets(y)
            self.classes_, encoded = np.unique(y, return_inverse=True)
            if len(self.classes_) < 2:
                raise ValueError(
                    f"y has only one class ({self.classes_[0]!r}); a classifier needs at least "
                    "two classes in the training data."
                )
            return encoded.astype(np.int64), len(self.classes_)
        y = np.asarray(y, dtype=np.float32)
        if not np.isfinite(y).all():
            raise ValueError("y contains NaN or infinity; drop or impute those rows first.")
        self._y_ndim = y.ndim
        y2 = y.reshape(len(y), -1)
        return y2, y2.shape[1]

    def _criterion(self, y_enc):
        import torch

        if self._task != "classification":
            return torch.nn.MSELoss, {}
        weight = self.class_weight
        if weight is None:
            return torch.nn.CrossEntropyLoss, {}
        from sklearn.utils.class_weight import compute_class_weight

        if isinstance(weight, dict):
            missing = set(weight) - set(self.classes_.tolist())
            if missing:
                raise ValueError(f"class_weight names classes {sorted(missing)} not present in y.")
        w = compute_class_weight(weight, classes=self.classes_, y=self.classes_[y_enc])
        return torch.nn.CrossEntropyLoss, {"criterion__weight": torch.as_tensor(w, dtype=torch.float32)}

    def _device(self) -> str:
        from ._batching import resolve_device

        return resolve_device(getattr(self, "device", "cpu"))

    def _use_early_stopping(self, n: int) -> bool:
        es = self.early_stopping
        if es == "auto":
            return n >= 1000
        if es not in (True, False):
            raise ValueError(f"early_stopping={es!r}; use True, False or 'auto'.")
        return es

    def fit(self, X, y):
        """Build the network for the shape of ``X`` and train it on ``(X, y)``."""
        import torch
        from skorch import NeuralNet
        from skorch.callbacks import EarlyStopping, GradientNormClipping, ProgressBar
        from skorch.dataset import ValidSplit

        from .heads._torch import HeadDataset, collate

        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        inputs = self._as_input(X, reset=True)
        y_enc, n_outputs = self._encode_targets(y)
        if len(y_enc) != len(inputs):
            raise ValueError(f"X has {len(inputs)} rows but y has {len(y_enc)}.")
        seed = 0 if self.random_state is None else int(self.random_state)
        torch.manual_seed(seed)
        module = self._build_module(inputs, n_outputs)
        criterion, extra = self._criterion(y_enc)
        callbacks = []
        train_split = None
        if self._use_early_stopping(len(inputs)):
            stratified = self._task == "classification" and np.bincount(y_enc).min() >= 2
            train_split = ValidSplit(
                self.validation_fraction, stratified=stratified, random_state=seed
            )
            callbacks.append(("early_stopping", EarlyStopping(patience=self.patience, load_best=True)))
        if self.gradient_clip:
            callbacks.append(("clip", GradientNormClipping(self.gradient_clip)))
        if self.verbose:
            callbacks.append(("progress", ProgressBar()))
        optimizer = _OPTIMIZERS.get(self.optimizer)
        if optimizer is None:
            raise ValueError(f"optimizer={self.optimizer!r}; choose one of {sorted(_OPTIMIZERS)}.")
        generator = torch.Generator().manual_seed(seed)
        self.net_ = NeuralNet(
            module=module,
            criterion=criterion,
            optimizer=getattr(torch.optim, optimizer),
            optimizer__weight_decay=self.weight_decay,
            lr=self.lr,
            max_epochs=self.epochs,
            batch_size=self.batch_size,
            train_split=train_split,
            callbacks=callbacks,
            iterator_train__shuffle=True,
            iterator_train__collate_fn=collate,
            iterator_train__generator=generator,
            iterator_valid__collate_fn=collate,
            verbose=1 if self.verbose else 0,
            device=self._device(),
            **extra,
        )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have many workers.*")
            self.net_.fit(HeadDataset(inputs, y_enc), y_enc)
        self.history_ = [
            {k: v for k, v in epoch.items() if k != "batches"} for epoch in self.net_.history
        ]
        self.n_epochs_ = len(self.history_)
        return self

    # -- prediction ---------------------------------------------------------------------------
    def _forward(self, X) -> np.ndarray:
        import torch

        from .heads._torch import HeadDataset

        check_is_fitted(self, "net_")
        inputs = self._as_input(X, reset=False)
        n, size = len(inputs), int(self.batch_size)
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
        return torch.cat(outs)[:n].float().cpu().numpy()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = "pooled" in self._accepts
        tags.non_deterministic = False
        return tags


_OPTIMIZERS = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "rmsprop": "RMSprop", "adagrad": "Adagrad"}


class NeuralClassifierMixin:
    """predict / predict_proba for classification heads."""

    _task = "classification"
    _estimator_type = "classifier"

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, columns ordered as ``classes_``."""
        logits = self._forward(X)
        logits = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """Most probable class per row."""
        scores = self._forward(X)
        return self.classes_[scores.argmax(axis=1)]


class NeuralRegressorMixin:
    """predict for regression heads."""

    _task = "regression"
    _estimator_type = "regressor"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def predict(self, X) -> np.ndarray:
        """Predicted values, shaped like the ``y`` seen at fit."""
        out = self._forward(X).astype(np.float64)
        return out.ravel() if self._y_ndim == 1 else out
