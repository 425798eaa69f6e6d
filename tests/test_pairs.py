"""SetFit's pairs (`embedkit.heads.pairs`): SetFit 1.x's distinct pairs of one class and of two,
the smaller side repeated, and their count."""

from __future__ import annotations

import numpy as np

from embedkit.heads.pairs import contrastive_pairs, count_pairs


def _drawn(first, second, target, positive: bool) -> dict:
    """How many times each unordered pair was drawn on one side."""
    keep = (target == 1.0) == positive
    pairs = np.sort(np.stack([first[keep], second[keep]], axis=1), axis=1)
    found, times = np.unique(pairs, axis=0, return_counts=True)
    return dict(zip(map(tuple, found.tolist()), times.tolist(), strict=True))


#: three classes of 3, 2 and 1 rows: same-class pairs (0,1) (0,2) (1,2) (3,4) and the lone row 5
#: with itself; 11 pairs across classes
CODES = np.array([0, 0, 0, 1, 1, 2])
SAME = {(0, 1), (0, 2), (1, 2), (3, 4), (5, 5)}
ACROSS = {(i, j) for i in range(6) for j in range(i + 1, 6) if CODES[i] != CODES[j]}


def test_pairs_are_setfits_distinct_pairs_with_the_smaller_side_repeated():
    first, second, target = contrastive_pairs(CODES, None, np.random.default_rng(0))
    assert len(ACROSS) == 11 and count_pairs([3, 2, 1]) == 22 == len(first)
    np.testing.assert_array_equal(CODES[first] == CODES[second], target == 1.0)
    np.testing.assert_array_equal(target, [1.0, 0.0] * 11)
    # every pair across classes once; the 5 same-class pairs twice, one of them a third time
    assert _drawn(first, second, target, False) == dict.fromkeys(ACROSS, 1)
    same = _drawn(first, second, target, True)
    assert set(same) == SAME and sorted(same.values()) == [2, 2, 2, 2, 3]
    again = contrastive_pairs(CODES, None, np.random.default_rng(0))
    assert all(np.array_equal(a, b) for a, b in zip((first, second, target), again, strict=True))
    other = contrastive_pairs(CODES, None, np.random.default_rng(1))
    assert not np.array_equal(second, other[1])


def test_num_iterations_and_max_pairs_set_the_count_distinct_pairs_first():
    first, second, target = contrastive_pairs(CODES, 4, np.random.default_rng(0))
    assert len(first) == count_pairs([3, 2, 1], num_iterations=4) == 2 * 4 * 6
    # 24 a side: each same-class pair 4 or 5 times, each pair across classes 2 or 3 times
    assert set(_drawn(first, second, target, True).values()) == {4, 5}
    assert set(_drawn(first, second, target, False).values()) == {2, 3}
    first, second, target = contrastive_pairs(CODES, None, np.random.default_rng(0), max_pairs=9)
    assert len(first) == count_pairs([3, 2, 1], max_pairs=9) == 10  # 5 a side, none repeated
    assert _drawn(first, second, target, True) == dict.fromkeys(SAME, 1)
    assert len(_drawn(first, second, target, False)) == 5
    # SetFit's counts, against the 20 rounds this head drew before (640 and 5,120)
    assert (count_pairs([8, 8]), count_pairs([64, 64]), count_pairs([8] * 6)) == (128, 8192, 1920)
    assert count_pairs([8, 8], num_iterations=20) == 640
    codes = np.repeat([0, 1], 64)
    first, second, _ = contrastive_pairs(codes, None, np.random.default_rng(0), max_pairs=6400)
    assert len(np.unique(np.sort(np.stack([first, second], axis=1), axis=1), axis=0)) == 6400
