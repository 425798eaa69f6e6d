"""embedkit._batching: padding, length-sorted batches, device resolution and the one encode loop
(`run_batches`) every network over token ids runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _float32 import assert_float32_sums_close, mean_terms

from embedkit._batching import length_sorted_batches, pad_rows, resolve_device, run_batches


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
