"""embedkit._batching: padding, length-sorted batches, device resolution and the one encode loop
(`run_batches`) every network over token ids runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _float32 import assert_float32_sums_close, mean_terms

from embedkit._batching import length_sorted_batches, pad_rows, padding_mask, run_batches
from embedkit.machine import resolve_device
from embedkit.sequences import Sequences


def _rows(*lengths):
    return [np.arange(1, n + 1, dtype=np.int64) * 10 + i for i, n in enumerate(lengths)]


def test_run_batches_sorts_pads_masks_and_returns_positions():
    items = _rows(2, 4, 1, 4)
    seen, done = [], []

    def forward(ids, mask):
        seen.append((ids.clone(), None if mask is None else mask.clone()))
        return ids.sum(1).numpy()

    out = run_batches(items, forward, device="cpu", batch_size=2, pad_id=-1, on_batch=done.append)
    # longest first (stable among equals), two rows per batch
    assert [idx.tolist() for idx, _ in out] == [[1, 3], [0, 2]] == [d.tolist() for d in done]
    (ids1, mask1), (ids2, mask2) = seen
    assert ids1.dtype == torch.int64 and ids1.device.type == "cpu"
    assert mask1 is None  # both rows are 4 long: nothing padded
    assert ids2.tolist() == [[10, 20], [12, -1]]  # padded with pad_id to the batch's longest
    assert mask2.dtype == torch.bool and mask2.tolist() == [[True, True], [True, False]]
    # each batch's output comes back with its rows' positions
    assert [sums.tolist() for _, sums in out] == [[104, 112], [30, 11]]


def test_run_batches_bounds_padded_tokens_and_covers_every_row_once():
    lengths = [9, 1, 1, 3, 3, 1, 1, 1]
    items = _rows(*lengths)
    widths = []
    out = run_batches(items, lambda ids, mask: widths.append(ids.shape) or len(ids), device="cpu",
                      batch_size=4, max_tokens=6)
    assert sorted(np.concatenate([idx for idx, _ in out]).tolist()) == list(range(len(items)))
    assert widths[0] == (1, 9)  # longer than the budget: a batch alone
    assert all(rows * width <= 6 for rows, width in widths[1:])
    assert [idx.tolist() for idx, _ in out] == [
        b.tolist() for b in length_sorted_batches(np.array(lengths), 4, 6)]


def test_run_batches_sets_threads_and_inference_mode_for_the_loop_only():
    before = torch.get_num_threads()
    inside = []

    def forward(ids, mask):
        inside.append((torch.get_num_threads(), torch.is_inference_mode_enabled()))
        return None

    run_batches(_rows(3, 2), forward, device="cpu", batch_size=8, num_threads=1)
    assert inside == [(1, True)]
    assert torch.get_num_threads() == before and not torch.is_inference_mode_enabled()
    assert run_batches([], forward, device="cpu", batch_size=8) == []


def test_run_batches_gives_the_outputs_of_unpadded_rows():
    """With a masked network, a row's output does not depend on the rows batched with it."""
    torch.manual_seed(0)
    table = torch.randn(100, 4)

    def forward(ids, mask):
        vectors = table[ids]
        if mask is None:
            return vectors.mean(1).numpy()
        return ((vectors * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)).numpy()

    items = [np.array(r) % 100 for r in _rows(5, 2, 7, 1, 3)]
    out = np.zeros((len(items), 4), np.float32)
    for idx, part in run_batches(items, forward, device="cpu", batch_size=3):
        out[idx] = part
    alone = np.stack([table[torch.from_numpy(r)].mean(0).numpy() for r in items])
    # a masked sum over the padded batch and a plain mean add in different orders (by kernel
    # and CPU): equal up to the float32 rounding of a mean of each row's vectors
    terms, scale, _ = mean_terms([table[torch.from_numpy(r)].numpy() for r in items], 4)
    assert_float32_sums_close(out, alone, terms=terms, scale=scale)


def test_pad_rows_and_resolve_device():
    values, lengths = pad_rows([np.ones((2, 3)), np.ones((0, 3))], value=-1.0, dtype=np.float32)
    assert values.shape == (2, 2, 3) and lengths.tolist() == [2, 0] and (values[1] == -1).all()
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in ("cpu", "cuda", "mps")
    with pytest.raises(ValueError, match="use 'auto', 'cpu'"):
        resolve_device("tpu")


# -- the overlapped loop (what a GPU runs), exercised on the CPU ------------------------------
def test_overlapped_loop_gives_the_serial_loops_batches_and_outputs():
    from embedkit._batching import Chunks

    items = _rows(5, 2, 7, 1, 3, 0, 4)

    def forward(ids, mask):  # a tensor: the loop hands it back as a numpy array
        return ids.sum(1) if mask is None else (ids * mask).sum(1)

    serial = run_batches(items, forward, device="cpu", batch_size=3, pad_id=-1)
    overlapped = run_batches(items, forward, device="cpu", batch_size=3, pad_id=-1, overlap=True)
    assert [i.tolist() for i, _ in overlapped] == [i.tolist() for i, _ in serial]
    assert all(isinstance(o, np.ndarray) for _, o in overlapped)
    assert [o.tolist() for _, o in overlapped] == [o.tolist() for _, o in serial]
    # chunks: each sorted on its own, positions numbered across chunks, every row once
    chunked = run_batches(Chunks(iter([items[:3], [], items[3:]]), total=len(items)), forward,
                          device="cpu", batch_size=3, pad_id=-1, overlap=True)
    assert [i.tolist() for i, _ in chunked] == [[2, 0, 1], [6, 4, 3], [5]]
    sums = {int(i): int(s) for idx, out in chunked for i, s in zip(idx, out, strict=True)}
    assert sums == {i: int(r.sum()) for i, r in enumerate(items)}


def test_overlapped_loop_raises_the_producers_error_and_stops_its_thread_on_forward_errors():
    import threading

    from embedkit._batching import Chunks

    def chunks():
        yield _rows(2, 3)
        raise RuntimeError("tokenizer broke")

    with pytest.raises(RuntimeError, match="tokenizer broke"):
        run_batches(Chunks(chunks()), lambda ids, mask: None, device="cpu", batch_size=1,
                    overlap=True)

    def forward(ids, mask):
        raise ValueError("forward broke")

    many = Chunks(_rows(*([3] * 8)) for _ in range(100))
    with pytest.raises(ValueError, match="forward broke"):
        run_batches(many, forward, device="cpu", batch_size=2, overlap=True)
    assert not any(t.name == "embedkit-batches" for t in threading.enumerate())


def test_device_settings_chunks_and_precision():
    from embedkit._batching import chunk_bounds
    from embedkit.machine import batch_settings, resolve_precision

    assert batch_settings("cpu") == (32, 2048)  # the CPU's measured defaults, unchanged
    assert batch_settings("mps") == (256, 16384)
    assert chunk_bounds(10, "cpu") == [(0, 10)] and chunk_bounds(0, "cpu") == []
    bounds = chunk_bounds(10000, "cuda")
    assert bounds[0] == (0, 256) and bounds[-1][1] == 10000
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
    assert max(b - a for a, b in bounds) == 4096
    assert resolve_precision("auto", "cpu") == "fp32" and resolve_precision("auto", "mps") == "fp32"
    assert resolve_precision("bf16", "cpu") == "bf16" and resolve_precision("fp32", "cuda") == "fp32"
    # a small training step (MiniLM, batch 32 x 64 tokens) stays fp32 even on a GPU: launch-bound
    assert resolve_precision("auto", "cuda", step_flops=6 * 22.7e6 * 32 * 64) == "fp32"


def test_padding_mask_is_one_definition_for_numpy_and_torch():
    """Position t of row i is real iff t < lengths[i]: the same mask from numpy and torch
    lengths, the longest row's width by default, and any width asked for."""
    lengths = np.array([3, 0, 1])
    want = [[True, True, True], [False, False, False], [True, False, False]]
    assert padding_mask(lengths).tolist() == want
    assert padding_mask([3, 0, 1]).tolist() == want
    mask = padding_mask(torch.from_numpy(lengths))
    assert mask.dtype == torch.bool and mask.tolist() == want
    wide = padding_mask(lengths, 5)
    assert wide.dtype == bool and wide.shape == (3, 5) and wide.sum(1).tolist() == [3, 0, 1]
    assert padding_mask(torch.tensor([2]), 4).tolist() == [[True, True, False, False]]
    assert padding_mask(np.zeros(0, np.int64)).shape == (0, 0)
    # the containers and the padded batches take theirs from it
    values, lens = pad_rows([np.ones(2), np.ones(4)])
    assert (Sequences(values[..., None], lens).mask == padding_mask(lens, 4)).all()
