"""Attention-pooling head: per-token encoder, one learned query, MLP (the course's
"encoder + attention + MLP"), with inspectable per-token weights."""

from __future__ import annotations

from typing import ClassVar

from sklearn.base import ClassifierMixin, RegressorMixin
from torch import nn

from .._params import Sizes, as_sizes, positive_int
from ..base import store_params
from ._base import NeuralHead
from ._data import HeadInput
from ._tasks import NeuralClassifierMixin, NeuralRegressorMixin
from ._torch import (
    ACTIVATIONS,
    ARCHITECTURE,
    AttentionPooling,
    AttentionWeightsMixin,
    SequenceInput,
    mlp,
)

__all__ = ["AttentionClassifier", "AttentionRegressor"]


class AttentionModule(nn.Module):
    def __init__(self, inputs: HeadInput, n_outputs: int, encoder_layer_sizes, scoring,
                 attention_dim, hidden, activation, dropout, embedding_dim, freeze):
        super().__init__()
        self.sequence = SequenceInput(inputs, embedding_dim, freeze)
        layers: list[nn.Module] = []
        dim = self.sequence.dim
        for width in as_sizes(encoder_layer_sizes):  # applied to every token independently
            layers += [nn.Linear(dim, int(width)), ACTIVATIONS[activation](), nn.Dropout(dropout)]
            dim = int(width)
        self.encoder = nn.Sequential(*layers)
        self.attention_pool = AttentionPooling(dim, scoring, attention_dim)
        self.dropout = nn.Dropout(dropout)
        self.out = mlp(dim, hidden, n_outputs, activation, dropout)

    def _encode(self, x, lengths):
        h, mask = self.sequence(x, lengths)
        return self.attention_pool(self.encoder(h), mask)

    def forward(self, x, lengths):
        pooled, _ = self._encode(x, lengths)
        return self.out(self.dropout(pooled))

    def attention(self, x, lengths):
        return self._encode(x, lengths)[1]


class _AttentionHead(AttentionWeightsMixin, NeuralHead):
    _accepts = ("sequence", "ids")
    _parameter_constraints: ClassVar[dict] = {
        **NeuralHead._parameter_constraints,
        **{k: ARCHITECTURE[k] for k in ("hidden_layer_sizes", "activation", "dropout",
                                        "embedding_dim", "freeze", "scoring")},
        "encoder_layer_sizes": [Sizes()],
        "attention_dim": [positive_int()],
    }

    def __init__(self, encoder_layer_sizes=(128,), scoring="scaled_dot", attention_dim=64,
                 hidden_layer_sizes=(128,), activation="relu", dropout=0.2, embedding_dim=100,
                 freeze=False, lr=1e-3, epochs=20, batch_size=32, optimizer="adam",
                 weight_decay=0.0, early_stopping="auto", validation_fraction=0.1, patience=3,
                 class_weight=None, gradient_clip=None, random_state=0, device="cpu", verbose=0):
        store_params(self, locals())

    def _build_module(self, inputs, n_outputs):
        return AttentionModule(inputs, n_outputs, self.encoder_layer_sizes, self.scoring,
                               int(self.attention_dim), self.hidden_layer_sizes, self.activation,
                               self.dropout, self.embedding_dim, self.freeze)


class AttentionClassifier(NeuralClassifierMixin, ClassifierMixin, _AttentionHead):
    """Attention-pooling classifier over token vectors (`Sequences`) or ids.

    Each token vector goes through the same small encoder (``encoder_layer_sizes``), a learned
    query scores every token (masked softmax over the real tokens), the weighted sum feeds an
    MLP. The model is order-free (no recurrence, no positions), cheap, and interpretable:
    `attention_weights` returns the weight of every token of every document.

    Parameters
    ----------
    encoder_layer_sizes : tuple of int, default=(128,)
        Per-token ``Linear -> activation`` layers before attention; ``()`` attends over the
        input vectors directly.
    scoring : {"dot", "scaled_dot", "additive"}, default="scaled_dot"
        Query-token score: dot product, dot product / sqrt(dim), or additive (Bahdanau).
    attention_dim : int, default=64
        Hidden width of additive scoring.
    hidden_layer_sizes : tuple of int, default=(128,)
        Hidden layers of the MLP on the pooled vector.
    activation : {"relu", "gelu", "tanh", "sigmoid", "leaky_relu", "elu"}, default="relu"
    dropout : float, default=0.2
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
    >>> head = AttentionClassifier(epochs=2).fit(X, [0, 1] * 4)
    >>> [w.shape for w in head.attention_weights(X[:2])]
    [(5,), (3,)]
    """


class AttentionRegressor(NeuralRegressorMixin, RegressorMixin, _AttentionHead):
    """Attention-pooling regressor; parameters as `AttentionClassifier`."""
