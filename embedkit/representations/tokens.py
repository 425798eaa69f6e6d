"""Token ids for heads that learn (or fine-tune) their own embedding layer."""

from __future__ import annotations

import importlib
from typing import ClassVar

import numpy as np

from .._params import SEED, CacheSpec, HasMethods, StrOptions, positive_int
from ..base import Representation, store_params
from ..data.documents import CHARS_PER_TOKEN, Tokenizer
from ..sequences import TokenIds

__all__ = ["TokenIndexer", "PAD", "UNK"]

PAD = "<pad>"
UNK = "<unk>"

#: names accepted by ``TokenIndexer(pretrained=...)`` -> (module, class) of the representation
_PRETRAINED = {
    "glove-6b-50d": ("embedkit.representations.glove", "GloveEmbedder"),
}


class TokenIndexer(Representation):
    """Map documents to padded token ids over a vocabulary fitted on the training documents.

    This is the "learn the embedding from scratch" input of a neural head: the head owns an
    ``nn.Embedding`` and trains it (e.g. ``MLPClassifier`` on ids is a Deep Averaging Network).
    Id 0 is ``"<pad>"``, id 1 is ``"<unk>"`` (words outside the vocabulary), and the fitted words
    follow, most frequent first (ties alphabetically).

    With ``pretrained``, the vocabulary is aligned to a static word representation, and the
    output carries a ``(vocab_size, dim)`` matrix of its vectors so the head initialises its
    embedding from them, frozen or fine-tuned (the head's ``freeze=``). Vocabulary words the
    pretrained vectors lack get small random vectors (normal, with the standard deviation of the
    vectors that were found, seeded by ``random_state``) so that fine-tuning can tell them apart;
    ``"<pad>"`` and ``"<unk>"`` get zeros. ``coverage_`` reports the share of the fitted
    vocabulary (without the two reserved ids) that was found.

    Parameters
    ----------
    min_count : int, default=1
        Keep words seen at least this many times in the training documents.
    max_vocab : int or None, default=None
        Keep at most this many words (the most frequent), besides ``"<pad>"`` and ``"<unk>"``.
    lowercase : bool, default=True
        Lowercase before tokenizing with the shared `embedkit.data.documents.Tokenizer`.
    max_length : int or None, default=None
        Keep the first ``max_length`` tokens of each document; None keeps all.
    pretrained : None, str or representation, default=None
        Static word vectors to align to: a name (``"glove-6b-50d"``) or an unfitted
        representation with a ``lookup(words)`` method once fitted, such as ``GloveEmbedder()``,
        ``Word2VecEmbedder()`` or ``FastTextEmbedder()``. A clone of it is fitted on the same
        documents inside ``fit`` (so cross-validation never leaks test folds into it); only the
        aligned matrix is kept.
    random_state : int, default=0
        Seeds the vectors of words missing from ``pretrained``.
    output : {"ids"}, default="ids"
    cache : None, "memory" or path, default=None
        Embedding cache (see `embedkit.cache`).

    Attributes
    ----------
    vocabulary_ : list of str
        Word of each id; ``vocabulary_[0] == "<pad>"``, ``vocabulary_[1] == "<unk>"``.
    vocab_size_ : int
        ``len(vocabulary_)``.
    vectors_ : ndarray of shape (vocab_size, dim) or None
        Aligned pretrained vectors (None without ``pretrained``).
    coverage_ : float or None
        Share of the fitted words found in ``pretrained`` (None without it).
    dim_ : int
        Dimension of ``vectors_``, or 0 when the head learns its own embedding.

    Examples
    --------
    >>> idx = TokenIndexer().fit(["the cat sat", "the dog"])
    >>> ids = idx.transform(["the bird sat"])
    >>> ids.ids.tolist(), [idx.vocabulary_[i] for i in ids.ids[0]]
    ([[2, 1, 5]], ['the', '<unk>', 'sat'])

    A Deep Averaging Network that learns its embedding, in one pipeline:

    >>> from sklearn.pipeline import make_pipeline
    >>> from embedkit.heads import MLPClassifier
    >>> pipe = make_pipeline(TokenIndexer(), MLPClassifier(embedding_dim=16, epochs=3))
    >>> _ = pipe.fit(["good film", "bad film", "great plot", "awful plot"], [1, 0, 1, 0])
    """

    _outputs = ("ids",)
    _outputs_note = (
        "TokenIndexer emits token ids for a head's own embedding layer; for vectors use a "
        "vector representation, e.g. GloveEmbedder(output='pooled' or 'sequence')."
    )

    _parameter_constraints: ClassVar[dict] = {
        "min_count": [positive_int()],
        "max_vocab": [None, positive_int()],
        "lowercase": ["boolean"],
        "max_length": [None, positive_int()],
        # a representation with lookup(words) once fitted: checked when it is fitted
        "pretrained": [None, StrOptions(set(_PRETRAINED)), HasMethods(["fit", "get_params"])],
        "random_state": [None, SEED],
        "output": [StrOptions({"ids"})],
        "cache": [CacheSpec()],
    }

    def __init__(self, min_count: int = 1, max_vocab: int | None = None, lowercase: bool = True,
                 max_length: int | None = None, pretrained=None, random_state: int = 0,
                 output: str = "ids", cache=None):
        store_params(self, locals())

    # -- fitting ------------------------------------------------------------------------------
    def _reach(self) -> int | None:
        """``max_length`` tokens read no more than ``CHARS_PER_TOKEN`` characters each."""
        return super()._reach() if self.max_length is None else int(self.max_length) * CHARS_PER_TOKEN

    def _fit(self, docs, y=None):
        tokens = Tokenizer(lowercase=self.lowercase).tokenize_ids(docs)
        counts = dict(zip(tokens.words, tokens.counts().tolist(), strict=True))
        kept = sorted((w for w, c in counts.items() if c >= self.min_count),
                      key=lambda w: (-counts[w], w))
        if self.max_vocab is not None:
            kept = kept[: int(self.max_vocab)]
        if not kept:
            most = max(counts.values(), default=0)
            raise ValueError(
                f"TokenIndexer(min_count={self.min_count}) kept no words: the {len(docs)} "
                f"training documents have {len(counts)} distinct tokens, the most frequent seen "
                f"{most} time(s). Lower min_count or fit on more (non-empty) documents."
            )
        self.vocabulary_ = [PAD, UNK] + [w for w in kept if w not in (PAD, UNK)]
        self.vocab_size_ = len(self.vocabulary_)
        self.vectors_ = None
        self.coverage_ = None
        if self.pretrained is not None:
            self.vectors_, self.coverage_ = self._align(docs, y)
        self.dim_ = 0 if self.vectors_ is None else int(self.vectors_.shape[1])

    def _pretrained_estimator(self):
        from sklearn.base import clone

        spec = self.pretrained
        if isinstance(spec, str):
            module, name = _PRETRAINED[spec]
            return getattr(importlib.import_module(module), name)()
        return clone(spec)

    def _align(self, docs, y):
        embedder = self._pretrained_estimator()
        name = type(embedder).__name__
        if not hasattr(embedder, "lookup"):
            raise ValueError(
                f"TokenIndexer(pretrained={name}()) needs word vectors to look up, but {name} has "
                "no lookup(words); use a static word representation (GloveEmbedder, "
                "Word2VecEmbedder or FastTextEmbedder)."
            )
        embedder.fit(docs, y)
        words = self.vocabulary_[2:]
        vectors, found = embedder.lookup(words)
        vectors = np.asarray(vectors, dtype=np.float32)
        found = np.asarray(found, dtype=bool)
        if vectors.shape[0] != len(words) or found.shape != (len(words),):
            raise ValueError(
                f"{name}.lookup returned {vectors.shape[0]} vectors and {found.shape} flags for "
                f"{len(words)} words; this is a bug in {name}."
            )
        dim = vectors.shape[1]
        matrix = np.zeros((len(self.vocabulary_), dim), dtype=np.float32)
        matrix[2:][found] = vectors[found]
        n_missing = int((~found).sum())
        if n_missing:
            scale = float(vectors[found].std()) if found.any() else 0.1
            rng = np.random.default_rng(self.random_state)
            matrix[2:][~found] = rng.normal(0.0, scale, (n_missing, dim)).astype(np.float32)
        return matrix, float(found.mean())

    # -- transform ----------------------------------------------------------------------------
    def _transform(self, docs):
        vocabulary = dict(zip(self.vocabulary_, range(self.vocab_size_), strict=True))
        tokens = Tokenizer(lowercase=self.lowercase).tokenize_ids(docs, vocabulary=vocabulary)
        n = len(tokens)
        index = np.where(tokens.positions >= 0, tokens.positions, 1)  # unknown words: "<unk>"
        tokens = tokens.truncate(self.max_length)
        width = max(int(tokens.lengths.max(initial=0)), 1)
        ids = np.zeros(n * width, dtype=np.int64)
        ids[tokens.padded_index(width)] = index[tokens.ids]
        token_array = np.empty(n, dtype=object)
        token_array[:] = tokens.lists()
        return TokenIds(ids.reshape(n, width), tokens.lengths, self.vocabulary_,
                        vectors=self.vectors_, tokens=token_array)
