"""Paragraph vectors (Doc2Vec): PV-DM and PV-DBOW document embeddings trained with gensim."""

from __future__ import annotations

import copy
import hashlib
from collections import Counter
from itertools import chain
from numbers import Integral, Real
from typing import ClassVar

import numpy as np

from .._params import SEED, CacheSpec, Interval, Options, StrOptions, positive_int
from ..base import Representation, store_params
from ..data.documents import Tokenizer

__all__ = ["Doc2VecEmbedder"]


class Doc2VecEmbedder(Representation):
    """Document vectors learned by gensim's Doc2Vec (Le & Mikolov's paragraph vectors).

    ``fit`` trains a paragraph vector for every training document together with the word /
    output weights. ``fit_transform`` returns those trained vectors, one per training document,
    in order. ``transform`` infers a vector for each document it is given (new or not): the
    network is frozen and only a fresh paragraph vector is trained for ``infer_epochs`` epochs.

    Inference is deterministic: each document's starting vector and sampling noise are seeded
    from ``random_state`` and the document's tokens (with a stable hash, independent of
    ``PYTHONHASHSEED``), so the same document gets the same vector in any process, in any
    batch, in any order. An empty or all-unknown document has nothing to train on and keeps
    its seeded starting vector (small and finite).

    Cost: inference trains a small problem per document in gensim's compiled routines, one
    document at a time, so it scales with ``infer_epochs x tokens``, at the speed of gensim's own
    ``infer_vector``; short questions infer an order of magnitude faster than news articles.
    Training costs ``epochs`` passes of the same routines. Measure on your machine with
    ``pipelines/benchmarks/doc2vec_quality.py`` (documents per second, and the ratio to
    ``infer_vector`` in the same run).

    Parameters
    ----------
    dm : {1, 0}, default=1
        1: PV-DM (distributed memory: the paragraph vector plus context words predict the
        centre word). 0: PV-DBOW (distributed bag of words: the paragraph vector alone
        predicts the document's words).
    vector_size : int, default=100
        Dimension of the document vectors.
    window : int, default=5
        Context size on each side (PV-DM, and word training in PV-DBOW with ``dbow_words``).
    min_count : int, default=1
        Ignore words seen fewer times in the training documents.
    epochs : int, default=20
        Training passes over the documents.
    infer_epochs : int or None, default=None
        Passes when inferring a vector for a document in ``transform``; None uses ``epochs``.
    negative : int, default=5
        Negative samples per prediction.
    dm_mean : bool, default=False
        PV-DM: average (True) instead of summing (False) the context vectors.
    dm_concat : bool, default=False
        PV-DM: concatenate the context vectors instead of combining them (a much larger and
        slower model).
    dbow_words : bool, default=False
        PV-DBOW: also train word vectors skip-gram style, interleaved (slower, often better).
    sample : float, default=1e-3
        Down-sampling threshold for frequent words.
    alpha : float, default=0.025
        Initial learning rate (decays linearly to 0.0001), for training and inference.
    lowercase : bool, default=True
        Lowercase before tokenizing with the shared `embedkit.data.documents.Tokenizer`.
    random_state : int, default=0
        Seeds training and inference.
    workers : int, default=1
        Training threads. Only ``workers=1`` gives bit-identical training across runs (thread
        scheduling changes the update order); inference is always single-threaded and seeded.
    output : {"pooled"}, default="pooled"
        One vector per document; there is no sequence form.
    cache : None, "memory" or path, default=None
        Embedding cache (see `embedkit.cache`).

    Attributes
    ----------
    model_ : gensim.models.Doc2Vec
        The trained model (word and output weights are needed to infer new documents).
    dim_ : int
        Output dimension (``vector_size``).
    n_train_docs_ : int
        Number of training documents.

    Examples
    --------
    >>> docs = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"]
    >>> emb = Doc2VecEmbedder(vector_size=8, epochs=5)
    >>> emb.fit_transform(docs).shape
    (3, 8)
    >>> emb.transform(["a cat on a log"]).shape
    (1, 8)

    PV-DM and PV-DBOW concatenated, as Le & Mikolov recommend, is one scikit-learn line:

    >>> from sklearn.pipeline import FeatureUnion
    >>> both = FeatureUnion([("dm", Doc2VecEmbedder(dm=1, vector_size=8, epochs=5)),
    ...                      ("dbow", Doc2VecEmbedder(dm=0, vector_size=8, epochs=5))])
    >>> both.fit_transform(docs).shape
    (3, 16)
    """

    _outputs = ("pooled",)
    _outputs_note = (
        "Doc2Vec learns one vector per document and no per-token vectors, so there is no "
        "sequence form; for token-level sequences use GloveEmbedder(output='sequence'), "
        "TransformerEmbedder(output='sequence') or TokenIndexer()."
    )

    _parameter_constraints: ClassVar[dict] = {
        "dm": [Options(Integral, {0, 1})],
        "vector_size": [positive_int()],
        "window": [positive_int()],
        "min_count": [positive_int()],
        "epochs": [positive_int()],
        "infer_epochs": [None, positive_int()],
        "negative": [positive_int()],  # trained with negative sampling (hs=0)
        "dm_mean": ["boolean"],
        "dm_concat": ["boolean"],
        "dbow_words": ["boolean"],
        "sample": [Interval(Real, 0, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "lowercase": ["boolean"],
        "random_state": [SEED],
        "workers": [positive_int()],
        "output": [StrOptions({"pooled"})],
        "cache": [CacheSpec()],
    }

    def __init__(self, dm: int = 1, vector_size: int = 100, window: int = 5, min_count: int = 1,
                 epochs: int = 20, infer_epochs: int | None = None, negative: int = 5,
                 dm_mean: bool = False, dm_concat: bool = False, dbow_words: bool = False,
                 sample: float = 1e-3, alpha: float = 0.025, lowercase: bool = True,
                 random_state: int = 0, workers: int = 1, output: str = "pooled", cache=None):
        store_params(self, locals())

    # -- fitting ------------------------------------------------------------------------------
    def _fit(self, docs, y=None):
        from gensim.models.doc2vec import Doc2Vec, TaggedDocument

        from .word2vec import check_trained

        if not docs:
            raise ValueError("Doc2VecEmbedder needs at least one training document; X is empty.")
        tokens = Tokenizer(lowercase=self.lowercase).tokenize_all(docs)
        corpus = [TaggedDocument(words, [i]) for i, words in enumerate(tokens)]
        model = Doc2Vec(
            dm=int(self.dm), vector_size=int(self.vector_size), window=int(self.window),
            min_count=int(self.min_count), epochs=int(self.epochs), negative=int(self.negative),
            hs=0, dm_mean=int(bool(self.dm_mean)), dm_concat=int(bool(self.dm_concat)),
            dbow_words=int(bool(self.dbow_words)), sample=float(self.sample),
            alpha=float(self.alpha), seed=int(self.random_state), workers=int(self.workers),
        )
        model.build_vocab(corpus)
        if len(model.wv) == 0:
            counts = Counter(chain.from_iterable(tokens))
            raise ValueError(
                f"Doc2VecEmbedder(min_count={self.min_count}) kept no words: the {len(docs)} "
                f"training documents have {len(counts)} distinct tokens, the most frequent seen "
                f"{max(counts.values(), default=0)} time(s). Lower min_count or train on more "
                "(non-empty) documents."
            )
        model.train(corpus, total_examples=len(corpus), epochs=model.epochs)
        check_trained("Doc2Vec", model.dv.vectors, "alpha", self.alpha)
        check_trained("Doc2Vec", model.wv.vectors, "alpha", self.alpha)
        self.model_ = model
        self.dim_ = int(self.vector_size)
        self.n_train_docs_ = len(docs)

    def _training_features(self, docs):
        """The paragraph vectors learned for the training documents, in order.

        These are the vectors of training (the standard Doc2Vec practice for the training set),
        not re-inferred ones; ``transform`` infers. The cache is not used here, since the
        trained vectors depend on the whole training corpus.
        """
        return np.array(self.model_.dv.vectors[: len(docs)], dtype=np.float32, copy=True)

    # -- inference ----------------------------------------------------------------------------
    def _transform(self, docs):
        tokens = Tokenizer(lowercase=self.lowercase).tokenize_all(docs)
        out = np.empty((len(tokens), self.dim_), dtype=np.float32)
        epochs = int(self.infer_epochs if self.infer_epochs is not None else self.epochs)
        # a shallow copy shares the weights but gets its own random state, so inference never
        # changes the fitted model and concurrent transforms do not interfere
        model = copy.copy(self.model_)
        model.random = np.random.RandomState()
        for i, words in enumerate(tokens):
            out[i] = _infer(model, words, int(self.random_state), epochs)
        return out


def _doc_seed(seed: int, words: list[str]) -> int:
    """64-bit seed from (seed, tokens) that is the same in every process (unlike ``hash``)."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(str(int(seed)).encode())
    digest.update(b"\x00")
    digest.update("\x1f".join(words).encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest(), "little")


def _infer(model, words: list[str], seed: int, epochs: int) -> np.ndarray:
    """Infer one paragraph vector with gensim's compiled routines, seeded per document.

    This is ``Doc2Vec.infer_vector`` with two changes: the starting vector comes from a stable
    hash (gensim uses Python's ``hash``, which changes with ``PYTHONHASHSEED``) and the model's
    random state, which drives negative sampling and window shrinking, is reseeded from the same
    hash, so results do not depend on which documents were inferred before. ``model`` is a
    shallow copy owned by the caller, whose ``random`` is a `numpy.random.RandomState` of its own.
    """
    from gensim.models import doc2vec_inner

    size = model.dv.vector_size
    rs = model.random  # the caller's own RandomState, reseeded (cheaper than a new one)
    rs.seed(_doc_seed(seed, words) & 0xFFFFFFFF)
    vector = ((rs.random_sample(size) - 0.5) / size).astype(np.float32).reshape(1, size)
    lockf = np.ones(1, dtype=np.float32)
    work = np.zeros(model.layer1_size, dtype=np.float32)
    neu1 = np.zeros(model.layer1_size, dtype=np.float32)
    alpha, min_alpha = model.alpha, model.min_alpha
    step = (alpha - min_alpha) / max(epochs - 1, 1)
    common = dict(learn_words=False, learn_hidden=False, doctag_vectors=vector, doctags_lockf=lockf)
    if model.sg:  # PV-DBOW
        train = doc2vec_inner.train_document_dbow
    elif model.dm_concat:
        train = doc2vec_inner.train_document_dm_concat
        common["neu1"] = neu1
    else:
        train = doc2vec_inner.train_document_dm
        common["neu1"] = neu1
    for _ in range(epochs):
        train(model, words, [0], alpha, work, **common)
        alpha -= step
    return vector[0]
