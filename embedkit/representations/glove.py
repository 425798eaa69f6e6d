"""GloVe word vectors: the bundled GloVe 6B (memory-mapped, ready in about a second), any GloVe /
word2vec / KeyedVectors file, or GloVe trained on the ``fit`` documents (``train=True``).

gensim has no GloVe, so training is written here: co-occurrence counts with 1/distance weighting
in a symmetric window (scipy sparse, one vectorised pass per distance), then the weighted
least-squares objective ``f(X_ij) (w_i . c_j + b_i + b~_j - log X_ij)^2`` with
``f(x) = min(1, (x / x_max)^alpha)``, minimised with AdaGrad over shuffled mini-batches of the
non-zero entries (explicit vectorised gradients in torch); the word vectors are ``w + c``.

Defaults are set for the corpora this library is fitted on (thousands of documents, up to a few
million tokens), not the paper's billions: ``x_max=10`` (the reference code's setting for its
17M-token demo; with 100, f(x) nearly zeroes every pair of a small corpus and the vectors stay
at their random start) and a step of 0.2 (``pipelines/benchmarks/static_quality.py intrinsic``
measures word similarity; figures in ``pipelines/benchmarks/results/defaults.md``).
"""

from __future__ import annotations

import itertools
from collections import Counter
from numbers import Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .._params import SEED, Interval, Rule, positive_int
from ..base import store_params
from ..data.documents import TokenizedDocuments
from ..machine import Threads
from ..vectors import WordVectors, load_word_vectors
from .static import VECTOR_SOURCE, StaticEmbedder

__all__ = ["GloveEmbedder", "cooccurrence_matrix", "train_glove"]


def cooccurrence_matrix(tokens: TokenizedDocuments | list[list[str]], vocabulary: list[str],
                        window: int = 10) -> sp.csr_matrix:
    """Symmetric co-occurrence counts weighted by 1/distance within ``window`` tokens.

    ``tokens``: `TokenizedDocuments` or one list of tokens per document. Tokens outside
    ``vocabulary`` are removed from the stream first (as GloVe's ``cooccur`` does); windows never
    cross document boundaries.

    Examples
    --------
    >>> cooccurrence_matrix([["a", "b", "a"]], ["a", "b"], window=2).toarray()
    array([[1., 2.],
           [2., 0.]])
    """
    if int(window) < 1:
        raise ValueError(f"window={window!r} must be a positive int.")
    if not isinstance(tokens, TokenizedDocuments):
        tokens = TokenizedDocuments.from_lists(tokens)
    index = dict(zip(vocabulary, range(len(vocabulary)), strict=True))
    ids = np.fromiter(map(index.get, tokens.words, itertools.repeat(-1)), dtype=np.int64,
                      count=len(tokens.words))[tokens.ids]
    doc = tokens.document_index()
    keep = ids >= 0
    ids, doc = ids[keep], doc[keep]
    V = len(vocabulary)
    total = sp.csr_matrix((V, V), dtype=np.float64)
    for k in range(1, int(window) + 1):
        if ids.size <= k:
            break
        same = doc[:-k] == doc[k:]
        i, j = ids[:-k][same], ids[k:][same]
        m = sp.csr_matrix((np.full(i.size, 1.0 / k), (i, j)), shape=(V, V))
        total = total + m + m.T
    total.sum_duplicates()
    return total


def train_glove(cooc: sp.spmatrix, vector_size: int = 50, x_max: float = 10.0, alpha: float = 0.75,
                epochs: int = 15, learning_rate: float = 0.2, batch_size: int = 8192,
                random_state: int = 0, verbose: bool = False) -> np.ndarray:
    """Fit GloVe on a co-occurrence matrix; returns word + context vectors ``(V, vector_size)``.

    AdaGrad as in the reference implementation: accumulators start at 1 and grow by each entry's
    squared *step* ``(learning_rate * g) ** 2``, so a row's step stays close to
    ``learning_rate * g`` until its gradients add up. Over shuffled mini-batches of the non-zero
    entries, with explicit vectorised gradients (gathers and ``index_add_``; gradients of a row
    repeated within a batch are summed, their squares added to the accumulator first). Seeded by
    ``random_state``; the global torch RNG is untouched.
    """
    import torch

    coo = sp.coo_matrix(cooc)
    V, d = coo.shape[0], int(vector_size)
    gen = torch.Generator().manual_seed(int(random_state))
    rows = torch.from_numpy(coo.row.astype(np.int64))
    cols = torch.from_numpy(coo.col.astype(np.int64))
    x = torch.from_numpy(coo.data.astype(np.float32))
    logx = torch.log(x)
    weight = torch.clamp((x / float(x_max)) ** float(alpha), max=1.0)
    # parameters [W | b] and [C | b~] as (V, d + 1) tables; uniform(-0.5, 0.5) / d like the reference
    W = (torch.rand(V, d + 1, generator=gen) - 0.5) / d
    C = (torch.rand(V, d + 1, generator=gen) - 0.5) / d
    GW = torch.ones(V, d + 1)
    GC = torch.ones(V, d + 1)
    lr = float(learning_rate)
    # one thread: these small gathers/scatters gain nothing from OpenMP, whose spinning threads make
    # them ~15x slower on a busy machine
    with Threads(1):
        _glove_epochs(W, C, GW, GC, rows, cols, logx, weight, d, lr, int(epochs), int(batch_size),
                      gen, verbose)
    vectors = (W[:, :d] + C[:, :d]).numpy().astype(np.float32)
    if not np.isfinite(vectors).all():
        raise ValueError(f"GloVe training diverged (non-finite vectors) with learning_rate="
                         f"{learning_rate}; lower it, e.g. learning_rate={lr / 4:g}.")
    return vectors


def _glove_epochs(W, C, GW, GC, rows, cols, logx, weight, d, lr, epochs, batch_size, gen, verbose):
    import torch

    nnz = logx.numel()
    with torch.inference_mode():
        for epoch in range(int(epochs)):
            perm = torch.randperm(nnz, generator=gen)
            total = 0.0
            for s in range(0, nnz, int(batch_size)):
                b = perm[s:s + int(batch_size)]
                i, j = rows[b], cols[b]
                wi, cj = W[i], C[j]
                diff = (wi[:, :d] * cj[:, :d]).sum(1) + wi[:, d] + cj[:, d] - logx[b]
                fdiff = weight[b] * diff
                total += float(0.5 * (fdiff * diff).sum())
                gw = torch.cat([fdiff[:, None] * cj[:, :d], fdiff[:, None]], 1)
                gc = torch.cat([fdiff[:, None] * wi[:, :d], fdiff[:, None]], 1)
                for P, G, idx, g in ((W, GW, i, gw), (C, GC, j, gc)):
                    uniq, inv = torch.unique(idx, return_inverse=True)
                    summed = torch.zeros(uniq.numel(), d + 1).index_add_(0, inv, g)
                    # per-entry squared steps, as if the row's entries were applied one by one;
                    # added before dividing, so a row seen many times in one batch takes a
                    # bounded step (|step| <= sqrt(count)) instead of diverging
                    G[uniq] += (lr * lr) * torch.zeros(uniq.numel(), d + 1).index_add_(0, inv, g * g)
                    P[uniq] -= lr * summed / torch.sqrt(G[uniq])
            if verbose:
                import sys

                print(f"[GloVe] epoch {epoch + 1}/{epochs}: cost {total / max(nnz, 1):.4f}",
                      file=sys.stderr)


class GloveEmbedder(StaticEmbedder):
    """GloVe vectors: bundled pretrained GloVe 6B 50d, a vectors file, or trained on ``fit`` data.

    Parameters
    ----------
    vectors : str or path, default="glove-6b-50d"
        Named resource (``"glove-6b-50d"``: 400k x 50, memory-mapped ``.npy``;
        ``"glove-6b-50d-txt"``: the original text file) or a path: GloVe text (plain, ``.gz``,
        ``.bz2``), word2vec text/binary, a folder with ``.npy`` + ``.parquet`` vocabulary, or a
        gensim ``KeyedVectors`` file you saved yourself (a pickle: only your own files). Loaded
        vectors are shared by every clone and grid-search candidate in the process (a cache keyed
        by file), and a fitted embedder pickles the name/path, not the matrix. Ignored when
        ``train=True``.
    vectors_format : str, default="auto"
        Force a format (see `load_word_vectors`).
    train : bool, default=False
        Train GloVe on the ``fit`` documents instead of loading vectors.
    vector_size : int, default=50
        Dimension of trained vectors.
    window : int, default=10
        Symmetric context window for co-occurrence counts (1/distance weighting).
    min_count : int, default=5
        Vocabulary cut-off for training.
    x_max : float > 0, default=10.0
    alpha : float > 0, default=0.75
        The weighting ``f(x) = min(1, (x / x_max) ** alpha)``. The paper's ``x_max=100`` suits
        billions of tokens; on a corpus of a few million it gives almost every pair a weight
        near 0 (wordsim353 0.12 instead of 0.31 on WikiText-2).
    epochs : int, default=15
    learning_rate : float, default=0.2
        AdaGrad step size. Steps are bounded, so a large value does not diverge, but 0.5
        already trained worse than 0.2 on WikiText-2.
    batch_size : int, default=8192
        Co-occurrence entries per AdaGrad step.
    random_state : int, default=0
    output, pooling, oov, max_length, lowercase, sif_a, sif_remove_pc, verbose, cache
        See `StaticEmbedder`.

    Attributes
    ----------
    word_vectors_ : WordVectors
    vocabulary_, embedding_matrix_, dim_, oov_rate_fit_, oov_rate_
        See `Word2VecEmbedder`.
    cooccurrence_nnz_ : int
        Non-zero co-occurrence entries (``train=True`` only).

    Examples
    --------
    >>> emb = GloveEmbedder().fit(["the cat sat"])
    >>> emb.analogy("man", "king", "woman")[0][0]
    'queen'
    """

    _parameter_constraints: ClassVar[dict] = {
        **StaticEmbedder._parameter_constraints, **VECTOR_SOURCE,
        "train": ["boolean"],
        "vector_size": [positive_int()],
        "window": [positive_int()],
        "min_count": [positive_int()],
        "x_max": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "epochs": [positive_int()],
        # AdaGrad steps are bounded; a run that still diverges raises a ValueError
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [positive_int()],
        "random_state": [SEED],
    }
    _parameter_rules = (
        Rule(("vectors", "train"), lambda vectors, train: vectors is not None or train,
             "vectors must name the vectors to load unless train=True: pass "
             "vectors='glove-6b-50d' (the default), a path, or train=True",
             bad={"vectors": None, "train": False}),
    )

    def __init__(self, vectors="glove-6b-50d", vectors_format: str = "auto", train: bool = False,
                 vector_size: int = 50, window: int = 10, min_count: int = 5, x_max: float = 10.0,
                 alpha: float = 0.75, epochs: int = 15, learning_rate: float = 0.2,
                 batch_size: int = 8192, random_state: int = 0, output: str = "pooled",
                 pooling: str = "mean", oov: str = "auto", max_length: int | None = 256,
                 lowercase: bool = True, sif_a: float = 1e-3, sif_remove_pc: bool = True,
                 verbose: bool = False, cache=None):
        store_params(self, locals())

    def _build_vectors(self, tokens, counts: Counter) -> WordVectors:
        if not self.train:
            return load_word_vectors(self.vectors, self.vectors_format)
        from .word2vec import check_min_count

        check_min_count(type(self).__name__, counts, self.min_count)
        vocab = sorted((w for w, c in counts.items() if c >= self.min_count),
                       key=lambda w: (-counts[w], w))
        cooc = cooccurrence_matrix(tokens, vocab, self.window)
        if cooc.nnz == 0:
            raise ValueError(
                f"GloveEmbedder(train=True): no co-occurrences among the {len(vocab)} words with "
                f"min_count={self.min_count}; fit on more (or longer) documents."
            )
        self.cooccurrence_nnz_ = int(cooc.nnz)
        self._log(f"vocabulary {len(vocab)} words, {cooc.nnz} co-occurrence entries")
        vectors = train_glove(cooc, self.vector_size, self.x_max, self.alpha, self.epochs,
                              self.learning_rate, self.batch_size, self.random_state, self.verbose)
        return WordVectors(vocab, vectors)
