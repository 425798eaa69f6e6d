"""Torch pieces shared by every head: the input layer that turns token ids or frozen vectors into
a ``(B, T, D)`` tensor plus mask, MLP blocks, masked attention and pooling."""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
import torch
from torch import nn

from .._batching import padding_mask
from .._params import Interval, Sizes, StrOptions, as_sizes, positive_int
from ..sequences import masked_pool
from ._data import HeadDataset, HeadInput, collate

__all__ = [
    "ACTIVATIONS",
    "ARCHITECTURE",
    "AttentionPooling",
    "AttentionWeightsMixin",
    "SequenceInput",
    "last_step",
    "masked_pool",
    "masked_softmax",
    "mlp",
]

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid,
               "leaky_relu": nn.LeakyReLU, "elu": nn.ELU}

#: table entries (`embedkit._params`) of the parameters the torch heads share
ARCHITECTURE = {
    "activation": [StrOptions(set(ACTIVATIONS))],
    "dropout": [Interval(Real, 0, 1, closed="left")],
    "hidden_layer_sizes": [Sizes()],
    "embedding_dim": [positive_int()],
    "freeze": ["boolean"],
    "scoring": [StrOptions({"dot", "scaled_dot", "additive"})],
}


class SequenceInput(nn.Module):
    """Turns a head's sequence input into ``(vectors (B, T, D), mask (B, T))``.

    For token ids it owns an ``nn.Embedding`` (id 0 = padding), trained from scratch or
    initialised from the vectors the representation supplied, frozen if ``freeze``. For
    frozen vectors (`Sequences`) it passes them through.
    """

    def __init__(self, inputs: HeadInput, embedding_dim: int = 100, freeze: bool = False):
        super().__init__()
        self.form = inputs.form
        self.embedding = None
        if inputs.form == "ids":
            vectors = inputs.vectors
            if vectors is not None:
                # torch.tensor copies: as_tensor would share memory with the representation's
                # vectors, and fine-tuning would then overwrite them in place
                self.embedding = nn.Embedding.from_pretrained(
                    torch.tensor(vectors, dtype=torch.float32), freeze=bool(freeze), padding_idx=0
                )
            else:
                if freeze:
                    raise ValueError(
                        "freeze=True needs pretrained vectors, but the token ids carry none; "
                        "align the TokenIndexer to a static representation or set freeze=False."
                    )
                self.embedding = nn.Embedding(inputs.vocab_size, embedding_dim, padding_idx=0)
            self.dim = self.embedding.embedding_dim
        else:
            self.dim = inputs.dim

    def forward(self, x, lengths):
        mask = padding_mask(lengths.to(x.device), x.shape[1])
        if self.embedding is not None:
            x = self.embedding(x)
        return x, mask


def mlp(in_dim: int, hidden, out_dim: int, activation: str = "relu",
        dropout: float = 0.0) -> nn.Sequential:
    """``Linear -> activation -> dropout`` per hidden size (an int or a tuple of them), then a
    final ``Linear``."""
    layers: list[nn.Module] = []
    for width in as_sizes(hidden):
        layers += [nn.Linear(in_dim, int(width)), ACTIVATIONS[activation](), nn.Dropout(dropout)]
        in_dim = int(width)
    layers.append(nn.Linear(in_dim, out_dim))
    return nn.Sequential(*layers)


# ---------------------------------------------------------------------------------------------
# Masked attention and pooling shared by the sequence heads
# ---------------------------------------------------------------------------------------------


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax of ``scores (B, T)`` over the steps where ``mask`` is True.

    Padding gets exactly zero weight; a row with no real step gets all zeros (never NaN).
    """
    scores = scores.masked_fill(~mask, float("-inf"))
    empty = ~mask.any(dim=1, keepdim=True)
    scores = scores.masked_fill(empty, 0.0)
    return torch.softmax(scores, dim=1) * mask


class AttentionPooling(nn.Module):
    """Attention pooling with one learned query: ``sum_t softmax_t(score(q, h_t)) h_t``.

    Parameters
    ----------
    dim : int
        Size of the step vectors ``h_t``.
    scoring : {"dot", "scaled_dot", "additive"}, default="scaled_dot"
        ``q . h_t``; ``q . h_t / sqrt(dim)``; or additive (Bahdanau) ``v . tanh(W h_t + b)``,
        where the learned ``v`` plays the query.
    attention_dim : int, default=64
        Width of the hidden layer of additive scoring.

    ``forward(h, mask)`` returns ``(pooled (B, dim), weights (B, T))``; weights are zero on padding
    and sum to one over each row's real steps (all zero for an empty row).
    """

    def __init__(self, dim: int, scoring: str = "scaled_dot", attention_dim: int = 64):
        super().__init__()
        self.scoring = scoring
        self.scale = 1.0 / math.sqrt(dim) if scoring == "scaled_dot" else 1.0
        if scoring == "additive":
            self.project = nn.Linear(dim, int(attention_dim))
            self.query = nn.Parameter(torch.empty(int(attention_dim)))
        else:
            self.project = None
            self.query = nn.Parameter(torch.empty(dim))
        nn.init.normal_(self.query, std=1.0 / math.sqrt(self.query.numel()))

    def forward(self, h: torch.Tensor, mask: torch.Tensor):
        keys = torch.tanh(self.project(h)) if self.project is not None else h
        weights = masked_softmax((keys @ self.query) * self.scale, mask)
        return torch.einsum("bt,btd->bd", weights, h), weights


def last_step(h: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """``h[b, lengths[b] - 1]`` per row (zeros for an empty row)."""
    idx = (lengths.to(h.device) - 1).clamp(min=0)
    out = h[torch.arange(h.shape[0], device=h.device), idx]
    return out * (lengths.to(h.device) > 0)[:, None]


class AttentionWeightsMixin:
    """``attention_weights(X)`` for heads whose module has ``attention(x, lengths) -> (B, T)``."""

    def attention_weights(self, X, return_tokens: bool = False) -> list:
        """Attention weight of every token of every document.

        Parameters
        ----------
        X : Sequences or TokenIds
            Input as given to ``predict``.
        return_tokens : bool, default=False
            Return ``(tokens, weights)`` pairs instead of bare weights; tokens come from
            ``X.tokens`` (or, for token ids without tokens, from the vocabulary).

        Returns
        -------
        list of ndarray of shape (length_i,)
            One array per document, aligned to its tokens: non-negative, summing to one over the
            document's tokens (an empty document gives an empty array).
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "net_")
        inputs = self._as_input(X, reset=False)
        module = self.net_.module_
        device = next(module.parameters()).device
        loader = torch.utils.data.DataLoader(
            HeadDataset(inputs), batch_size=self.batch_size, shuffle=False, collate_fn=collate
        )
        was_training = module.training
        module.eval()
        out: list[np.ndarray] = []
        try:
            with torch.inference_mode():
                for batch, _ in loader:
                    lengths = batch["lengths"]
                    w = module.attention(batch["x"].to(device), lengths.to(device)).float().cpu().numpy()
                    out.extend(w[i, : int(n)] for i, n in enumerate(lengths.tolist()))
        finally:
            module.train(was_training)
        if not return_tokens:
            return out
        data = inputs.data
        if data.tokens is not None:
            tokens = [list(t)[: len(w)] for t, w in zip(data.tokens, out, strict=True)]
        elif inputs.form == "ids":
            vocab = np.asarray(data.vocabulary, dtype=object)
            tokens = [vocab[data.ids[i, : len(w)]].tolist() for i, w in enumerate(out)]
        else:
            raise ValueError(
                "return_tokens=True needs the tokens behind the vectors, but these Sequences carry "
                "none (tokens=None); pass Sequences(..., tokens=...) or use return_tokens=False."
            )
        return list(zip(tokens, out, strict=True))
