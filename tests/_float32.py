"""Tolerances that follow float32 arithmetic, not one machine's summation order.

Two float32 results of the same sums (ours and another library's, or one batch and another)
agree only up to rounding, and the order in which BLAS, numpy, scipy or another library add
the terms differs between CPUs (SIMD width, blocking, threads) and libraries; so an agreement
seen on one machine is no tolerance. The worst-case bound of recursive summation holds for every
order (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §4.2, Lemma 3.1): a
float32 sum of values x_i, each term rounded at most ``k`` times, is within
``gamma(k) * sum |x_i|`` of the exact sum, with ``gamma(k) = k u / (1 - k u)`` and
``u = eps32 / 2``. For a mean of ``n`` values (``n - 1`` additions, one division or
multiplication by ``1/n``, and the rounding of ``1/n`` itself) ``k = n + 1`` and the bound is
``gamma(n + 1) * mean |x_i|``; two such results differ by at most twice that, about
``terms * eps32 * scale``.
"""

from __future__ import annotations

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)


def gamma(k):
    """Higham's gamma_k for float32: the relative error of ``k`` roundings, ``k u / (1 - k u)``."""
    ku = np.asarray(k, dtype=np.float64) * EPS32 / 2
    return ku / (1 - ku)


def assert_float32_sums_close(actual, desired, *, terms, scale, exact=None, err_msg=""):
    """Assert that two float32 evaluations of the same sums (any order) agree within rounding.

    ``terms``: the most roundings one summed term meets (``n + 1`` for a mean of ``n`` values);
    ``scale``: ``mean |x_i|`` for a mean (``sum |x_i|`` for a sum), or any upper bound of it
    such as ``max |x_i|``. Both broadcast against ``actual``, so a bound per row or per element
    is possible. Each result is then within ``e = gamma(terms) * scale`` of the exact value and
    the two within ``2 e``.

    ``exact``: for L2-normalised rows, the exact (float64) rows before normalisation. With
    ``m`` an exact row, ``a`` a computed one and ``|a - m| <= e``,
    ``|a_j/|a| - m_j/|m|| <= (e_j + |m_j|/|m| * ||e||) / (|m| - ||e||)``, and computing the norm
    and dividing by it adds a relative ``gamma(d + 2)`` (``d`` the row length); the two results
    differ by at most twice that. Rows whose exact value is zero must agree exactly.
    """
    actual, desired = np.asarray(actual, dtype=np.float64), np.asarray(desired, dtype=np.float64)
    e = np.broadcast_to(gamma(terms) * np.asarray(scale, dtype=np.float64), actual.shape)
    if exact is None:
        bound = 2 * e
    else:
        exact = np.asarray(exact, dtype=np.float64)
        norm = np.linalg.norm(exact, axis=-1, keepdims=True)
        e_norm = np.linalg.norm(e, axis=-1, keepdims=True)
        if (norm[norm > 0] <= e_norm[norm > 0]).any():
            raise ValueError("a row is too close to zero for its normalised value to be bounded")
        unit = np.abs(exact) / np.where(norm > 0, norm, 1)
        before = (e + unit * e_norm) / np.where(norm > 0, norm - e_norm, 1)
        g = gamma(actual.shape[-1] + 2)
        bound = np.where(norm > 0, 2 * (before * (1 + g) + g * unit), 0)
    excess = np.abs(actual - desired) - bound
    if (excess > 0).any() or np.isnan(excess).any():
        worst = np.unravel_index(np.nanargmax(np.where(np.isnan(excess), np.inf, excess)),
                                 excess.shape)
        raise AssertionError(
            f"{err_msg}\n{int((excess > 0).sum())} of {excess.size} values differ by more than "
            f"float32 summation allows; at {tuple(map(int, worst))}: |{actual[worst]!r} - "
            f"{desired[worst]!r}| = {abs(actual[worst] - desired[worst]):.3g} > bound "
            f"{bound[worst]:.3g}")


def mean_terms(rows, dim):
    """The bound's inputs for row-wise means of the float32 vectors ``rows`` (a list of
    ``(n_i, dim)`` arrays): ``terms`` (``n_i + 1`` per row, as a column), ``scale``
    (``mean |x|`` per row and column) and the ``exact`` float64 means; empty rows give zeros."""
    rows = [np.asarray(r, dtype=np.float64).reshape(-1, dim) for r in rows]
    terms = np.array([[len(r) + 1] for r in rows], dtype=np.float64).reshape(-1, 1)
    scale = np.stack([np.abs(r).mean(axis=0) if len(r) else np.zeros(dim) for r in rows])
    exact = np.stack([r.mean(axis=0) if len(r) else np.zeros(dim) for r in rows])
    return terms, scale.reshape(-1, dim), exact.reshape(-1, dim)
