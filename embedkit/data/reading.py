"""One reader for the user's files of documents: CSV/TSV, parquet, JSON Lines, class folders (the
format a file's name says is `embedkit.storage.files.file_format`).

Everything that reads a file of documents goes through this module: `load_texts` (the whole
file, for training and ``embedkit compare --file``), `embedkit.streaming.embed_file` and
``embedkit embed`` (`read_chunks`, a bounded number of rows at a time). So they accept the same
formats and read the same values from them.

How values are read
-------------------
* **The text column is read as written.** ``"NA"``, ``"null"`` or ``"None"`` are documents,
  not missing values; an empty CSV cell is an empty document (CSV has no other way to write
  one); a JSON number is read as its text.
* **A missing text is an error** that names the rows and the fix, as
  `embedkit.validate_documents` does for ``None`` in memory: a JSON ``null`` or absent key, a
  parquet null, a CSV row with too few fields. Drop or fill those rows in the file.
* **Other columns** (labels, ids, ``split``) keep their types (numbers stay numbers); in
  CSV/TSV only an empty cell is a missing value there, so a label ``"NA"`` stays ``"NA"``.
* **Text is UTF-8 unless ``encoding=`` says otherwise** (a UTF-8 byte-order mark is skipped).
  Bytes that are not valid in the encoding are an error that names the file, the line and the
  ``encoding=`` to pass (``--encoding`` on the command line): ``utf-16`` where the file starts
  with its byte-order mark, ``cp1252`` where the bytes read as Windows' Western European text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..storage.files import file_format
from ._file_checks import (
    check_fields,
    check_names,
    not_decodable,
    other_separator,
    raw_bytes,
    reading_encoding,
)
from ._sample import sample_frames
from .documents import MAX_ROWS_SHOWN

__all__ = ["LABEL_SEPARATOR", "SAMPLE_CHUNK", "load_table", "load_texts", "one_label_per_name",
           "read_chunks", "read_folder", "read_table"]

#: the separator of a label set written in one cell (``"drama|comedy"``), read and written so
LABEL_SEPARATOR = "|"
#: rows read at a time where a file is sampled (`read_table`'s ``rows``): a chunk of short
#: texts holds some tens of MB beside the sample
SAMPLE_CHUNK = 100_000


#: what to do where a column is missing, unless the reader's caller says (``hint=``)
_NAME_COLUMNS = ("Name existing columns (text_column=, label_column=; on the command line "
                 "--text-column, --label-column).")


def _no_column(path: Path, name: str, columns, hint: str = "") -> ValueError:
    return ValueError(f"{path} has no column {name!r}; its columns are {list(columns)}. "
                      + (hint or _NAME_COLUMNS))


def _frames(path: Path, kind: str, columns: list[str], optional: list[str],
            chunk_size: int | None, encoding: str, hint: str = "") -> Iterator[pd.DataFrame]:
    """Raw frames of ``path`` (one when ``chunk_size`` is None), with the columns that exist."""
    wanted = columns + optional
    if kind == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        names = pf.schema_arrow.names
        check_names(path, names)
        missing = [c for c in columns if c not in names]
        if missing:
            raise _no_column(path, missing[0], names, hint)
        present = [c for c in wanted if c in names]
        if chunk_size is None:
            yield pf.read(columns=present).to_pandas()
        else:
            for batch in pf.iter_batches(batch_size=chunk_size, columns=present):
                yield batch.to_pandas()
        return
    if kind == "jsonl":  # values as parsed: no dtype guessing, no date conversion
        reader = pd.read_json(path, lines=True, chunksize=chunk_size, dtype=False,
                              convert_dates=False, encoding=encoding)
        frames = [reader] if chunk_size is None else reader
    else:
        sep = "\t" if kind == "tsv" else ","
        try:
            header = pd.read_csv(path, sep=sep, nrows=0, encoding=encoding).columns
        except pd.errors.EmptyDataError:
            return  # an empty file: no rows
        missing = [c for c in columns if c not in header]
        if missing:
            raise _no_column(path, missing[0], header, other_separator(header, sep) or hint)
        check_fields(path, sep, encoding)
        # every cell as written, except that an empty cell is missing outside the text column
        text = columns[0]
        frames = pd.read_csv(path, sep=sep, chunksize=chunk_size, encoding=encoding,
                             usecols=[c for c in header if c in wanted], dtype={text: str},
                             keep_default_na=False, na_values={c: [""] for c in wanted[1:]})
        if chunk_size is None:
            frames = [frames]
    with frames if chunk_size is not None else contextlib.nullcontext():
        for frame in frames:
            if frame.empty:
                continue  # an empty file, or a header without rows
            missing = [c for c in columns if c not in frame.columns]
            if missing:
                raise _no_column(path, missing[0], frame.columns, hint)
            yield frame


def _as_texts(values: pd.Series, path: Path, column: str, first_row: int) -> pd.Series:
    """The text column as str, or a ValueError naming the rows that have no text."""
    missing = np.flatnonzero(values.isna().to_numpy())
    if len(missing):
        rows = ", ".join(str(first_row + i) for i in missing[:MAX_ROWS_SHOWN])
        more = f" and {len(missing) - MAX_ROWS_SHOWN} more" if len(missing) > MAX_ROWS_SHOWN else ""
        raise ValueError(
            f"{path}: {len(missing)} row(s) have no text in column {column!r} (a null or "
            f"missing value), at rows {rows}{more} (data rows counted from 0). A missing "
            "document is an error, as in validate_documents; drop those rows or write an empty "
            f"string there, e.g. with pandas df.dropna(subset=[{column!r}]) or "
            f"df[{column!r}].fillna(''), and save the file again."
        )
    if values.dtype == object:
        return values.map(lambda v: v if isinstance(v, str) else
                          v.decode("utf-8", errors="replace") if isinstance(v, bytes) else str(v))
    return values.astype(str)


def read_chunks(path, columns: Sequence[str], chunk_size: int | None = 10_000, *,
                optional: Sequence[str] = (), encoding: str = "utf-8",
                hint: str = "") -> Iterator[pd.DataFrame]:
    """Read ``columns`` of a CSV/TSV/JSONL/parquet file, ``chunk_size`` rows at a time.

    Memory is bounded by ``chunk_size``, not by the file: CSV/TSV and JSON Lines go through
    pandas' chunked readers, parquet through pyarrow record batches. Values are read as the
    module docstring says (the text column verbatim; a missing text is an error).

    Parameters
    ----------
    path : str or Path
        ``.csv``, ``.tsv``, ``.jsonl``, ``.ndjson`` (optionally ``.gz``), ``.parquet`` or ``.pq``.
    columns : list of str
        Columns to read, the text column first; a missing one is an error that lists the
        file's columns. Other columns are not loaded where the format allows it.
    chunk_size : int or None, default=10_000
        Rows per chunk; None reads the whole file as one chunk.
    optional : list of str, default=()
        Columns read when the file has them (e.g. ``split``).
    encoding : str, default="utf-8"
        Text encoding of CSV/TSV/JSON Lines files (a UTF-8 byte-order mark is skipped); bytes
        that do not decode are an error naming the line and the encoding to pass.
    hint : str, default=""
        The fix said where a column is missing: the parameters (and flags) that named the
        columns. By default ``text_column=`` and ``label_column=``.

    Yields
    ------
    pandas.DataFrame
        ``columns`` (then the ``optional`` ones present), the text column as ``str``, indexed
        by row number in the file.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.csv")
    >>> pd.DataFrame({"text": ["a", "NA", ""], "id": [7, 8, 9]}).to_csv(path, index=False)
    >>> [chunk["text"].tolist() for chunk in read_chunks(path, ["text", "id"], chunk_size=2)]
    [['a', 'NA'], ['']]
    """
    path = Path(path)
    kind = file_format(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist.")
    if path.is_dir():
        raise ValueError(f"{path} is a folder; pass one {kind} file.")
    if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer))
                                   or isinstance(chunk_size, bool) or chunk_size < 1):
        raise ValueError(f"chunk_size={chunk_size!r}; pass a positive number of rows, e.g. 10000.")
    columns = list(dict.fromkeys(columns))
    optional = [c for c in optional if c not in columns]
    frames = _frames(path, kind, columns, optional, chunk_size, reading_encoding(encoding), hint)
    rows = 0
    while True:
        try:
            frame = next(frames, None)
        except UnicodeDecodeError:
            raise not_decodable(path, encoding) from None
        if frame is None:
            return
        frame = frame[columns + [c for c in optional if c in frame.columns]]
        frame.index = pd.RangeIndex(rows, rows + len(frame))
        frame[columns[0]] = _as_texts(frame[columns[0]], path, columns[0], rows)
        rows += len(frame)
        yield frame


def read_table(path, columns: Sequence[str], *, optional: Sequence[str] = (),
               encoding: str = "utf-8", hint: str = "", rows: int | None = None,
               seed: int = 0) -> pd.DataFrame:
    """Read ``columns`` of a whole CSV/TSV/JSONL/parquet file, as `read_chunks` reads them; or,
    given ``rows``, a uniform random sample of that many of its rows (every row where it has
    no more), drawn with ``seed`` as the file streams by `SAMPLE_CHUNK` rows at a time: memory
    holds the sample and one chunk, never the file. The rows keep the file's order, and
    ``.attrs["file_rows"]`` says how many the file has.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.jsonl")
    >>> pd.DataFrame({"text": ["a", "b"], "label": [1, 0]}).to_json(path, orient="records", lines=True)
    >>> read_table(path, ["text", "label"]).label.tolist()
    [1, 0]
    >>> read_table(path, ["text", "label"], rows=1).attrs["file_rows"]
    2
    """
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, (int, np.integer))
                             or rows < 1):
        raise ValueError(f"rows={rows!r}; pass a positive number of rows to read, or None for all.")
    frames = read_chunks(path, columns, None if rows is None else SAMPLE_CHUNK, optional=optional,
                         encoding=encoding, hint=hint)
    frames = list(frames) if rows is None else sample_frames(frames, int(rows), seed)
    if not frames:  # an empty file
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in dict.fromkeys(columns)})
    out = frames[0] if len(frames) == 1 else pd.concat(frames)
    out.attrs["file_rows"] = out.attrs.get("file_rows", len(out))
    return out


def read_folder(path, encoding: str = "utf-8") -> pd.DataFrame:
    """Read a folder with one sub-folder per class and one document per file (aclImdb style).

    Hidden files and folders are skipped; undecodable bytes are replaced, not fatal.

    Returns
    -------
    pandas.DataFrame with ``text`` and ``label`` (the sub-folder's name), sorted by label then
    file name.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> for label, text in [("pos", "great"), ("neg", "awful")]:
    ...     (root / label).mkdir()
    ...     _ = (root / label / "1.txt").write_text(text)
    >>> read_folder(root).values.tolist()
    [['awful', 'neg'], ['great', 'pos']]
    """
    path = Path(path)
    rows = []
    for folder in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for file in sorted(f for f in folder.iterdir() if f.is_file() and not f.name.startswith(".")):
            rows.append((file.read_text(encoding=encoding, errors="replace"), folder.name))
    if not rows:
        raise ValueError(f"{path} has no sub-folders with files; expected one folder per class.")
    return pd.DataFrame(rows, columns=["text", "label"])


def load_texts(path, text_column: str = "text", label_column: str | None = "label",
               encoding: str = "utf-8", *, rows: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Load the user's own labelled texts from a file or a folder per class.

    Reads CSV/TSV, parquet and JSON Lines files (values as this module's docstring says: the
    text verbatim, a missing text an error naming its rows), and folder-per-class layouts
    (every sub-folder is a label and every file in it one document, as aclImdb's ``pos/``,
    ``neg/``). A ``split`` column ("train"/"test"), where present, is kept.

    Parameters
    ----------
    path : str or Path
    text_column : str, default="text"
    label_column : str or None, default="label"
        None loads unlabelled texts.
    encoding : str, default="utf-8"
    rows : int, optional
        Read a uniform random sample of this many rows (drawn with ``seed``; every row where the
        file has no more), streaming the file so that memory holds the sample, not the file
        (`read_table`). A folder per class is read whole.
    seed : int, default=0

    Returns
    -------
    pandas.DataFrame with ``text`` (and ``label``, ``split``) columns. Labels that differ only
    by surrounding spaces (``"pos"`` and ``"pos "``) are read as one, stripped, and
    ``.attrs["notes"]`` says which (the commands print it); ``.attrs["file_rows"]``: the rows
    the file has.

    Raises
    ------
    ValueError
        Before any work is done on it: the same column named as text and label, an empty file
        (or a header without rows), a text column without one document (every value empty, or
        every value a number), bytes that are not text in ``encoding``, a missing column.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "reviews.csv")
    >>> pd.DataFrame({"review": ["good", "NA"], "stars": [5, 1]}).to_csv(path, index=False)
    >>> load_texts(path, "review", "stars").values.tolist()
    [['good', 5], ['NA', 1]]
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; pass a CSV, TSV, parquet or JSONL file "
                                "or a folder with one sub-folder per class.")
    if path.is_dir():
        return read_folder(path, encoding)
    if label_column is not None and label_column == text_column:
        raise ValueError(f"the column {text_column!r} is used twice, as the text and as the label "
                         "column (text_column= and label_column=; on the command line --text-column "
                         "and --label-column); name the column of labels, e.g. label_column=label.")
    columns = [text_column] + ([label_column] if label_column else [])
    df = read_table(path, columns, optional=["split"], encoding=encoding, rows=rows, seed=seed)
    if df.empty:
        blank = not raw_bytes(path, 1 << 16).strip() and file_format(path) != "parquet"
        raise ValueError(f"{path} is empty: " + ("it holds no header and no rows." if blank else
                         "it has no rows of documents (a header only).")
                         + " Pass the file that holds your documents.")
    _check_usable(df[text_column], path, text_column)
    out = pd.DataFrame({"text": df[text_column].to_numpy(dtype=object)})
    if label_column:
        out["label"], note = one_label_per_name(df[label_column])
        out.attrs["notes"] = [n for n in (note, _no_label(df[label_column], label_column)) if n]
    if "split" in df.columns:
        out["split"] = df["split"].to_numpy()
    out.attrs["file_rows"] = df.attrs["file_rows"]
    return out


def _header(path: Path, encoding: str) -> list[str]:
    """The column names of a CSV/TSV/JSONL/parquet file, read without its rows."""
    kind = file_format(path)
    if kind == "parquet":
        import pyarrow.parquet as pq

        return list(pq.ParquetFile(path).schema_arrow.names)
    if kind == "jsonl":
        return list(pd.read_json(path, lines=True, nrows=1, encoding=encoding).columns)
    return list(pd.read_csv(path, sep="\t" if kind == "tsv" else ",", nrows=0,
                            encoding=reading_encoding(encoding)).columns)


def load_table(path, text_columns: Sequence[str], label_column: str | None = "label",
               columns: Sequence[str] = (), encoding: str = "utf-8", *, rows: int | None = None,
               seed: int = 0) -> pd.DataFrame:
    """Load a table: text columns (at least one) beside categorical and numeric ones, and the
    labels, read as `load_texts` reads one text column (``rows``: a random sample of that many,
    as there), every column named checked first. ``columns`` are the other columns to learn
    from, ``["*"]`` every other column of the file.

    Returns the feature columns under their own names (the text ones first), then ``label`` (and
    ``split`` where the file has one).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "reviews.csv")
    >>> pd.DataFrame({"title": ["Soft", "Torn"], "body": ["lovely", "the seams split"],
    ...               "age": [34, 51], "stars": [5, 1]}).to_csv(path, index=False)
    >>> load_table(path, ["title", "body"], "stars", ["*"]).columns.tolist()
    ['title', 'body', 'age', 'label']
    """
    path = Path(path)
    if not path.exists() or path.is_dir():
        raise FileNotFoundError(f"{path} is not a file; a table is a CSV, TSV, parquet or JSONL "
                                "file with a column per field.")
    text_columns = list(dict.fromkeys(text_columns))
    others = [c for c in columns if c != "*"]  # each one named is checked, "*" or not
    if "*" in columns:
        taken = {*text_columns, label_column, "split"}
        others += [c for c in _header(path, encoding) if c not in taken]
    features = text_columns + [c for c in dict.fromkeys(others) if c not in text_columns]
    clash = [c for c in features if c in ("label", "split") or c == label_column]
    if clash:
        raise ValueError(f"column {clash[0]!r} is named as a feature, but it is "
                         + ("the label column" if clash[0] == label_column else
                            f"a name the reader keeps for the {clash[0]}s")
                         + "; name each column once (rename it in the file if it must be both).")
    wanted = features + ([label_column] if label_column else [])
    df = read_table(path, wanted, optional=["split"], encoding=encoding, rows=rows, seed=seed, hint=(
        "Name existing columns (text_columns=, label_column=, columns=; on the command line "
        "--text-column, --label-column, --column)."))
    if df.empty:
        raise ValueError(f"{path} has no rows; pass the file that holds your table.")
    _check_usable(df[text_columns[0]], path, text_columns[0])
    out = df[features].reset_index(drop=True)
    if label_column:
        out["label"], note = one_label_per_name(df[label_column])
        out.attrs["notes"] = [n for n in (note, _no_label(df[label_column], label_column)) if n]
    if "split" in df.columns:
        out["split"] = df["split"].to_numpy()
    out.attrs["text_columns"] = text_columns
    out.attrs["file_rows"] = df.attrs["file_rows"]
    return out


def _listed(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def one_label_per_name(labels: pd.Series) -> tuple[np.ndarray, str]:
    """``labels`` (a Series), with those that differ only by surrounding spaces (``"pos"`` and ``"pos "``,
    as a spreadsheet export leaves them) read as one, stripped; and a line saying which were, or
    ``""``. Labels that are written one way only are kept as written."""
    values = labels.to_numpy()
    if pd.api.types.is_numeric_dtype(labels.dtype) or pd.api.types.is_bool_dtype(labels.dtype):
        return values, ""
    written = pd.Series(pd.unique(labels.dropna()))
    written = written[written.map(lambda v: isinstance(v, str))]
    stripped = written.str.strip()
    clash = stripped[stripped.duplicated(keep=False)]
    if clash.empty:
        return values, ""
    merged = {raw: stripped[i] for i, raw in written.items() if i in clash.index}
    values = np.array([merged.get(v, v) if isinstance(v, str) else v for v in values], dtype=object)
    groups = [_listed([repr(r) for r in sorted(raws)]) + f" as {name!r}"
              for name, raws in pd.Series(list(merged)).groupby(list(merged.values()))
              .agg(list).items()]
    return values, ("labels that differ only by surrounding spaces were read as one: "
                    + "; ".join(groups[:MAX_ROWS_SHOWN])
                    + (f" and {len(groups) - MAX_ROWS_SHOWN} more" if len(groups) > MAX_ROWS_SHOWN
                       else "") + ". Strip the spaces to silence this.")


def _no_label(labels: pd.Series, column: str) -> str:
    """A line naming the rows whose label cell holds only ``|`` (and spaces), which a set of
    labels reads as no label at all, or ``""``."""
    only = labels.map(lambda v: isinstance(v, str) and LABEL_SEPARATOR in v
                      and not v.replace(LABEL_SEPARATOR, "").strip())
    rows = np.flatnonzero(only.to_numpy(dtype=bool))
    if not len(rows):
        return ""
    more = f" and {len(rows) - MAX_ROWS_SHOWN} more" if len(rows) > MAX_ROWS_SHOWN else ""
    many = len(rows) > 1
    return (f"{len(rows)} cell{'s' if many else ''} of the label column {column!r} "
            f"hold{'' if many else 's'} only '{LABEL_SEPARATOR}' (row{'s' if many else ''} "
            f"{', '.join(map(str, rows[:MAX_ROWS_SHOWN]))}{more}, counted from 0), read as a set "
            f"of no labels. Write the labels there (drama{LABEL_SEPARATOR}comedy), or drop "
            f"{'those rows' if many else 'that row'}.")


def _check_usable(texts: pd.Series, path: Path, column: str) -> None:
    """Refuse a text column without a single document to learn from: every value empty, or
    every value a number (an id, a score or a label column named as the text)."""
    written = texts[texts.str.strip() != ""]
    if len(written) and pd.to_numeric(written, errors="coerce").isna().any():
        return
    what = (f"all {len(texts):,} values are empty" if not len(written) else
            f"it holds only numbers (such as {', '.join(written.head(3))}): an id, a score or a "
            "label column, not documents")
    raise ValueError(f"{path}: column {column!r} has no text to learn from: {what}. Name the column "
                     "that holds the documents (text_column=; on the command line --text-column).")
