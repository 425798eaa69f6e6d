"""Padded containers for sequence output (`Sequences`) and token ids (`TokenIds`), and masked pooling.

Both containers behave like arrays along their first axis: ``len``, ``.shape`` and row indexing
with ints, slices, boolean masks and index arrays, so scikit-learn's CV splitting and the heads'
mini-batching index them like any ``X``. Padding is zeros (vectors) or id 0 (ids), and a
boolean ``mask`` tells real steps from padding.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ._batching import pad_rows, padding_mask

__all__ = ["Sequences", "TokenIds", "masked_pool", "POOLINGS"]

POOLINGS = ("mean", "max", "sum")


def _normalise_key(key: Any, n: int):
    if isinstance(key, tuple):  # scikit-learn's _safe_indexing writes X[key, ...]
        if len(key) == 2 and key[1] is Ellipsis:
            key = key[0]
        else:
            raise IndexError("Sequences support row indexing only: x[rows] or x[rows, ...]")
    if isinstance(key, numbers.Integral):
        key = int(key)
        if not -n <= key < n:
            raise IndexError(f"row {key} is out of range for {n} rows")
        return slice(key % n, key % n + 1)
    if isinstance(key, slice):
        return key
    key = np.asarray(key)
    if key.dtype == bool:
        if key.shape != (n,):
            raise IndexError(f"boolean row mask has shape {key.shape}; expected ({n},)")
        return np.flatnonzero(key)
    if key.size == 0:
        return key.astype(np.intp)
    if not np.issubdtype(key.dtype, np.integer):
        raise IndexError(f"rows must be ints, slices, boolean masks or int arrays, got {key.dtype}")
    return key


class _Padded:
    """Shared row-indexing behaviour of the padded containers."""

    _array_fields: tuple[str, ...] = ()
    _shared_fields: tuple[str, ...] = ()

    lengths: np.ndarray
    tokens: np.ndarray | None

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    def __getitem__(self, key):
        key = _normalise_key(key, len(self))
        rows = {f: getattr(self, f)[key] for f in self._array_fields}
        tokens = None if self.tokens is None else self.tokens[key]
        shared = {f: getattr(self, f) for f in self._shared_fields}
        out = type(self)(**rows, tokens=tokens, **shared, trim=True)
        return out

    @property
    def mask(self) -> np.ndarray:
        """Boolean ``(n, T)`` array, True at real (non-padding) steps (`padding_mask`)."""
        return padding_mask(self.lengths, self.shape[1])

    def _check_lengths(self, width: int):
        self.lengths = np.asarray(self.lengths, dtype=np.int64)
        if self.lengths.ndim != 1:
            raise ValueError("lengths must be a 1-D array")
        if len(self.lengths) and (self.lengths.min() < 0 or self.lengths.max() > width):
            raise ValueError(f"lengths must lie in [0, {width}], "
                             f"got {self.lengths.min()}..{self.lengths.max()}")
        if self.tokens is not None:
            tokens = np.empty(len(self.tokens), dtype=object)
            tokens[:] = list(self.tokens)
            self.tokens = tokens


class Sequences(_Padded):
    """Padded token-level vectors: ``values`` float32 ``(n, T, dim)`` plus ``lengths`` ``(n,)``.

    Parameters
    ----------
    values : array of shape (n, T, dim)
        Vectors, zero beyond each row's length.
    lengths : array of shape (n,)
        Number of real steps per row.
    tokens : sequence of list of str, optional
        The tokens behind the steps, for aligning attention weights to words.
    trim : bool, default=False
        Cut ``values`` to the longest row (used after indexing).

    Examples
    --------
    >>> import numpy as np
    >>> s = Sequences(np.ones((2, 3, 4)), lengths=[3, 1])
    >>> s.mask.tolist()
    [[True, True, True], [True, False, False]]
    >>> s.pool("mean").shape
    (2, 4)
    """

    _array_fields = ("values", "lengths")

    def __init__(self, values, lengths, tokens=None, trim: bool = False):
        values = np.asarray(values, dtype=np.float32)
        if values.ndim != 3:
            raise ValueError(f"values must have shape (n, T, dim), got {values.shape}")
        self.values = values
        self.lengths = lengths
        self.tokens = tokens
        self._check_lengths(values.shape[1])
        if values.shape[0] != len(self.lengths):
            raise ValueError(f"{values.shape[0]} rows of values but {len(self.lengths)} lengths")
        if trim:
            width = int(self.lengths.max()) if len(self.lengths) else 0
            self.values = self.values[:, : max(width, 1)]

    @classmethod
    def from_rows(cls, rows, tokens=None, dim: int | None = None) -> Sequences:
        """Pad per-document ``(length_i, dim)`` arrays into one `Sequences`.

        Parameters
        ----------
        rows : sequence of array of shape (length_i, dim)
        tokens : sequence of list of str, optional
        dim : int, optional
            Vector size; needed only when ``rows`` is empty.

        Examples
        --------
        >>> import numpy as np
        >>> Sequences.from_rows([np.ones((2, 3)), np.ones((0, 3))]).lengths.tolist()
        [2, 0]
        """
        if not len(rows):
            return cls(np.zeros((0, 1, int(dim or 0)), np.float32), np.zeros(0, np.int64),
                       tokens=tokens)
        values, lengths = pad_rows(rows, value=0.0, dtype=np.float32)
        return cls(values, lengths, tokens=tokens)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.values.shape

    @property
    def dim(self) -> int:
        return int(self.values.shape[2])

    def pool(self, how: str = "mean") -> np.ndarray:
        """Masked pooling over steps; rows with no steps give zeros, never NaN."""
        return masked_pool(self.values, self.mask, how)

    def __repr__(self) -> str:
        return f"Sequences(n={len(self)}, max_length={self.shape[1]}, dim={self.dim})"


class TokenIds(_Padded):
    """Padded token ids ``(n, T)`` plus ``lengths``, the vocabulary, and optional initial vectors.

    Id 0 is padding and id 1 the unknown token; ``vocabulary[i]`` is the word of id ``i``.
    ``vectors``, when given, is a ``(len(vocabulary), dim)`` float32 matrix a head can use to
    initialise its embedding layer (frozen or trainable).

    Examples
    --------
    >>> t = TokenIds([[2, 3], [2, 0]], lengths=[2, 1], vocabulary=["<pad>", "<unk>", "a", "b"])
    >>> t[1].ids.tolist(), t.vocab_size
    ([[2]], 4)
    """

    _array_fields = ("ids", "lengths")
    _shared_fields = ("vocabulary", "vectors")

    def __init__(self, ids, lengths, vocabulary, vectors=None, tokens=None, trim: bool = False):
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 2:
            raise ValueError(f"ids must have shape (n, T), got {ids.shape}")
        self.ids = ids
        self.lengths = lengths
        self.vocabulary = list(vocabulary)
        self.vectors = None if vectors is None else np.asarray(vectors, dtype=np.float32)
        self.tokens = tokens
        self._check_lengths(ids.shape[1])
        if ids.size and (ids.min() < 0 or ids.max() >= len(self.vocabulary)):
            raise ValueError(f"ids must lie in [0, {len(self.vocabulary)}) for this vocabulary")
        if self.vectors is not None and self.vectors.shape[0] != len(self.vocabulary):
            raise ValueError(
                f"vectors has {self.vectors.shape[0]} rows for a vocabulary of {len(self.vocabulary)}"
            )
        if trim:
            width = int(self.lengths.max()) if len(self.lengths) else 0
            self.ids = self.ids[:, : max(width, 1)]

    @property
    def shape(self) -> tuple[int, int]:
        return self.ids.shape

    @property
    def vocab_size(self) -> int:
        return len(self.vocabulary)

    def __repr__(self) -> str:
        return f"TokenIds(n={len(self)}, max_length={self.shape[1]}, vocab_size={self.vocab_size})"


def masked_pool(values, mask, how: str = "mean"):
    """Pool ``values (n, T, d)`` over the steps where ``mask (n, T)`` is True.

    Works on numpy arrays and torch tensors alike. Empty rows pool to zeros.
    """
    if how not in POOLINGS:
        raise ValueError(f"pooling={how!r} is not one of {POOLINGS}")
    is_numpy = isinstance(values, np.ndarray)
    m = mask[..., None]
    if how == "max":
        if is_numpy:
            out = np.where(m, values, -np.inf).max(axis=1) if values.shape[1] else np.zeros(
                (values.shape[0], values.shape[2]), values.dtype)
            return np.where(np.isfinite(out), out, 0).astype(values.dtype)
        out = values.masked_fill(~m, float("-inf")).amax(dim=1)
        return out.masked_fill(~mask.any(dim=1, keepdim=True), 0.0)
    total = (values * m).sum(axis=1) if is_numpy else (values * m).sum(dim=1)
    if how == "sum":
        return total
    count = m.sum(axis=1) if is_numpy else m.sum(dim=1)
    if is_numpy:
        return (total / np.maximum(count, 1)).astype(values.dtype)
    return total / count.clamp(min=1)
