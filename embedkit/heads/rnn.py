"""Recurrent head: RNN / LSTM / GRU over token vectors or ids, packed, with masked pooling."""

from __future__ import annotations

from numbers import Real
from typing import ClassVar

import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .._params import Interval, StrOptions, positive_int
from ..base import store_params
from ._base import NeuralHead
from ._data import HeadInput
from ._tasks import NeuralClassifierMixin, NeuralRegressorMixin
from ._torch import (
    ARCHITECTURE,
    AttentionPooling,
    AttentionWeightsMixin,
    SequenceInput,
    masked_pool,
    mlp,
)

__all__ = ["RNNClassifier", "RNNRegressor"]

CELLS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


def _remember_by_default(rnn: nn.Module, cell: str, gate_bias: float) -> None:
    """Bias gated cells towards keeping their state: LSTM forget-gate bias ``+gate_bias`` and
    input-gate bias ``-gate_bias``, GRU update-gate bias ``+gate_bias`` (the chrono
    initialisation of Tallec & Ollivier, 2018, with one time scale). Information then survives
    ``~exp(gate_bias)`` steps at initialisation, so gradients from a long-range label reach
    early tokens before training has learned to keep them."""
    h = rnn.hidden_size
    with torch.no_grad():
        for name, p in rnn.named_parameters():
            if name.startswith("bias_ih"):
                p[h: 2 * h] += gate_bias  # LSTM gates (i, f, g, o): f; GRU gates (r, z, n): z
                if cell == "lstm":
                    p[:h] -= gate_bias


class RNNModule(nn.Module):
    def __init__(self, inputs: HeadInput, n_outputs: int, cell, hidden_size, num_layers,
                 bidirectional, nonlinearity, gate_bias, pooling, scoring, hidden, activation,
                 dropout, embedding_dim, freeze):
        super().__init__()
        self.sequence = SequenceInput(inputs, embedding_dim, freeze)
        extra = {"nonlinearity": nonlinearity} if cell == "rnn" else {}
        self.rnn = CELLS[cell](self.sequence.dim, hidden_size, num_layers=num_layers,
                               batch_first=True, bidirectional=bool(bidirectional),
                               dropout=dropout if num_layers > 1 else 0.0, **extra)
        self.bidirectional = bool(bidirectional)
        self.pooling = pooling
        if cell in ("lstm", "gru") and gate_bias:
            _remember_by_default(self.rnn, cell, float(gate_bias))
        out_dim = hidden_size * (2 if bidirectional else 1)
        self.attention_pool = AttentionPooling(out_dim, scoring) if pooling == "attention" else None
        self.dropout = nn.Dropout(dropout)
        self.out = mlp(out_dim, hidden, n_outputs, activation, dropout)

    def encode(self, x, lengths):
        """Per-step outputs ``(B, T, H*dirs)`` (zero on padding), final hidden state, mask."""
        h, mask = self.sequence(x, lengths)
        # an empty row is run over one (padding) step, then masked out / zeroed below
        steps = lengths.clamp(min=1).cpu()
        packed = pack_padded_sequence(h, steps, batch_first=True, enforce_sorted=False)
        out, state = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=h.shape[1])
        if isinstance(state, tuple):  # LSTM: (h_n, c_n)
            state = state[0]
        return out, state, mask

    def _pool(self, out, state, mask, lengths):
        if self.pooling == "last":
            # acceptor: forward direction after the last real step; backward direction after
            # reading back to the first step (h_n holds both, in the batch's original order)
            last = torch.cat([state[-2], state[-1]], dim=1) if self.bidirectional else state[-1]
            return last * (lengths.to(last.device) > 0)[:, None]
        if self.pooling == "attention":
            return self.attention_pool(out, mask)[0]
        return masked_pool(out, mask, self.pooling)

    def forward(self, x, lengths):
        out, state, mask = self.encode(x, lengths)
        return self.out(self.dropout(self._pool(out, state, mask, lengths)))

    def attention(self, x, lengths):
        if self.attention_pool is None:
            raise ValueError(
                f"attention weights exist only with pooling='attention' (this head has "
                f"pooling={self.pooling!r}); refit with RNNClassifier(pooling='attention')."
            )
        out, _, mask = self.encode(x, lengths)
        return self.attention_pool(out, mask)[1]


class _RNNHead(AttentionWeightsMixin, NeuralHead):
    _accepts = ("sequence", "ids")
    _parameter_constraints: ClassVar[dict] = {
        **NeuralHead._parameter_constraints,
        **{k: ARCHITECTURE[k] for k in ("hidden_layer_sizes", "activation", "dropout",
                                        "embedding_dim", "freeze", "scoring")},
        "cell": [StrOptions(set(CELLS))],
        "hidden_size": [positive_int()],
        "num_layers": [positive_int()],
        "bidirectional": ["boolean"],
        "nonlinearity": [StrOptions({"tanh", "relu"})],
        "gate_bias": [Interval(Real, -20, 20, closed="both")],
        "pooling": [StrOptions({"last", "mean", "max", "attention"})],
    }

    def __init__(self, cell="lstm", hidden_size=128, num_layers=1, bidirectional=False,
                 nonlinearity="tanh", gate_bias=1.0, pooling="last", scoring="scaled_dot",
                 hidden_layer_sizes=(), activation="relu", dropout=0.2, embedding_dim=100,
                 freeze=False, lr=1e-3, epochs=20, batch_size=32, optimizer="adam",
                 weight_decay=0.0, early_stopping="auto", validation_fraction=0.1, patience=3,
                 class_weight=None, gradient_clip=5.0, random_state=0, device="cpu", verbose=0):
        store_params(self, locals())

    def _build_module(self, inputs, n_outputs):
        return RNNModule(inputs, n_outputs, self.cell, int(self.hidden_size), int(self.num_layers),
                         self.bidirectional, self.nonlinearity, self.gate_bias, self.pooling,
                         self.scoring,
                         self.hidden_layer_sizes, self.activation, self.dropout,
                         self.embedding_dim, self.freeze)


class RNNClassifier(NeuralClassifierMixin, ClassifierMixin, _RNNHead):
    """Recurrent classifier (Elman RNN, LSTM or GRU) over token vectors (`Sequences`) or ids.

    Batches are packed (``pack_padded_sequence``), so the recurrence never reads padding, and
    every pooling is masked: padding never changes a prediction.

    Parameters
    ----------
    cell : {"rnn", "lstm", "gru"}, default="lstm"
    hidden_size : int, default=128
        Hidden units per direction.
    num_layers : int, default=1
    bidirectional : bool, default=False
    nonlinearity : {"tanh", "relu"}, default="tanh"
        Activation of the plain ``"rnn"`` cell.
    gate_bias : float, default=1.0
        Initial bias that makes LSTM / GRU cells keep their state (LSTM forget gate ``+b``,
        input gate ``-b``; GRU update gate ``+b``). Information is kept for roughly
        ``exp(gate_bias)`` steps at the start of training: raise it (e.g. 3 to 4) when the
        label depends on tokens ~100 steps before the end; 0 gives torch's plain initialisation.
        Between -20 and 20 (beyond, the gates saturate in float32).
    pooling : {"last", "mean", "max", "attention"}, default="last"
        ``"last"`` is the acceptor: the state after the last real step (and, when bidirectional,
        the backward state after reading back to the first step); ``"mean"`` / ``"max"`` pool
        the per-step outputs (transducer); ``"attention"`` pools them with a learned query and
        makes `attention_weights` available.
    scoring : {"dot", "scaled_dot", "additive"}, default="scaled_dot"
        Attention scoring for ``pooling="attention"``.
    hidden_layer_sizes : tuple of int, default=()
        Hidden layers of the MLP on the pooled vector.
    activation : str, default="relu"
        Activation of that MLP.
    dropout : float, default=0.2
        Between stacked layers and before the output MLP.
    embedding_dim : int, default=100
        Size of the learned embedding for token ids without pretrained vectors.
    freeze : bool, default=False
        Keep pretrained embedding vectors (token-id input) fixed.
    gradient_clip : float or None, default=5.0
        Gradient-norm clipping (on by default for recurrent nets).
    lr, epochs, batch_size, optimizer, weight_decay, early_stopping, validation_fraction, \
patience, class_weight, random_state, device, verbose, threshold
        Training parameters and the multi-label threshold, as in `MLPClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> from embedkit import Sequences
    >>> X = Sequences(np.random.RandomState(0).randn(8, 5, 4), lengths=[5, 3, 4, 2] * 2)
    >>> RNNClassifier(cell="gru", hidden_size=8, epochs=2).fit(X, [0, 1] * 4).predict(X).shape
    (8,)
    """


class RNNRegressor(NeuralRegressorMixin, RegressorMixin, _RNNHead):
    """Recurrent regressor; parameters as `RNNClassifier`."""
