"""Torch pieces shared by every head: the dataset/collate pair skorch iterates, the input layer
that turns token ids or frozen vectors into a ``(B, T, D)`` tensor plus mask, and MLP blocks."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from ..base import HeadInput
from ..sequences import masked_pool

__all__ = ["HeadDataset", "collate", "SequenceInput", "mlp", "ACTIVATIONS", "masked_pool"]

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid,
               "leaky_relu": nn.LeakyReLU, "elu": nn.ELU}


class HeadDataset(torch.utils.data.Dataset):
    """Rows of a `HeadInput` (and targets) for skorch's DataLoader; `collate` batches them."""

    def __init__(self, inputs: HeadInput, y=None):
        self.inputs = inputs
        self.y = np.zeros(len(inputs), dtype=np.float32) if y is None else y

    def __len__(self):
        return len(self.inputs)

    def __getitem__(self, i):
        return self.inputs.row(i), self.y[i]


def collate(items):
    """Batch rows: stack dense rows, densify sparse rows batch by batch, pad sequences to the
    longest row of the batch (dynamic padding)."""
    xs, ys = zip(*items)
    first = xs[0]
    if isinstance(first, tuple):
        kind = first[0]
        lengths = np.array([x[2] for x in xs], dtype=np.int64)
        width = max(int(lengths.max()), 1)
        if kind == "sequence":
            batch = np.zeros((len(xs), width, first[1].shape[1]), dtype=np.float32)
        else:
            batch = np.zeros((len(xs), width), dtype=np.int64)
        for j, x in enumerate(xs):
            batch[j, : x[2]] = x[1]
        X = {"x": torch.from_numpy(batch), "lengths": torch.from_numpy(lengths)}
    elif sp.issparse(first):
        X = {"x": torch.from_numpy(sp.vstack(xs).toarray().astype(np.float32, copy=False))}
    else:
        X = {"x": torch.from_numpy(np.stack(xs).astype(np.float32, copy=False))}
    return X, torch.as_tensor(np.asarray(ys))


class SequenceInput(nn.Module):
    """Turns a head's sequence input into ``(vectors (B, T, D), mask (B, T))``.

    For token ids it owns an ``nn.Embedding`` (id 0 = padding), trained from scratch or
    initialised from the vectors the representation supplied, frozen if ``freeze``. For
    frozen vectors (`Sequences`) it passes them through.
    """

    def __init__(self, inputs: HeadInput, embedding_dim: int = 100, freeze: bool = False):
        super().__init__()
        self.kind = inputs.kind
        self.embedding = None
        if inputs.kind == "ids":
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
        mask = torch.arange(x.shape[1], device=x.device)[None, :] < lengths.to(x.device)[:, None]
        if self.embedding is not None:
            x = self.embedding(x)
        return x, mask


def mlp(in_dim: int, hidden: tuple[int, ...], out_dim: int, activation: str = "relu",
        dropout: float = 0.0) -> nn.Sequential:
    """``Linear -> activation -> dropout`` per hidden size, then a final ``Linear``."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation={activation!r}; choose one of {sorted(ACTIVATIONS)}.")
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(in_dim, int(width)), ACTIVATIONS[activation](), nn.Dropout(dropout)]
        in_dim = int(width)
    layers.append(nn.Linear(in_dim, out_dim))
    return nn.Sequential(*layers)
