"""The one batching layer: length-sorted batches, padding, device resolution.

Every place that turns variable-length rows into padded batches (the heads' collate, the
fine-tuning head, the neural encoders, the embedding cache, `Sequences.from_rows`) calls these
functions, so padding, ordering and device rules are written once.

Examples
--------
>>> import numpy as np
>>> values, lengths = pad_rows([np.array([1, 2, 3]), np.array([4])], value=0)
>>> values.tolist(), lengths.tolist()
([[1, 2, 3], [4, 0, 0]], [3, 1])
>>> [b.tolist() for b in length_sorted_batches(np.array([1, 5, 3, 2]), batch_size=2)]
[[1, 2], [3, 0]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["pad_rows", "length_sorted_batches", "resolve_device", "DEVICES"]

#: device names accepted wherever a ``device`` parameter exists ("cuda:N" too)
DEVICES = ("auto", "cpu", "cuda", "mps")


def pad_rows(rows: Sequence, *, value=0, dtype=None, width: int | None = None):
    """Stack rows of different lengths into one padded array.

    Parameters
    ----------
    rows : sequence of array-like of shape (length_i, ...)
        The rows; every row has the same trailing shape.
    value : scalar, default=0
        Fill value of the padding.
    dtype : numpy dtype, optional
        Dtype of the result (default: the first row's).
    width : int, optional
        Pad to this many steps (at least the longest row). By default the longest row, and at
        least 1, so a batch of empty rows still has one (padding) step.

    Returns
    -------
    values : ndarray of shape (n, width, ...)
    lengths : ndarray of shape (n,), int64
    """
    rows = [np.asarray(r) for r in rows]
    lengths = np.fromiter((r.shape[0] for r in rows), dtype=np.int64, count=len(rows))
    longest = int(lengths.max()) if len(rows) else 0
    width = max(longest, 1) if width is None else max(int(width), longest)
    trailing = rows[0].shape[1:] if rows else ()
    dtype = dtype if dtype is not None else (rows[0].dtype if rows else np.float32)
    out = np.full((len(rows), width, *trailing), value, dtype=dtype)
    for i, row in enumerate(rows):
        out[i, : row.shape[0]] = row
    return out, lengths


def length_sorted_batches(lengths: np.ndarray, batch_size: int,
                          max_tokens: int | None = None) -> list[np.ndarray]:
    """Row indices per batch, longest rows first, bounded by rows and by padded tokens.

    Sorting by length puts rows of similar length together, so padding each batch only to its
    own longest row wastes little. A batch holds at most ``batch_size`` rows and at most
    ``max_tokens`` padded tokens (rows x longest row), so short rows travel in large batches
    and long ones in small batches; a single row longer than ``max_tokens`` is a batch alone.

    Parameters
    ----------
    lengths : array of shape (n,)
    batch_size : int
    max_tokens : int or None, default=None

    Returns
    -------
    list of int arrays (positions into ``lengths``); together they cover every row once.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    batches, start, n = [], 0, len(order)
    size_cap = int(batch_size)
    while start < n:
        longest = max(int(lengths[order[start]]), 1)  # sorted: the first is the longest
        size = size_cap if max_tokens is None else max(1, min(size_cap, int(max_tokens) // longest))
        batches.append(order[start:start + size])
        start += size
    return batches


def resolve_device(device: str) -> str:
    """``"auto"`` -> ``"cuda"``, then ``"mps"``, then ``"cpu"``; an explicit device is checked.

    Raises a ValueError naming the fix when the device does not exist here (e.g. ``"cuda"`` on a
    machine without a CUDA build of torch), instead of torch's assertion deep in a forward pass.

    Examples
    --------
    >>> resolve_device("cpu")
    'cpu'
    """
    import torch

    device = str(device)
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return "mps"
        return "cpu"
    kind = device.split(":")[0]
    if kind not in DEVICES[1:] or (kind != "cuda" and ":" in device):
        raise ValueError(f"device={device!r}; use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'.")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but torch sees no CUDA GPU here; use device='auto' "
                         "(it falls back to the CPU) or device='cpu'.")
    if kind == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"device={device!r} but torch has no MPS backend here; use "
                             "device='auto' or device='cpu'.")
    return device
