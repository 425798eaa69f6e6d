"""Self-attention head: a small transformer encoder (torch's ``TransformerEncoderLayer``) over
token vectors or ids, with positional encodings, padding/causal masks and masked pooling."""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from torch import nn

from .._params import Rule, StrOptions, positive_int
from ..base import store_params
from ._base import NeuralHead
from ._data import HeadInput
from ._tasks import NeuralClassifierMixin, NeuralRegressorMixin
from ._torch import (
    ARCHITECTURE,
    AttentionPooling,
    AttentionWeightsMixin,
    SequenceInput,
    last_step,
    masked_pool,
    mlp,
)

__all__ = ["SelfAttentionClassifier", "SelfAttentionRegressor"]


def sinusoidal(length: int, dim: int, device=None) -> torch.Tensor:
    """Sinusoidal position encodings ``(length, dim)`` (Vaswani et al., 2017)."""
    pos = torch.arange(length, dtype=torch.float32, device=device)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32, device=device)
                     * (-math.log(10000.0) / dim))
    pe = torch.zeros(length, dim, device=device)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    return pe


class SelfAttentionModule(nn.Module):
    def __init__(self, inputs: HeadInput, n_outputs: int, d_model, nhead, num_layers,
                 dim_feedforward, norm, positional, max_length, causal, pooling, scoring,
                 transformer_activation, hidden, activation, dropout, embedding_dim, freeze):
        super().__init__()
        self.sequence = SequenceInput(inputs, embedding_dim, freeze)
        self.project = nn.Linear(self.sequence.dim, d_model)
        self.positional = positional
        self.max_length = max_length
        self.causal = bool(causal)
        self.pooling = pooling
        self.offset = 1 if pooling == "cls" else 0
        if positional == "learned":
            self.position = nn.Embedding(max_length + self.offset, d_model)
        if pooling == "cls":
            self.cls = nn.Parameter(torch.randn(d_model) * 0.02)
        self.input_dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                       activation=transformer_activation, batch_first=True,
                                       norm_first=(norm == "pre"))
            for _ in range(num_layers)
        )
        # pre-norm blocks leave the residual stream un-normalised: close it with a LayerNorm
        self.final_norm = nn.LayerNorm(d_model) if norm == "pre" else nn.Identity()
        self.attention_pool = AttentionPooling(d_model, scoring) if pooling == "attention" else None
        self.dropout = nn.Dropout(dropout)
        self.out = mlp(d_model, hidden, n_outputs, activation, dropout)

    def _prepare(self, x, lengths):
        """Input stream ``(B, T', d)``, real-step mask ``(B, T')`` (incl. CLS), masks for torch."""
        h, mask = self.sequence(x, lengths)
        if self.max_length is not None and self.positional == "learned" and h.shape[1] > self.max_length:
            raise ValueError(
                f"a batch holds {int(lengths.max())} steps but learned positions were sized for "
                f"max_length={self.max_length}; refit with a larger max_length, truncate the "
                "documents, or use positional='sinusoidal'."
            )
        z = self.project(h)
        if self.offset:
            z = torch.cat([self.cls.expand(z.shape[0], 1, -1), z], dim=1)
            mask = torch.cat([mask.new_ones(mask.shape[0], 1), mask], dim=1)
        width = z.shape[1]
        if self.positional == "sinusoidal":
            z = z + sinusoidal(width, z.shape[2], z.device)
        elif self.positional == "learned":
            z = z + self.position.weight[:width]
        # keys to ignore; an empty document keeps its first (padding) step so softmax has a key
        ignore = ~mask
        ignore[:, 0] = False
        causal = (torch.triu(torch.ones(width, width, dtype=torch.bool, device=z.device), 1)
                  if self.causal else None)
        return self.input_dropout(z), mask, ignore, causal

    def _pool(self, z, mask, lengths):
        if self.pooling == "cls":
            return z[:, 0]
        if self.pooling == "last":
            return last_step(z, lengths)
        if self.pooling == "attention":
            return self.attention_pool(z, mask)[0]
        return masked_pool(z, mask, self.pooling)

    def forward(self, x, lengths):
        z, mask, ignore, causal = self._prepare(x, lengths)
        for layer in self.layers:
            z = layer(z, src_mask=causal, src_key_padding_mask=ignore)
        z = self.final_norm(z)
        return self.out(self.dropout(self._pool(z, mask[:, self.offset:], lengths)))

    def attention(self, x, lengths):
        """Per-token weights ``(B, T)``: the attention pooling's weights with
        ``pooling="attention"``; otherwise the last layer's head-averaged attention of the
        pooled position (CLS, or the last step), or, for mean/max pooling, the attention each
        token receives averaged over the real queries; renormalised over the real tokens."""
        z, mask, ignore, causal = self._prepare(x, lengths)
        last = len(self.layers) - 1
        for layer in self.layers[:last]:
            z = layer(z, src_mask=causal, src_key_padding_mask=ignore)
        if self.pooling == "attention":
            z = self.final_norm(self.layers[last](z, src_mask=causal, src_key_padding_mask=ignore))
            return self.attention_pool(z, mask[:, self.offset:])[1]
        block = self.layers[last]
        q = block.norm1(z) if block.norm_first else z
        _, w = block.self_attn(q, q, q, attn_mask=causal, key_padding_mask=ignore,
                               need_weights=True, average_attn_weights=True)  # (B, T', T')
        tokens = mask[:, self.offset:]
        if self.pooling == "cls":
            w = w[:, 0, 1:]
        elif self.pooling == "last":
            idx = (lengths.to(w.device) - 1).clamp(min=0)
            w = w[torch.arange(w.shape[0], device=w.device), idx]
        else:
            rows = tokens.to(w.dtype)[:, :, None]
            w = (w * rows).sum(1) / rows.sum(1).clamp(min=1)
        w = w * tokens
        return w / w.sum(dim=1, keepdim=True).clamp(min=1e-12)


class _SelfAttentionHead(AttentionWeightsMixin, NeuralHead):
    _accepts = ("sequence", "ids")
    _parameter_constraints: ClassVar[dict] = {
        **NeuralHead._parameter_constraints,
        **{k: ARCHITECTURE[k] for k in ("hidden_layer_sizes", "activation", "dropout",
                                        "embedding_dim", "freeze", "scoring")},
        "d_model": [positive_int()],
        "nhead": [positive_int()],
        "num_layers": [positive_int()],
        "dim_feedforward": [positive_int()],
        "norm": [StrOptions({"pre", "post"})],
        "positional": [StrOptions({"sinusoidal", "learned", "none"})],
        "max_length": [positive_int()],
        "causal": ["boolean"],
        "pooling": [StrOptions({"cls", "mean", "max", "attention", "last"})],
        "transformer_activation": [StrOptions({"relu", "gelu"})],
    }
    _parameter_rules = (
        Rule(("d_model", "nhead"), lambda d, h: d % h == 0,
             "d_model must be a multiple of nhead (each head gets d_model // nhead dimensions)",
             bad={"d_model": 10, "nhead": 4}),
        Rule(("causal", "pooling"), lambda causal, pooling: not (causal and pooling == "cls"),
             "with causal=True the CLS token comes first and sees only itself; use pooling="
             "'last', 'mean', 'max' or 'attention'", bad={"causal": True, "pooling": "cls"}),
    )

    def __init__(self, d_model=64, nhead=4, num_layers=2, dim_feedforward=128, norm="pre",
                 positional="sinusoidal", max_length=512, causal=False, pooling="cls",
                 scoring="scaled_dot", transformer_activation="gelu", hidden_layer_sizes=(),
                 activation="relu", dropout=0.1, embedding_dim=100, freeze=False, lr=1e-3,
                 epochs=20, batch_size=32, optimizer="adamw", weight_decay=0.0,
                 early_stopping="auto", validation_fraction=0.1, patience=3, class_weight=None,
                 gradient_clip=1.0, random_state=0, device="cpu", verbose=0):
        store_params(self, locals())

    def _build_module(self, inputs, n_outputs):
        d_model, nhead = int(self.d_model), int(self.nhead)
        max_length = None
        if self.positional == "learned":
            max_length = int(self.max_length)
            longest = int(inputs.data.lengths.max()) if len(inputs) else 0
            if longest > max_length:
                raise ValueError(
                    f"the longest training document has {longest} steps, more than "
                    f"max_length={max_length} learned positions; raise max_length or use "
                    "positional='sinusoidal'."
                )
        return SelfAttentionModule(inputs, n_outputs, d_model, nhead, int(self.num_layers),
                                   int(self.dim_feedforward), self.norm, self.positional,
                                   max_length, self.causal, self.pooling, self.scoring,
                                   self.transformer_activation, self.hidden_layer_sizes,
                                   self.activation, self.dropout, self.embedding_dim, self.freeze)


class SelfAttentionClassifier(NeuralClassifierMixin, ClassifierMixin, _SelfAttentionHead):
    """Transformer-encoder classifier over token vectors (`Sequences`) or ids.

    Token vectors are projected to ``d_model``, given positions, passed through ``num_layers``
    blocks of multi-head self-attention + feed-forward with residual connections and layer norm
    (torch's ``nn.TransformerEncoderLayer``), then pooled. Padding is excluded from every
    attention (key padding mask) and every pooling, so it never changes a prediction.

    Parameters
    ----------
    d_model : int, default=64
        Width of the residual stream; a multiple of ``nhead``.
    nhead : int, default=4
    num_layers : int, default=2
    dim_feedforward : int, default=128
    norm : {"pre", "post"}, default="pre"
        Layer norm before each sub-block (pre-LN, more stable) or after the residual (as in 2017).
    positional : {"sinusoidal", "learned", "none"}, default="sinusoidal"
    max_length : int, default=512
        Number of learned positions (``positional="learned"`` only).
    causal : bool, default=False
        Each step attends only to itself and earlier steps.
    pooling : {"cls", "mean", "max", "attention", "last"}, default="cls"
        ``"cls"`` prepends a learned token and classifies its output; ``"attention"`` uses a
        learned query; ``"last"`` the last real step (natural with ``causal=True``).
    scoring : {"dot", "scaled_dot", "additive"}, default="scaled_dot"
        Scoring of ``pooling="attention"``.
    transformer_activation : {"relu", "gelu"}, default="gelu"
        Activation inside the feed-forward blocks.
    hidden_layer_sizes : tuple of int, default=()
        Hidden layers of the MLP on the pooled vector.
    activation : str, default="relu"
        Activation of that MLP.
    dropout : float, default=0.1
    embedding_dim : int, default=100
        Size of the learned embedding for token ids without pretrained vectors.
    freeze : bool, default=False
        Keep pretrained embedding vectors (token-id input) fixed.
    optimizer : str, default="adamw"
    gradient_clip : float or None, default=1.0
    lr, epochs, batch_size, weight_decay, early_stopping, validation_fraction, patience, \
class_weight, random_state, device, verbose, threshold
        Training parameters and the multi-label threshold, as in `MLPClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> from embedkit import Sequences
    >>> X = Sequences(np.random.RandomState(0).randn(8, 5, 4), lengths=[5, 3, 4, 2] * 2)
    >>> head = SelfAttentionClassifier(d_model=8, nhead=2, epochs=2).fit(X, [0, 1] * 4)
    >>> [round(float(w.sum()), 3) for w in head.attention_weights(X[:2])]
    [1.0, 1.0]
    """


class SelfAttentionRegressor(NeuralRegressorMixin, RegressorMixin, _SelfAttentionHead):
    """Transformer-encoder regressor; parameters as `SelfAttentionClassifier`."""
