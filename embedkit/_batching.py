"""The one batching layer: length-sorted batches, padding and its mask, the encode loop.

Every place that turns variable-length rows into padded batches (the heads' collate, the
fine-tuning head, the neural encoders, the embedding cache, `Sequences.from_rows`) calls these
functions, so padding, ordering and device rules are written once. `run_batches` is the one
inference loop of every network over token ids: the frozen encoders (`TransformerEmbedder`),
the distillation of `DistilledEmbedder` and the fine-tuned heads' inference all call it, with
the device their ``fit`` resolved (`embedkit.machine.resolve_device`) and stored as ``device_``.

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

from collections.abc import Callable, Sequence

import numpy as np

from .machine import on_accelerator

__all__ = ["Chunks", "chunk_bounds", "length_sorted_batches", "pad_rows", "padding_mask",
           "run_batches"]


def padding_mask(lengths, width: int | None = None):
    """Where rows padded to ``width`` steps hold real steps: True at ``[i, t]`` iff
    ``t < lengths[i]``.

    The one definition of a padding mask: the containers' ``mask``, the padded batches of the
    encode loop and of the fine-tuning head, the heads' input layer and the ONNX export's probe
    batches all take theirs from here.

    Parameters
    ----------
    lengths : array-like of int of shape (n,), or a torch tensor
        Real steps per row.
    width : int, optional
        Steps per padded row (default: the longest row).

    Returns
    -------
    Boolean array of shape (n, width): a numpy array, or, for a torch tensor of lengths, a
    torch tensor on the same device.

    Examples
    --------
    >>> padding_mask(np.array([2, 0, 3])).tolist()
    [[True, True, False], [False, False, False], [True, True, True]]
    """
    on_torch = not isinstance(lengths, (np.ndarray, list, tuple))
    lengths = lengths if on_torch else np.asarray(lengths)
    if width is None:
        width = int(lengths.max()) if len(lengths) else 0
    if on_torch:  # the mask is built on the lengths' device
        import torch

        steps = torch.arange(int(width), device=lengths.device)
    else:
        steps = np.arange(int(width))
    return steps[None, :] < lengths[:, None]


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


def chunk_bounds(n: int, device: str, first: int = 256, cap: int = 4096) -> list[tuple[int, int]]:
    """``(start, stop)`` slices of ``n`` rows in which an encoder prepares (tokenizes) its input.

    On the CPU one slice (everything is prepared before the first batch, as the loop runs on the
    same cores). On an accelerator, slices of ``first`` rows doubling up to ``cap``: `run_batches`
    prepares the next slice in a background thread while the device runs the current one, and
    the device starts after the small first slice.

    Examples
    --------
    >>> chunk_bounds(1000, "cpu")
    [(0, 1000)]
    >>> chunk_bounds(1000, "cuda")
    [(0, 256), (256, 768), (768, 1000)]
    """
    if not on_accelerator(device):
        return [(0, n)] if n else []
    bounds, start, size = [], 0, int(first)
    while start < n:
        bounds.append((start, min(start + size, n)))
        start, size = start + size, min(size * 2, int(cap))
    return bounds


class Chunks:
    """Rows for `run_batches` that are produced chunk by chunk (e.g. tokenized lazily).

    ``chunks`` is an iterable of sequences of 1-D int arrays; `run_batches` numbers the rows
    across chunks (the first row of the second chunk follows the last of the first), sorts and
    batches each chunk on its own, and on an accelerator draws the next chunks in a background
    thread while the device runs the current one. ``total`` (rows, when known) sizes the
    progress bar.
    """

    def __init__(self, chunks, total: int | None = None):
        self.chunks = chunks
        self.total = total


def _pad_ids(rows: Sequence[np.ndarray], idx: np.ndarray, lengths: np.ndarray, pad_id: int):
    """The rows ``idx`` padded with ``pad_id`` to the longest (at least 1): ``(ids, mask)``."""
    width = max(int(lengths.max()), 1)
    ids = np.full((len(idx), width), pad_id, dtype=np.int64)
    mask = padding_mask(lengths, width)
    if lengths.any():  # a boolean mask fills row by row: the rows' ids in order
        ids[mask] = np.concatenate([np.asarray(rows[i]).reshape(-1) for i in idx])
    return ids, mask


def _prepared(chunks, batch_size: int, max_tokens: int | None, pad_id: int, pin: bool):
    """``(positions, ids, mask or None)`` per batch, each chunk's rows length-sorted (CPU tensors,
    pinned when ``pin``, so the copy to the GPU does not block)."""
    import torch

    offset = 0
    for chunk in chunks:
        lengths = np.fromiter((len(x) for x in chunk), dtype=np.int64, count=len(chunk))
        for idx in length_sorted_batches(lengths, batch_size, max_tokens):
            ids, mask = _pad_ids(chunk, idx, lengths[idx], pad_id)
            ids_t = torch.from_numpy(ids)
            mask_t = None if mask.all() else torch.from_numpy(mask)
            if pin:
                ids_t = ids_t.pin_memory()
                mask_t = None if mask_t is None else mask_t.pin_memory()
            yield offset + idx, ids_t, mask_t
        offset += len(chunk)


_DONE = object()


def _in_background(batches, depth: int = 4):
    """Iterate ``batches`` in a worker thread, ``depth`` ahead; its errors are raised here.

    The fast tokenizers and numpy release the GIL for most of their work, so preparing the next
    batches overlaps the forward passes the caller launches meanwhile.
    """
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work():
        try:
            for item in batches:
                if not put(item):
                    return
            put(_DONE)
        except BaseException as err:  # noqa: BLE001 - handed to the consuming thread
            put(err)

    worker = threading.Thread(target=work, name="embedkit-batches", daemon=True)
    worker.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


class _HostCopy:
    """A device tensor's copy to (pinned) host memory, started without waiting for the device."""

    def __init__(self, out):
        import torch

        if out.device.type == "cuda":
            self.host = torch.empty(out.shape, dtype=out.dtype, pin_memory=True)
            self.host.copy_(out, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()
        else:
            self.host, self.event = out.detach().cpu(), None

    def result(self) -> np.ndarray:
        if self.event is not None:
            self.event.synchronize()
        return self.host.numpy()


def run_batches(items: Sequence[np.ndarray] | Chunks, forward: Callable, *, device: str,
                batch_size: int, max_tokens: int | None = None, pad_id: int = 0,
                num_threads: int | None = None, progress: bool = False, desc: str | None = None,
                on_batch: Callable[[np.ndarray], None] | None = None,
                overlap: bool | None = None) -> list[tuple[np.ndarray, object]]:
    """Run ``forward(ids, mask)`` over token-id rows in length-sorted, padded batches.

    The one inference loop of the package's networks over token ids. Rows are grouped by
    `length_sorted_batches` (at most ``batch_size`` rows and ``max_tokens`` padded tokens per
    batch), padded with ``pad_id`` to the batch's longest row, moved to ``device`` and passed to
    ``forward`` under ``torch.inference_mode``, with ``num_threads`` torch CPU threads
    (a `embedkit.machine.Threads` block) and a tqdm bar when ``progress``.

    On an accelerator the batches are prepared in a background thread (``overlap``): while the
    device runs one batch, the next chunks of rows are produced (e.g. tokenized, `Chunks`),
    sorted, padded and pinned in host memory, and copied with ``non_blocking=True``; a tensor
    that ``forward`` returns is copied back to the host without waiting for the device either.
    On the CPU the loop runs in the calling thread, as the work shares the same cores.

    Parameters
    ----------
    items : sequence of 1-D int arrays, or `Chunks`
        Token ids of each row (special tokens included), or chunks of them produced lazily
        (each chunk sorted and batched on its own; positions run across chunks).
    forward : callable
        ``forward(ids, mask)``: ``ids`` an int64 tensor ``(B, T)`` on ``device``; ``mask`` a bool
        tensor ``(B, T)`` on ``device``, True on real tokens, or None when no row of the batch is
        padded. Returns anything; a torch tensor comes back as a numpy array.
    device : str
        A resolved torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``), as
        `resolve_device` gives it.
    batch_size : int
        Most rows per batch (`batch_settings` gives the ``"auto"`` value per device).
    max_tokens : int or None, default=None
        Most padded tokens (rows x longest row) per batch; None: no bound.
    pad_id : int, default=0
        Token id of the padding.
    num_threads : int or None, default=None
        CPU threads of every pool during the loop (torch's, BLAS, the tokenizer's; restored
        after); None keeps the process's setting.
    progress : bool, default=False
        Show a tqdm progress bar over the rows.
    desc : str or None, default=None
        The progress bar's label.
    on_batch : callable or None, default=None
        Called with each batch's row positions after its forward pass (e.g. to count passes).
    overlap : bool or None, default=None
        Prepare batches in a background thread; None: on any device but the CPU.

    Returns
    -------
    list of ``(indices, output)``, one per batch, in the order the batches ran; ``indices`` are
    positions into ``items`` (across chunks).

    Examples
    --------
    >>> rows = [np.array([5, 6, 7]), np.array([8])]
    >>> out = run_batches(rows, lambda ids, mask: ids.sum(1).tolist(), device="cpu", batch_size=8)
    >>> [(idx.tolist(), sums) for idx, sums in out]
    [([0, 1], [18, 8])]
    """
    import torch
    from tqdm.auto import tqdm

    from .machine import Threads

    chunked = isinstance(items, Chunks)
    total = items.total if chunked else len(items)
    copy = on_accelerator(device)
    overlap = copy if overlap is None else bool(overlap)
    batches = _prepared(items.chunks if chunked else [items], int(batch_size), max_tokens,
                        pad_id, pin=overlap and str(device).startswith("cuda"))
    if overlap:
        batches = _in_background(batches)
    results, pending = [], []
    try:
        with Threads(num_threads), torch.inference_mode(), tqdm(
            total=total, disable=not progress, unit="text", desc=desc, leave=False,
        ) as bar:
            for idx, ids_t, mask_t in batches:
                if copy:
                    ids_t = ids_t.to(device, non_blocking=True)
                    mask_t = None if mask_t is None else mask_t.to(device, non_blocking=True)
                out = forward(ids_t, mask_t)
                if isinstance(out, torch.Tensor):
                    out = _HostCopy(out)
                    pending.append(len(results))
                results.append([idx, out])
                while len(pending) > 2:  # bound what waits on the device
                    i = pending.pop(0)
                    results[i][1] = results[i][1].result()
                if on_batch is not None:
                    on_batch(idx)
                bar.update(len(idx))
            for i in pending:
                results[i][1] = results[i][1].result()
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()  # stops the background thread when forward raised
    return [(idx, out) for idx, out in results]
