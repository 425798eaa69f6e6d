"""Word-vector files: detecting a file's format and reading it, with errors naming file and line.

GloVe and word2vec text (plain, ``.gz`` or ``.bz2``, parsed by pandas' C parser), ``.npy`` +
vocabulary folders (memory-mapped), and, through gensim, word2vec and fastText binaries and
KeyedVectors files. `read_vectors` returns plain data: ``(words, matrix)``, or a gensim
``KeyedVectors``; `embedkit.vectors` builds the `~embedkit.vectors.WordVectors` store from it
(this module never imports that one).
"""

from __future__ import annotations

import bz2
import gzip
import itertools
import os
import re
import zlib
from pathlib import Path

import numpy as np

__all__ = ["FORMATS", "PICKLE_SUFFIXES", "first_duplicate", "read_vectors"]

FORMATS = ("auto", "npy", "glove", "word2vec", "word2vec-binary", "keyedvectors", "facebook")

_FASTTEXT_MAGIC = 793712314  # first int32 of a Facebook fastText .bin file
PICKLE_SUFFIXES = (".kv", ".model", ".wv", ".kvmodel")  # gensim's save(): a pickle


def _detect_format(path: Path) -> str:
    if path.is_dir() or path.suffix.lower() == ".npy":
        return "npy"
    if path.suffix.lower() in PICKLE_SUFFIXES:
        return "keyedvectors"
    with open(path, "rb") as fh:
        head = fh.read(4)
    if len(head) == 4 and int(np.frombuffer(head, dtype="<i4")[0]) == _FASTTEXT_MAGIC:
        return "facebook"
    if path.suffix.lower() == ".bin":
        return "word2vec-binary"
    return "text"


def read_vectors(path: Path, fmt: str):
    """The contents of a word-vector file: ``(words, matrix)`` or a gensim ``KeyedVectors``.

    ``fmt`` is one of `FORMATS`; ``"auto"`` decides from the file (see
    `embedkit.vectors.load_word_vectors`).
    """
    kind = _detect_format(path) if fmt == "auto" else fmt
    if kind == "npy":
        return _load_npy(path)
    if kind in ("text", "glove", "word2vec"):
        return _load_text(path, kind)
    return _load_gensim(path, kind)


def _load_gensim(path: Path, kind: str):
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
    return kv


def _load_npy(path: Path) -> tuple[list[str], np.ndarray]:
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
    return _keep_first(vocab, words, vectors, first_line=1)


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


def _load_text(path: Path, kind: str) -> tuple[list[str], np.ndarray]:
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
    return _keep_first(path, words, values, first_line=skip + 1)


def first_duplicate(words: list[str]) -> tuple[int, str]:
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
    i, word = first_duplicate(words)
    first = words.index(word)
    warnings.warn(f"{path}: {int(repeated.sum())} word(s) appear more than once, e.g. {word!r} on "
                  f"line {i + first_line} (first on line {first + first_line}); kept the first "
                  "vector of each, as gensim does.", UserWarning, stacklevel=2)
    keep = np.flatnonzero(~repeated)
    return [words[k] for k in keep], np.ascontiguousarray(vectors[keep])

