"""The one batching layer: length-sorted batches, padding, device resolution, the encode loop.

Every place that turns variable-length rows into padded batches (the heads' collate, the
fine-tuning head, the neural encoders, the embedding cache, `Sequences.from_rows`) calls these
functions, so padding, ordering and device rules are written once. `run_batches` is the one
inference loop of every network over token ids: the frozen encoders (`TransformerEmbedder`),
the distillation of `DistilledEmbedder` and the fine-tuned heads' inference all call it, with
the device their ``fit`` resolved (`resolve_device`) and stored as ``device_``.

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

import contextlib
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["DEVICES", "length_sorted_batches", "pad_rows", "resolve_device", "run_batches",
           "torch_threads"]

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


@contextlib.contextmanager
def torch_threads(n: int | None):
    """Set torch's CPU thread count to ``n`` for the block and restore it after; None: unchanged."""
    import torch

    if n is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_batches(items: Sequence[np.ndarray], forward: Callable, *, device: str, batch_size: int,
                max_tokens: int | None = None, pad_id: int = 0, num_threads: int | None = None,
                progress: bool = False, desc: str | None = None,
                on_batch: Callable[[np.ndarray], None] | None = None) -> list[tuple[np.ndarray, object]]:
    """Run ``forward(ids, mask)`` over token-id rows in length-sorted, padded batches.

    The one inference loop of the package's networks over token ids. Rows are grouped by
    `length_sorted_batches` (at most ``batch_size`` rows and ``max_tokens`` padded tokens per
    batch), padded with ``pad_id`` to the batch's longest row (`pad_rows`), moved to ``device``
    and passed to ``forward`` under ``torch.inference_mode``, with ``num_threads`` torch CPU
    threads (`torch_threads`) and a tqdm bar when ``progress``.

    Parameters
    ----------
    items : sequence of 1-D int arrays
        Token ids of each row (special tokens included).
    forward : callable
        ``forward(ids, mask)``: ``ids`` an int64 tensor ``(B, T)`` on ``device``; ``mask`` a bool
        tensor ``(B, T)`` on ``device``, True on real tokens, or None when no row of the batch is
        padded. Returns anything (typically a numpy array of the batch's rows).
    device : str
        A resolved torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``), as
        `resolve_device` gives it.
    batch_size : int
        Most rows per batch.
    max_tokens : int or None, default=None
        Most padded tokens (rows x longest row) per batch; None: no bound.
    pad_id : int, default=0
        Token id of the padding.
    num_threads : int or None, default=None
        torch CPU threads during the loop (restored after); None keeps torch's setting.
    progress : bool, default=False
        Show a tqdm progress bar over the rows.
    desc : str or None, default=None
        The progress bar's label.
    on_batch : callable or None, default=None
        Called with each batch's row indices after its forward pass (e.g. to count passes).

    Returns
    -------
    list of ``(indices, output)``, one per batch, in the order the batches ran; ``indices`` are
    positions into ``items``.

    Examples
    --------
    >>> rows = [np.array([5, 6, 7]), np.array([8])]
    >>> out = run_batches(rows, lambda ids, mask: ids.sum(1).tolist(), device="cpu", batch_size=8)
    >>> [(idx.tolist(), sums) for idx, sums in out]
    [([0, 1], [18, 8])]
    """
    import torch
    from tqdm.auto import tqdm

    lengths = np.fromiter((len(x) for x in items), dtype=np.int64, count=len(items))
    results = []
    with torch_threads(num_threads), torch.inference_mode(), tqdm(
        total=len(items), disable=not progress, unit="text", desc=desc, leave=False,
    ) as bar:
        for idx in length_sorted_batches(lengths, batch_size, max_tokens):
            ids, _ = pad_rows([items[i] for i in idx], value=pad_id, dtype=np.int64)
            mask = np.arange(ids.shape[1])[None, :] < lengths[idx][:, None]
            ids_t = torch.from_numpy(ids).to(device)
            mask_t = None if mask.all() else torch.from_numpy(mask).to(device)
            results.append((idx, forward(ids_t, mask_t)))
            if on_batch is not None:
                on_batch(idx)
            bar.update(len(idx))
    return results
