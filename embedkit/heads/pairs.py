"""SetFit's pairs of documents (`embedkit.heads.SetFitClassifier` trains on them): distinct
pairs of one class (target cosine 1) and of two classes (target 0), as many of each, the
smaller side's repeated, as SetFit 1.x draws them by default; and how many a labelling makes
(`count_pairs`), before any fit: the work of a fit is proportional to them."""

from __future__ import annotations

import numpy as np

__all__ = ["contrastive_pairs", "count_pairs"]


def contrastive_pairs(codes: np.ndarray, num_iterations: int | None, rng: np.random.Generator,
                      max_pairs: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SetFit's pairs: distinct pairs of rows of one class (target 1.0) and of two classes
    (target 0.0), as many of each, in random order.

    Each side draws its distinct pairs without replacement and repeats one only once all of
    that side's pairs are drawn. A row alone in its class has no partner of its class: its
    positive pair is the row with itself.

    Parameters
    ----------
    codes : int array of shape (n,)
        Class index of each row (at least two classes).
    num_iterations : int or None
        None: each side gets as many pairs as the larger side has distinct pairs (SetFit's
        "oversampling": every distinct pair once, the smaller side's repeated). An int:
        ``num_iterations * n`` pairs a side.
    rng : numpy Generator
    max_pairs : int or None, default=None
        At most this many pairs in all (half a side, rounded up), distinct ones first.

    Returns
    -------
    (first, second, target): row indices of each pair and its target cosine similarity;
    `count_pairs` of them, positives and negatives alternating.

    Examples
    --------
    >>> codes = np.array([0, 0, 0, 1, 1])
    >>> first, second, target = contrastive_pairs(codes, None, np.random.default_rng(0))
    >>> len(first), target[:2].tolist()  # 3 + 1 same-class pairs, 6 across: 6 a side
    (12, [1.0, 0.0])
    >>> bool(((codes[first] == codes[second]) == (target == 1)).all())
    True
    """
    codes = np.asarray(codes, dtype=np.int64)
    sides = _sides(codes)
    per_side = count_pairs(np.bincount(codes), num_iterations, max_pairs) // 2
    first, second = [], []
    for partner, count in sides:
        total = int(count.sum())
        cycles, rest = divmod(per_side, total)
        k = np.concatenate([*(rng.permutation(total) for _ in range(cycles)),
                            rng.choice(total, size=rest, replace=False)]).astype(np.int64)
        ends = np.cumsum(count)  # the pairs of sorted position p are ends[p]-count[p] ... ends[p]-1
        p = np.searchsorted(ends, k, side="right")
        first.append(p)
        second.append(partner[p] + k - (ends[p] - count[p]))
    order = np.argsort(codes, kind="stable")
    return (order[np.stack(first, axis=1).ravel()], order[np.stack(second, axis=1).ravel()],
            np.tile(np.array([1.0, 0.0]), per_side))


def _sides(codes: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The distinct positive and negative pairs of rows sorted by class, each as (first partner,
    partner count) per sorted position: position p pairs with positions ``first[p]`` to
    ``first[p] + count[p] - 1``, each unordered pair once."""
    n, counts = len(codes), np.bincount(codes)
    sorted_codes = np.sort(codes)
    end = np.cumsum(counts)[sorted_codes]  # one past the last position of p's class
    p = np.arange(n)
    own = p + (counts[sorted_codes] > 1)  # a row alone in its class pairs with itself
    return [(own, end - own), (end, n - end)]


def count_pairs(class_counts, num_iterations: int | None = None,
                max_pairs: int | None = None) -> int:
    """The number of pairs `contrastive_pairs` draws for classes of ``class_counts`` rows.

    Parameters
    ----------
    class_counts : sequence of int
        Rows per class (two classes or more).
    num_iterations, max_pairs : as `contrastive_pairs`.

    Returns
    -------
    int : twice the pairs a side, where a side holds ``max(P, N)`` pairs for ``P`` distinct
    same-class pairs (a row alone in its class counting one, with itself) and ``N`` distinct
    pairs across classes, or ``num_iterations * n`` with ``n`` the rows; at most
    ``max_pairs`` rounded up to even.

    Examples
    --------
    >>> count_pairs([8, 8])  # 2 x 28 same-class pairs, 64 across: 64 a side
    128
    >>> count_pairs([64, 64]), count_pairs([8] * 6), count_pairs([8, 8], num_iterations=20)
    (8192, 1920, 640)
    """
    counts = np.asarray(class_counts, dtype=np.int64)
    counts = counts[counts > 0]
    n = int(counts.sum())
    same = int(np.where(counts > 1, counts * (counts - 1) // 2, 1).sum())
    across = (n * n - int((counts * counts).sum())) // 2
    side = max(same, across) if num_iterations is None else int(num_iterations) * n
    if max_pairs is not None:
        side = min(side, -(-int(max_pairs) // 2))
    return 2 * side
