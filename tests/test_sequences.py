"""embedkit.sequences: the Sequences and TokenIds containers and masked pooling."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils import _safe_indexing

from embedkit.sequences import Sequences, TokenIds, masked_pool


def _seq():
    values = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2) + 1
    lengths = np.array([3, 1, 0, 2])
    values[np.arange(3)[None, :] >= lengths[:, None]] = 0
    return Sequences(values, lengths, tokens=[["a", "b", "c"], ["d"], [], ["e", "f"]])


def test_sequences_indexing_and_mask():
    s = _seq()
    assert len(s) == 4 and s.shape == (4, 3, 2)
    assert s.mask.tolist()[1] == [True, False, False]
    one = s[3]
    assert one.shape == (1, 2, 2) and one.tokens[0] == ["e", "f"]  # trimmed to its length
    assert s[1:3].lengths.tolist() == [1, 0]
    assert s[np.array([True, False, False, True])].lengths.tolist() == [3, 2]
    assert s[[3, 0]].lengths.tolist() == [2, 3]
    picked = _safe_indexing(s, np.array([2, 0]))  # how scikit-learn's CV splits it
    assert isinstance(picked, Sequences) and picked.lengths.tolist() == [0, 3]
    with pytest.raises(IndexError):
        s[4]
    with pytest.raises(ValueError, match="lengths must lie"):
        Sequences(np.zeros((1, 2, 1)), [3])


def test_masked_pool_values_numpy_and_torch():
    import torch
    s = _seq()
    mean = s.pool("mean")
    np.testing.assert_allclose(mean[0], s.values[0].mean(axis=0))
    np.testing.assert_allclose(mean[1], s.values[1, 0])
    np.testing.assert_array_equal(mean[2], 0)  # empty row -> zeros, not NaN
    mx = s.pool("max")
    np.testing.assert_allclose(mx[3], s.values[3, :2].max(axis=0))
    np.testing.assert_array_equal(mx[2], 0)
    np.testing.assert_allclose(s.pool("sum")[0], s.values[0].sum(axis=0))
    for how in ("mean", "max", "sum"):
        t = masked_pool(torch.from_numpy(s.values), torch.from_numpy(s.mask), how).numpy()
        np.testing.assert_allclose(t, s.pool(how), rtol=1e-6)
    with pytest.raises(ValueError, match="pooling='median'"):
        s.pool("median")


def test_token_ids_container():
    t = TokenIds([[2, 3, 0], [4, 0, 0]], lengths=[2, 1], vocabulary=["<pad>", "<unk>", "a", "b", "c"],
                 vectors=np.ones((5, 3)))
    assert t[1].ids.tolist() == [[4]] and t[1].vectors.shape == (5, 3)
    with pytest.raises(ValueError, match="ids must lie"):
        TokenIds([[9]], [1], ["<pad>", "<unk>"])
    with pytest.raises(ValueError, match="vectors has 2 rows"):
        TokenIds([[1]], [1], ["<pad>", "<unk>", "a"], vectors=np.ones((2, 3)))
