"""Multi-layer perceptron head: over document vectors, or over pooled token vectors / ids (DAN)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from torch import nn

from .._params import StrOptions
from ..base import store_params
from ._base import NeuralHead
from ._data import HeadInput
from ._tasks import NeuralClassifierMixin, NeuralRegressorMixin
from ._torch import ARCHITECTURE, SequenceInput, masked_pool, mlp

__all__ = ["MLPClassifier", "MLPRegressor"]


class MLPModule(nn.Module):
    def __init__(self, inputs: HeadInput, n_outputs: int, hidden, activation, dropout, pooling,
                 embedding_dim, freeze, standardize=False):
        super().__init__()
        self.pooling = pooling
        self.sequence = (SequenceInput(inputs, embedding_dim, freeze)
                         if inputs.form in ("sequence", "ids") else None)
        in_dim = self.sequence.dim if self.sequence is not None else inputs.dim
        self.standardize = bool(standardize) and inputs.form == "pooled" and not inputs.sparse
        if self.standardize:  # the training rows' statistics, saved with the module
            data = inputs.data
            mean = data.mean(0, dtype=np.float64)
            var = np.zeros_like(mean)
            for start in range(0, len(data), 65536):  # bounded float64 temporaries
                chunk = data[start:start + 65536].astype(np.float64) - mean
                var += np.einsum("ij,ij->j", chunk, chunk)
            scale = np.sqrt(var / len(data))
            self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
            self.register_buffer("scale", torch.as_tensor(np.where(scale > 0, scale, 1.0),
                                                          dtype=torch.float32))
        self.body = mlp(in_dim, hidden, n_outputs, activation, dropout)

    def forward(self, x, lengths=None):
        if self.sequence is not None:
            h, mask = self.sequence(x, lengths)
            x = masked_pool(h, mask, self.pooling)
        elif self.standardize:
            x = (x - self.mean) / self.scale
        return self.body(x)


class _MLPHead(NeuralHead):
    _parameter_constraints: ClassVar[dict] = {
        **NeuralHead._parameter_constraints,
        **{k: ARCHITECTURE[k] for k in ("hidden_layer_sizes", "activation", "dropout",
                                        "embedding_dim", "freeze")},
        "pooling": [StrOptions({"mean", "max", "sum"})],
        "standardize": ["boolean"],
    }

    def __init__(self, hidden_layer_sizes=(256,), activation="relu", dropout=0.2, pooling="mean",
                 embedding_dim=100, freeze=False, standardize=True, lr=1e-3, epochs=20,
                 batch_size=32, optimizer="adam", weight_decay=0.0, early_stopping="auto",
                 validation_fraction=0.1, patience=3, class_weight=None, gradient_clip=None,
                 random_state=0, device="cpu", verbose=0):
        store_params(self, locals())

    def _build_module(self, inputs, n_outputs):
        return MLPModule(inputs, n_outputs, self.hidden_layer_sizes, self.activation,
                         self.dropout, self.pooling, self.embedding_dim, self.freeze,
                         self.standardize)


class MLPClassifier(NeuralClassifierMixin, ClassifierMixin, _MLPHead):
    """Feed-forward classifier over any representation, trained with skorch.

    Dense arrays and scipy sparse matrices (e.g. TF-IDF, densified one batch at a time) go
    straight in. `Sequences` are mask-pooled (``pooling``) first, and token ids are embedded
    then pooled: with ids this is the Deep Averaging Network.

    Parameters
    ----------
    hidden_layer_sizes : int or tuple of int, default=(256,)
        Widths of the hidden layers (an int is one layer, as in scikit-learn); ``()`` gives a
        linear (softmax-regression) model.
    activation : {"relu", "gelu", "tanh", "sigmoid", "leaky_relu", "elu"}, default="relu"
    dropout : float, default=0.2
    pooling : {"mean", "max", "sum"}, default="mean"
        How token vectors are pooled when the input is a sequence.
    embedding_dim : int, default=100
        Size of the learned embedding for token-id input without pretrained vectors.
    freeze : bool, default=False
        Keep pretrained embedding vectors (token-id input) fixed.
    standardize : bool, default=True
        Centre and scale dense input features by the training rows' mean and standard
        deviation (kept in the module, so prediction uses the same). Averaged word vectors
        share one large common direction and small, uneven scales, which an MLP trains poorly
        on. Sparse input (TF-IDF) is left as it is: centring would densify it, and scaling
        rare terms' columns up hurts (figures: ``pipelines/benchmarks/results/defaults.md``).
    lr : float in (0, 1], default=1e-3
        Above 1 no optimizer here trains; a run whose loss or weights stop being finite raises
        a ValueError that says to lower it.
    epochs : int, default=20
        Maximum number of epochs.
    batch_size : int, default=32
    optimizer : {"adam", "adamw", "sgd", "rmsprop", "adagrad"}, default="adam"
    weight_decay : float, default=0.0
    early_stopping : bool or "auto", default="auto"
        Hold out ``validation_fraction`` and stop when validation loss stalls for ``patience``
        epochs, restoring the best weights. "auto" turns it on from 1,000 training rows.
    validation_fraction : float, default=0.1
    patience : int, default=3
    class_weight : None, "balanced" or dict, default=None
    gradient_clip : float > 0 or None, default=None
        Clip the gradient norm to this value; None does not clip.
    random_state : int, default=0
        Seeds initialisation, shuffling and the validation split; two fits on CPU are identical.
    device : {"cpu", "cuda", "mps", "auto"}, default="cpu"
    verbose : int, default=0
        1: one line per epoch (loss, validation score), plus a progress bar when stderr is a
        terminal; 2: the progress bar always.
    threshold : float in (0, 1) or "tune", default="tune"
        Multi-label targets only: a label is predicted where its probability exceeds this.
        "tune" holds out ``validation_fraction`` of the rows (as early stopping does; with
        early stopping on, the same rows) and keeps the value among 0.05, 0.10, ..., 0.95 that
        maximises micro-F1 on them. One parameter rather than a float plus a switch: a tuned
        threshold has no fixed value to give, and ``GridSearchCV`` can search either form.

    Notes
    -----
    **Multi-label targets** follow scikit-learn's conventions: ``y`` is a 0/1 indicator matrix
    ``(n_samples, n_labels)`` (``type_of_target(y) == "multilabel-indicator"``, as
    `sklearn.preprocessing.MultiLabelBinarizer` makes) or a list of label lists (binarized
    here; ``classes_`` then holds the label names). The network gets one output per label,
    trained with a sigmoid / binary cross-entropy loss (``BCEWithLogitsLoss``);
    ``predict_proba`` gives each label's probability ``(n, n_labels)`` and ``predict`` the int
    indicator matrix of the labels above ``threshold_``. ``class_weight="balanced"`` weights
    each label's positive rows by its negatives / positives ratio; a dict is refused. The
    validation split is not stratified for multi-label targets.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from embedkit import TfidfEmbedder
    >>> pipe = make_pipeline(TfidfEmbedder(), MLPClassifier(epochs=5))
    >>> pipe.fit(["good film", "bad film", "great plot", "awful plot"], [1, 0, 1, 0]).predict(["good plot"])
    array([1])

    Multi-label: a list of label lists (or a 0/1 matrix) gives a 0/1 matrix back.

    >>> tags = [["film"], ["film", "bad"], ["plot"], ["plot", "bad"]]
    >>> clf = make_pipeline(TfidfEmbedder(), MLPClassifier(epochs=30)).fit(
    ...     ["good film", "bad film", "great plot", "awful plot"], tags)
    >>> clf.classes_.tolist(), clf.predict(["bad film"]).shape
    (['bad', 'film', 'plot'], (1, 3))
    """


class MLPRegressor(NeuralRegressorMixin, RegressorMixin, _MLPHead):
    """Feed-forward regressor over any representation; parameters as `MLPClassifier`."""
