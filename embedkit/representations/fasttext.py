"""FastText word vectors (gensim): words plus character n-grams, so unseen or misspelt words get
vectors from their subwords. Trained on the ``fit`` documents or loaded from a Facebook ``.bin``."""

from __future__ import annotations

from typing import ClassVar

from .._params import Rule, positive_int
from ..base import store_params
from .static import VECTOR_SOURCE, StaticEmbedder
from .word2vec import GENSIM_RULES, GENSIM_TRAINING, Word2VecEmbedder

__all__ = ["FastTextEmbedder"]


class FastTextEmbedder(StaticEmbedder):
    """FastText vectors: trained with gensim on the ``fit`` documents, or loaded.

    Parameters
    ----------
    vectors : str, path or None, default=None
        None trains on the ``fit`` documents. Otherwise a Facebook fastText ``.bin`` model
        (loaded with gensim's ``load_facebook_vectors``, n-grams included), a ``.vec``/word2vec
        file (no subwords), or a gensim ``FastTextKeyedVectors`` file you saved yourself
        (a pickle: only your own files).
    vectors_format : str, default="auto"
    vector_size : int, default=100
    window : int, default=5
    min_count : int, default=1
    sg : {0, 1}, default=0
    hs : {0, 1}, default=0
    negative : int, default=5
    sample : float, default=1e-3
    alpha : float, default=0.025
    epochs : int, default=5
    min_n, max_n : int, default=3, 6
        Character n-gram lengths (words are wrapped in ``<`` ``>``).
    bucket : int >= 1, default=200000
        Hash buckets for n-gram vectors (gensim's default is 2,000,000: ``bucket * vector_size``
        floats of memory, 800 MB at 100 dimensions; 200k keeps a fitted model at 80 MB).
    workers : int, default=1
        Reproducible with ``random_state`` only with ``workers=1``.
    random_state : int, default=0
    oov : {"subword", "skip", "zero", "unk"}, default="subword"
        ``"subword"`` builds vectors of words unseen in training from their n-grams.
    output, pooling, max_length, lowercase, sif_a, sif_remove_pc, verbose, cache
        See `StaticEmbedder`.

    Attributes
    ----------
    word_vectors_ : WordVectors
        Vocabulary, vectors and gensim's ``FastTextKeyedVectors`` (for n-gram vectors).
    vocabulary_, embedding_matrix_, dim_, oov_rate_fit_, oov_rate_
        See `Word2VecEmbedder`.

    Examples
    --------
    >>> docs = ["the cat sat on the mat", "the dog sat on the log"] * 20
    >>> emb = FastTextEmbedder(vector_size=16, epochs=2, bucket=1000).fit(docs)
    >>> vec, found = emb.lookup(["catt"])
    >>> bool(found[0])
    True
    """

    _gensim_model = "FastText"
    _parameter_constraints: ClassVar[dict] = {**StaticEmbedder._parameter_constraints, **VECTOR_SOURCE,
                              **GENSIM_TRAINING, "min_n": [positive_int()],
                              "max_n": [positive_int()], "bucket": [positive_int()]}
    _parameter_rules = GENSIM_RULES + (
        Rule(("min_n", "max_n"), lambda lo, hi: lo <= hi, "min_n must be <= max_n",
             bad={"min_n": 5, "max_n": 3}),
    )

    def __init__(self, vectors=None, vectors_format: str = "auto", vector_size: int = 100,
                 window: int = 5, min_count: int = 1, sg: int = 0, hs: int = 0, negative: int = 5,
                 sample: float = 1e-3, alpha: float = 0.025, epochs: int = 5, min_n: int = 3,
                 max_n: int = 6, bucket: int = 200_000, workers: int = 1, random_state: int = 0,
                 output: str = "pooled", pooling: str = "mean", oov: str = "subword",
                 max_length: int | None = 256, lowercase: bool = True, sif_a: float = 1e-3,
                 sif_remove_pc: bool = True, verbose: bool = False, cache=None):
        store_params(self, locals())

    def _gensim_params(self) -> dict:
        # the Word2Vec parameters, read the same way, plus the subword ones
        return Word2VecEmbedder._gensim_params(self) | dict(
            min_n=int(self.min_n), max_n=int(self.max_n), bucket=int(self.bucket))

    # trained and loaded as Word2Vec is, with gensim's FastText and the subword parameters
    _build_vectors = Word2VecEmbedder._build_vectors
