"""1-D convolutional head (Kim-style CNN, optionally dilated / causal) over token vectors or ids."""

from __future__ import annotations

from typing import ClassVar

import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from torch import nn
from torch.nn import functional as F

from .._params import Sizes, StrOptions, as_sizes, positive_int
from ..base import store_params
from ._base import NeuralHead
from ._data import HeadInput
from ._tasks import NeuralClassifierMixin, NeuralRegressorMixin
from ._torch import ACTIVATIONS, ARCHITECTURE, SequenceInput, masked_pool, mlp

__all__ = ["ConvClassifier", "ConvRegressor"]


class ConvModule(nn.Module):
    """Parallel branches, one per kernel size, each ``num_layers`` same-length convolutions
    (layer ``i`` dilated by ``dilation ** i``), pooled over the real steps and concatenated."""

    def __init__(self, inputs: HeadInput, n_outputs: int, kernel_sizes, filters, num_layers,
                 dilation, causal, activation, pooling, hidden, dropout, embedding_dim, freeze):
        super().__init__()
        self.sequence = SequenceInput(inputs, embedding_dim, freeze)
        self.causal = bool(causal)
        self.pooling = pooling
        self.activation = ACTIVATIONS[activation]()
        self.branches = nn.ModuleList()
        self.specs: list[list[tuple[int, int]]] = []  # (kernel, dilation) per layer
        for k in kernel_sizes:
            layers, specs, in_dim = nn.ModuleList(), [], self.sequence.dim
            for i in range(num_layers):
                d = int(dilation) ** i
                layers.append(nn.Conv1d(in_dim, filters, int(k), dilation=d))
                specs.append((int(k), d))
                in_dim = filters
            self.branches.append(layers)
            self.specs.append(specs)
        self.dropout = nn.Dropout(dropout)
        self.out = mlp(filters * len(kernel_sizes), hidden, n_outputs, activation, dropout)

    def _conv(self, conv: nn.Conv1d, x: torch.Tensor, kernel: int, dil: int) -> torch.Tensor:
        # same-length output; zeros beyond the sequence (which the mask guarantees) act exactly
        # like the zero padding added here, so extra batch padding never changes a real step
        total = (kernel - 1) * dil
        left = total if self.causal else total // 2
        return conv(F.pad(x, (left, total - left)))

    def forward(self, x, lengths):
        h, mask = self.sequence(x, lengths)
        keep = mask[:, None, :].to(h.dtype)  # (B, 1, T)
        h = h.transpose(1, 2) * keep  # (B, D, T), padding zeroed (pretrained pad rows may not be)
        pooled = []
        for layers, specs in zip(self.branches, self.specs, strict=True):
            z = h
            for conv, (k, d) in zip(layers, specs, strict=True):
                z = self.activation(self._conv(conv, z, k, d)) * keep
            pooled.append(masked_pool(z.transpose(1, 2), mask, self.pooling))
        return self.out(self.dropout(torch.cat(pooled, dim=1)))


class _ConvHead(NeuralHead):
    _accepts = ("sequence", "ids")
    _parameter_constraints: ClassVar[dict] = {
        **NeuralHead._parameter_constraints,
        **{k: ARCHITECTURE[k] for k in ("hidden_layer_sizes", "activation", "dropout",
                                        "embedding_dim", "freeze")},
        "kernel_sizes": [Sizes(empty=False)],
        "filters": [positive_int()],
        "num_layers": [positive_int()],
        "dilation": [positive_int()],
        "causal": ["boolean"],
        "pooling": [StrOptions({"max", "mean"})],
    }

    def __init__(self, kernel_sizes=(3, 4, 5), filters=100, num_layers=1, dilation=1,
                 causal=False, activation="relu", pooling="max", hidden_layer_sizes=(),
                 dropout=0.5, embedding_dim=100, freeze=False, lr=1e-3, epochs=20,
                 batch_size=32, optimizer="adam", weight_decay=0.0, early_stopping="auto",
                 validation_fraction=0.1, patience=3, class_weight=None, gradient_clip=None,
                 random_state=0, device="cpu", verbose=0):
        store_params(self, locals())

    def _build_module(self, inputs, n_outputs):
        return ConvModule(inputs, n_outputs, as_sizes(self.kernel_sizes), int(self.filters),
                          int(self.num_layers),
                          int(self.dilation), self.causal, self.activation, self.pooling,
                          self.hidden_layer_sizes, self.dropout, self.embedding_dim, self.freeze)


class ConvClassifier(NeuralClassifierMixin, ClassifierMixin, _ConvHead):
    """1-D convolutional classifier over token vectors (`Sequences`) or token ids.

    One branch per kernel size (Kim, 2014): ``num_layers`` convolutions keeping the sequence
    length (zero padding, ``causal`` pads on the left only), layer ``i`` dilated by
    ``dilation ** i``, then masked max or mean pooling over the real steps; branches are
    concatenated and fed to an MLP. Outputs at padded steps are masked after every layer, so
    padding never changes a prediction, and sequences shorter than a kernel work.

    Parameters
    ----------
    kernel_sizes : int or tuple of int, default=(3, 4, 5)
        Width of the filters of each branch (at least one branch).
    filters : int, default=100
        Filters (output channels) per convolution.
    num_layers : int, default=1
        Stacked convolutions per branch.
    dilation : int, default=1
        Dilation base: layer ``i`` uses ``dilation ** i`` (2 gives a TCN-like 1, 2, 4, ...).
    causal : bool, default=False
        Step ``t`` sees only steps ``<= t``.
    activation : {"relu", "gelu", "tanh", "sigmoid", "leaky_relu", "elu"}, default="relu"
    pooling : {"max", "mean"}, default="max"
        Pooling over time (masked).
    hidden_layer_sizes : tuple of int, default=()
        Hidden layers of the MLP after pooling; ``()`` is a linear output layer.
    dropout : float, default=0.5
    embedding_dim : int, default=100
        Size of the learned embedding for token ids without pretrained vectors.
    freeze : bool, default=False
        Keep pretrained embedding vectors (token-id input) fixed.
    lr, epochs, batch_size, optimizer, weight_decay, early_stopping, validation_fraction, \
patience, class_weight, gradient_clip, random_state, device, verbose, threshold
        Training parameters and the multi-label threshold, as in `MLPClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> from embedkit import Sequences
    >>> X = Sequences(np.random.RandomState(0).randn(8, 5, 4), lengths=[5, 3, 4, 2] * 2)
    >>> ConvClassifier(kernel_sizes=(2,), filters=8, epochs=2).fit(X, [0, 1] * 4).predict(X).shape
    (8,)
    """


class ConvRegressor(NeuralRegressorMixin, RegressorMixin, _ConvHead):
    """1-D convolutional regressor; parameters as `ConvClassifier`."""
