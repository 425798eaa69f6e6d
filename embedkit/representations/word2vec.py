"""Word2Vec word vectors (gensim), trained on the ``fit`` documents or loaded pretrained, pooled
into document vectors or served as sequences / token ids by the shared `StaticEmbedder`."""

from __future__ import annotations

from collections import Counter
from numbers import Integral, Real
from typing import ClassVar

import numpy as np

from .._params import SEED, Interval, Options, Rule, positive_int
from ..base import store_params
from ..vectors import WordVectors, load_word_vectors
from .static import VECTOR_SOURCE, StaticEmbedder

__all__ = ["Word2VecEmbedder"]

#: table entries of the gensim training parameters Word2Vec and FastText share
GENSIM_TRAINING = {
    "vector_size": [positive_int()],
    "window": [positive_int()],  # gensim's worker thread dies on window < 1 and fit never returns
    "min_count": [positive_int()],
    "sg": [Options(Integral, {0, 1})],
    "hs": [Options(Integral, {0, 1})],
    "negative": [positive_int(0)],
    "sample": [Interval(Real, 0, None, closed="left")],
    "alpha": [Interval(Real, 0, 1, closed="right")],
    "epochs": [positive_int()],
    "workers": [positive_int()],
    "random_state": [None, SEED],
}
#: with neither hierarchical softmax nor negative sampling gensim trains nothing
GENSIM_RULES = (
    Rule(("hs", "negative"), lambda hs, negative: bool(hs) or negative > 0,
         "with hs=0 (no hierarchical softmax) negative must be >= 1, or nothing is trained",
         bad={"hs": 0, "negative": 0}),
)


def _gensim():
    try:
        import gensim  # noqa: F401
    except ImportError:
        raise ImportError("Word2Vec and FastText need gensim: `pip install 'embedkit[gensim]'`.") from None


def check_min_count(name: str, counts: Counter, min_count: int) -> None:
    """Clear error before gensim fails deep inside with an empty vocabulary."""
    if not counts:
        raise ValueError(f"{name} found no tokens in the training documents; they are all empty.")
    top = max(counts.values())
    if top < min_count:
        raise ValueError(
            f"{name}: empty vocabulary after min_count={min_count}: the most frequent of the "
            f"{len(counts)} distinct words occurs {top} time(s). Lower min_count (e.g. "
            f"min_count={top}) or fit on more text."
        )


def train_gensim(cls, tokens: list[list[str]], counts: Counter, params: dict):
    """Train a gensim ``Word2Vec``/``FastText`` exactly as ``cls(sentences=tokens, **params)`` does,
    but from the word counts the embedder has already made (gensim's own vocabulary scan is a
    Python loop over every token; ``build_vocab_from_freq`` skips it)."""
    model = cls(**params)  # no corpus: builds nothing, trains nothing
    model.build_vocab_from_freq(dict(counts), corpus_count=len(tokens))
    model.corpus_total_words = int(sum(counts.values()))
    model.train(corpus_iterable=tokens, total_examples=model.corpus_count,
                total_words=model.corpus_total_words, epochs=model.epochs, start_alpha=model.alpha,
                end_alpha=model.min_alpha, compute_loss=model.compute_loss)
    check_trained(cls.__name__, model.wv.vectors, "alpha", params["alpha"])
    return model


def check_trained(what: str, vectors: np.ndarray, rate: str, value) -> None:
    """A ValueError naming the learning rate when training left non-finite vectors."""
    if not np.isfinite(vectors).all():
        raise ValueError(f"{what} training diverged (non-finite vectors) with {rate}={value!r}; "
                         f"lower it, e.g. {rate}={float(value) / 10:g}.")


class Word2VecEmbedder(StaticEmbedder):
    """Word2Vec vectors: trained with gensim on the documents given to ``fit``, or loaded.

    Parameters
    ----------
    vectors : str, path or None, default=None
        None trains on the ``fit`` documents. Otherwise pretrained vectors: a named resource
        (e.g. ``"glove-6b-50d"``), a word2vec text/binary file, a GloVe text file, or a gensim
        ``KeyedVectors`` file you saved yourself (``.kv``; it is a pickle, so load only your own
        files). See `load_word_vectors`.
    vectors_format : str, default="auto"
        Force a file format (see `load_word_vectors`).
    vector_size : int >= 1, default=100
    window : int >= 1, default=5
    min_count : int >= 1, default=1
        Ignore words rarer than this (gensim's default is 5; 1 lets tiny corpora fit).
    sg : {0, 1}, default=0
        1 for skip-gram, 0 for CBOW.
    hs : {0, 1}, default=0
        1 for hierarchical softmax; with 0, ``negative`` must be >= 1 (negative sampling).
    negative : int >= 0, default=5
    sample : float >= 0, default=1e-3
        Down-sampling threshold for frequent words (0: none).
    alpha : float in (0, 1], default=0.025
        Initial learning rate; a run that diverges (non-finite vectors) raises a ValueError.
    epochs : int >= 1, default=5
    workers : int >= 1, default=1
        gensim worker threads. Training is reproducible with ``random_state`` only with
        ``workers=1`` (thread scheduling reorders updates); gensim's docs also ask for a fixed
        ``PYTHONHASHSEED`` for reproducibility across interpreter launches.
    random_state : int, default=0
        gensim's ``seed``.
    output, pooling, oov, max_length, lowercase, sif_a, sif_remove_pc, verbose, cache
        See `StaticEmbedder`: ``output`` in {"pooled", "sequence", "ids"}, ``pooling`` in
        {"mean", "sum", "max", "tfidf", "sif"}, ``oov`` in {"auto", "skip", "zero", "unk"}.

    Attributes
    ----------
    word_vectors_ : WordVectors
        The vocabulary and vector matrix (gensim's ``model.wv`` data, not the whole model).
    vocabulary_ : list of str
        Words seen at fit that have a vector, most frequent first (ids 2.. of ``output="ids"``).
    embedding_matrix_ : ndarray of shape (n_words + 2, dim)
        Rows for padding, the unknown word, then each word of ``vocabulary_``; ``dim_`` columns.
    dim_ : int
    oov_rate_fit_, oov_rate_ : float
        Share of tokens without a vector at fit and in the last transform.

    Examples
    --------
    >>> docs = ["the cat sat on the mat", "the dog sat on the log"] * 20
    >>> emb = Word2VecEmbedder(vector_size=16, epochs=2).fit(docs)
    >>> emb.transform(["a cat and a dog"]).shape
    (1, 16)
    """

    _gensim_model = "Word2Vec"  # the gensim.models class that trains it
    _parameter_constraints: ClassVar[dict] = {**StaticEmbedder._parameter_constraints, **VECTOR_SOURCE,
                              **GENSIM_TRAINING}
    _parameter_rules = GENSIM_RULES

    def __init__(self, vectors=None, vectors_format: str = "auto", vector_size: int = 100,
                 window: int = 5, min_count: int = 1, sg: int = 0, hs: int = 0, negative: int = 5,
                 sample: float = 1e-3, alpha: float = 0.025, epochs: int = 5, workers: int = 1,
                 random_state: int = 0, output: str = "pooled", pooling: str = "mean",
                 oov: str = "auto", max_length: int | None = 256, lowercase: bool = True,
                 sif_a: float = 1e-3, sif_remove_pc: bool = True, verbose: bool = False, cache=None):
        store_params(self, locals())

    def _gensim_params(self) -> dict:
        return dict(vector_size=int(self.vector_size), window=int(self.window),
                    min_count=int(self.min_count), sg=int(self.sg), hs=int(self.hs),
                    negative=int(self.negative), sample=float(self.sample), alpha=float(self.alpha),
                    epochs=int(self.epochs), workers=int(self.workers),
                    seed=0 if self.random_state is None else int(self.random_state))

    def _build_vectors(self, tokens, counts) -> WordVectors:
        if self.vectors is not None:
            return load_word_vectors(self.vectors, self.vectors_format)
        _gensim()
        import gensim.models

        check_min_count(type(self).__name__, counts, self.min_count)
        model = train_gensim(getattr(gensim.models, self._gensim_model), tokens.lists(), counts,
                             self._gensim_params())
        return WordVectors.from_gensim(model.wv)
