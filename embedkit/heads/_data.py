"""What a head trains on: `HeadInput` (any accepted input, normalised), the dataset skorch
iterates and the collate function that turns its rows into padded batches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from .._batching import pad_rows

__all__ = ["HeadDataset", "HeadInput", "collate"]


@dataclass
class HeadInput:
    """Any input a head accepts, normalised: its form and how to cut one row from it.

    Examples
    --------
    >>> import numpy as np
    >>> HeadInput("pooled", np.ones((3, 2), np.float32), 2)[1].tolist()
    [1.0, 1.0]
    """

    form: str  # one of embedkit.base.FORMS: "pooled" | "sequence" | "ids" | "text"
    data: Any  # ndarray | csr_matrix (pooled) | Sequences | TokenIds | list of str (text)
    dim: int  # feature / vector dimension (0 for ids and text)

    def __len__(self) -> int:
        return len(self.data) if isinstance(self.data, list) else self.data.shape[0]

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

    def spec(self) -> dict:
        """What a head's module is built from, without the data: form, dimension, sparsity,
        vocabulary size and the shape of the token ids' vectors (`stub` rebuilds an input)."""
        vectors = self.vectors
        return {"form": self.form, "dim": int(self.dim), "sparse": bool(self.sparse),
                "vocab_size": int(self.vocab_size),
                "vectors": None if vectors is None else [int(n) for n in vectors.shape]}

    @classmethod
    def stub(cls, spec: dict) -> HeadInput:
        """A one-row input of the form `spec` describes, to rebuild a module whose weights are
        then loaded (its values do not matter)."""
        from ..sequences import Sequences, TokenIds

        form, dim = spec["form"], int(spec["dim"])
        if form == "pooled":
            data = (sp.csr_matrix((1, dim), dtype=np.float32) if spec["sparse"]
                    else np.zeros((1, dim), dtype=np.float32))
        elif form == "sequence":
            data = Sequences(np.zeros((1, 1, dim), dtype=np.float32), np.ones(1, dtype=np.int64))
        elif form == "ids":
            vectors = spec["vectors"]
            data = TokenIds(np.zeros((1, 1), dtype=np.int64), np.ones(1, dtype=np.int64),
                            [""] * int(spec["vocab_size"]),
                            vectors=None if vectors is None else np.zeros(vectors, np.float32))
        else:
            raise ValueError(f"cannot rebuild a head input of form {form!r}.")
        return cls(form, data, dim)

    def __getitem__(self, i: int):
        """Row ``i`` as `collate` expects it: a pooled row, or ``(form, steps, length)``."""
        d = self.data
        if self.form == "pooled":
            return d[i]
        n = int(d.lengths[i])
        body = d.values[i, :n] if self.form == "sequence" else d.ids[i, :n]
        return (self.form, body, n)


class HeadDataset(torch.utils.data.Dataset):
    """``(rows[i], y[i])`` pairs for skorch's DataLoader.

    ``rows`` is anything indexable by row: a `HeadInput` (batched by `collate`) or a list of
    token-id arrays (the fine-tuning head's). Targets default to zeros (prediction).
    """

    def __init__(self, rows, y=None):
        self.rows = rows
        self.y = np.zeros(len(rows), dtype=np.float32) if y is None else y

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i], self.y[i]


def collate(items):
    """Batch rows: stack dense rows, densify sparse rows batch by batch, pad sequences to the
    longest row of the batch (dynamic padding)."""
    xs, ys = zip(*items, strict=True)
    first = xs[0]
    if isinstance(first, tuple):
        dtype = np.float32 if first[0] == "sequence" else np.int64
        batch, lengths = pad_rows([x[1] for x in xs], value=0, dtype=dtype)
        X = {"x": torch.from_numpy(batch), "lengths": torch.from_numpy(lengths)}
    elif sp.issparse(first):
        X = {"x": torch.from_numpy(sp.vstack(xs).toarray().astype(np.float32, copy=False))}
    else:
        X = {"x": torch.from_numpy(np.stack(xs).astype(np.float32, copy=False))}
    return X, torch.as_tensor(np.asarray(ys))
