"""Naive Bayes log-count ratios (Wang & Manning 2012, "NBSVM"): the supervised term weights that
`embedkit.representations.TfidfEmbedder` (``log_count_ratio=True``) scales its features by and
`embedkit.heads.NBLogisticRegression` fits each class's two-class model on."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["log_count_ratios"]


def log_count_ratios(matrix, y, alpha: float = 1.0, owner: str = "TfidfEmbedder(log_count_ratio=True)"):
    """``(classes, ratios)``: NBSVM log-count ratios of the columns of ``matrix`` for labels ``y``.

    For each class ``c``, ``p`` and ``q`` are the column sums over the rows labelled ``c`` and
    over the others, and ``ratios[c] = log((alpha + p) / sum(alpha + p)) - log((alpha + q) /
    sum(alpha + q))``. With two classes only the row of ``classes[1]`` is returned (that of
    ``classes[0]`` is its negative). ``owner`` names the estimator in the errors.
    """
    if y is None:
        raise ValueError(f"{owner} is supervised: fit it with the labels, fit(X, y) (in a "
                         "Pipeline, pipeline.fit(X, y) passes them on).")
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != matrix.shape[0]:
        raise ValueError(f"{owner} needs one label per document: got {matrix.shape[0]} documents "
                         f"and labels of shape {y.shape}.")
    if not float(alpha) > 0:
        raise ValueError(f"{owner.split('(')[0]}(nb_alpha={alpha!r}) must be > 0; 1.0 is the usual "
                         "value.")
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"{owner} needs at least two classes in y; got one class: {classes.tolist()}.")
    onehot = sp.csr_matrix((np.ones(len(codes)), (np.arange(len(codes)), codes)),
                           shape=(len(codes), len(classes)))
    inside = np.asarray((onehot.T @ sp.csr_matrix(matrix, dtype=np.float64)).todense())
    outside = inside.sum(axis=0, keepdims=True) - inside
    p, q = inside + alpha, outside + alpha
    ratios = (np.log(p / p.sum(axis=1, keepdims=True))
              - np.log(q / q.sum(axis=1, keepdims=True))).astype(np.float32)
    return classes, ratios[1:] if len(classes) == 2 else ratios
