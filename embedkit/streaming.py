"""Chunked, bounded-memory feature extraction to files, on one machine (no Dask needed).

`embed_file` streams a CSV/TSV/JSONL/parquet file larger than memory through a fitted
representation, ``chunk_size`` rows at a time (read by `embedkit.data.reading.read_chunks`), appending
parquet row groups; peak memory depends on ``chunk_size``, not on the file. It is the engine
behind ``embedkit embed``. It needs pandas and pyarrow only. `embedkit.predicting.predict_file`
is its twin for predictions, writing through the same `FrameWriter`.

The pieces it shares with `embedkit.distributed` live here: `output_columns` (checks a
representation is fitted and pooled, names its output columns), `encode_frame` (one chunk or
partition to a float32 frame); `embedkit.storage.files.atomic_path` makes every file appear
whole or not at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .data.reading import read_chunks
from .storage.files import atomic_path, opener

__all__ = ["EMBED_COLUMNS", "FrameWriter", "embed_file", "encode_frame", "keep_columns",
           "output_columns", "parquet_to_npy"]

#: where a column `embed_file` reads is missing: the parameters (and flags) that name them
EMBED_COLUMNS = ("Name existing columns (text_column=, keep=; on the command line --text-column, "
                 "--id-column).")


class FrameWriter:
    """Append pandas frames to one CSV/TSV/JSON Lines/parquet file that appears whole or not at all.

    A context manager: frames are written to a temporary file next to ``path`` (`atomic_path`)
    and it is renamed to ``path`` when the block ends without error. Parquet gets one row group
    per frame (later frames are cast to the first one's schema); CSV/TSV get the header once
    (``.gz`` names are gzip-compressed).

    Parameters
    ----------
    path : str or Path
    kind : {"csv", "tsv", "jsonl", "parquet"}, optional
        Defaults to the format of ``path``'s name (`embedkit.storage.files.file_format`).

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "rows.csv"
    >>> with FrameWriter(out) as writer:
    ...     writer.write(pd.DataFrame({"a": [1, 2]}))
    ...     writer.write(pd.DataFrame({"a": [3]}))
    >>> pd.read_csv(out)["a"].tolist()
    [1, 2, 3]
    """

    def __init__(self, path, kind: str | None = None):
        from .storage.files import file_format

        self.path = Path(path)
        self.kind = kind or file_format(self.path)
        self._stack = contextlib.ExitStack()
        self._handle = self._parquet = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self._stack.enter_context(atomic_path(self.path))
        return self

    def write(self, frame: pd.DataFrame) -> None:
        """Append the rows of ``frame`` (its index is not written)."""
        if self.kind == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._parquet is None:
                self._parquet = pq.ParquetWriter(self._tmp, table.schema)
                self._stack.callback(self._parquet.close)
            elif table.schema != self._parquet.schema:
                table = table.cast(self._parquet.schema)
            self._parquet.write_table(table)
            return
        first = self._handle is None
        if first:
            self._handle = self._stack.enter_context(
                opener(self.path)(self._tmp, "wt", encoding="utf-8", newline=""))
        if self.kind == "jsonl":
            if len(frame):
                text = frame.to_json(orient="records", lines=True, force_ascii=False)
                self._handle.write(text if text.endswith("\n") else text + "\n")
        else:
            frame.to_csv(self._handle, sep="\t" if self.kind == "tsv" else ",", index=False,
                         header=first)

    def __exit__(self, *exc) -> bool:
        return self._stack.__exit__(*exc)


def _sparse_message(model, dim: int) -> str:
    name = type(model).__name__
    return (
        f"{name} gives sparse output with {dim:,} columns, and a distributed DataFrame column "
        "is dense. Reduce it to a dense space first, e.g. TfidfEmbedder(n_components=300) (LSA), "
        f"or pass densify=True to convert each partition to a dense float32 frame "
        f"({dim:,} columns x 4 bytes per row)."
    )


def output_columns(model, densify: bool = False) -> list[str]:
    """Check ``model`` is a fitted representation with pooled output; return its column names.

    The names are ``get_feature_names_out()`` where it gives one distinct name per dimension,
    else ``f0, f1, ...``. Sparse output is refused unless ``densify``.

    Examples
    --------
    >>> from embedkit import TfidfEmbedder
    >>> output_columns(TfidfEmbedder(n_components=2).fit(["a cat", "a dog", "the cat"]))
    ['lsa0', 'lsa1']
    """
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    name = type(model).__name__
    if not hasattr(model, "transform"):
        raise ValueError(f"representation must be a fitted transformer; got a {name}.")
    output = getattr(model, "output", "pooled")
    if output != "pooled":
        raise ValueError(
            f"{name}(output={output!r}) gives one vector per token; distributed extraction and "
            "embed_file write one row per document. Use output='pooled'."
        )
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise ValueError(
            f"{name} is not fitted; call .fit(texts) on a sample first (a representation is "
            "fitted once, locally, then shipped to the workers)."
        ) from None
    X = model.transform([""])  # an empty document is legal for every representation
    dim = X.shape[1]
    if sp.issparse(X) and not densify:
        raise ValueError(_sparse_message(model, dim))
    try:
        names = [str(c) for c in model.get_feature_names_out()]
    except (AttributeError, TypeError, ValueError, NotImplementedError):  # no names to give
        names = []
    if len(names) != dim or len(set(names)) != dim:
        names = [f"f{i}" for i in range(dim)]
    return names


def keep_columns(keep, text_column: str, names: list[str]) -> list[str]:
    """``keep`` as a list of columns to carry next to the vectors, checked against ``names``."""
    keep = [keep] if isinstance(keep, str) else list(keep or [])
    if text_column in keep:
        raise ValueError(f"keep= lists the text column {text_column!r}; keep only other columns "
                         "(the text itself is not copied to the output).")
    clash = [c for c in keep if c in names]
    if clash:
        raise ValueError(f"keep column {clash[0]!r} has the name of an output dimension; "
                         "rename it before extracting.")
    return keep


def encode_frame(texts: pd.Series, model, columns: list[str], densify: bool,
                 kept: pd.DataFrame | None = None, where: str = "") -> pd.DataFrame:
    """Encode one chunk of documents into a float32 frame with ``columns``, after ``kept``.

    ``where`` (e.g. ``"rows 0-9999"``) prefixes a ``ValueError`` of the representation.
    """
    try:
        X = model.transform(texts)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    if sp.issparse(X):
        if not densify:  # already refused by output_columns; kept for direct callers
            raise ValueError(_sparse_message(model, X.shape[1]))
        X = X.toarray()
    X = np.asarray(X, dtype=np.float32)
    out = pd.DataFrame(X, index=texts.index, columns=columns, copy=False)
    if kept is not None and len(kept.columns):
        out = pd.concat([kept, out], axis=1)
    return out


def embed_file(representation, in_path, out_path, *, text_column: str = "text",
               keep: Sequence[str] | str | None = None, chunk_size: int = 10_000,
               densify: bool = False, progress: bool = False) -> dict:
    """Stream a text file through a fitted representation into parquet, in bounded memory.

    Reads ``chunk_size`` rows at a time with `embedkit.data.reading.read_chunks` (CSV/TSV/JSONL with
    pandas' chunked readers, parquet by record batch), encodes each chunk and appends it as
    one parquet row group, so peak memory depends on ``chunk_size`` and the model, not on the
    file's length. The output is written to a hidden temporary file next to ``out_path`` and
    renamed into place at the end: an interrupted run leaves no partial output.

    Parameters
    ----------
    representation : fitted Representation
        With ``output="pooled"``; sparse output (TF-IDF without ``n_components``) needs
        ``densify=True``.
    in_path : str or Path
        ``.csv``, ``.tsv``, ``.jsonl`` (optionally ``.gz``) or ``.parquet``.
    out_path : str or Path
        Parquet file to write.
    text_column : str, default="text"
    keep : str or list of str, optional
        Columns copied next to the vectors (e.g. ``"id"``), as read.
    chunk_size : int, default=10_000
        Rows per chunk and per parquet row group; ``chunk_size >= n_rows`` is the one-chunk run.
    densify : bool, default=False
    progress : bool, default=False
        Show a tqdm progress bar (rows).

    Returns
    -------
    dict
        ``{"path", "rows", "chunks", "dim"}``.

    Notes
    -----
    Texts are read as `embedkit.data.reading` documents: verbatim (an empty CSV cell is an empty
    document, ``"NA"`` is text), and a missing text (a JSON or parquet null) is an error that
    names its rows; nothing is written then.

    Examples
    --------
    >>> import os, tempfile
    >>> from embedkit import TfidfEmbedder
    >>> folder = tempfile.mkdtemp()
    >>> texts = ["the cat sat", "a dog ran", "the dog sat", "cats and dogs"] * 5
    >>> pd.DataFrame({"id": range(20), "text": texts}).to_csv(f"{folder}/in.csv", index=False)
    >>> emb = TfidfEmbedder(n_components=2).fit(texts)
    >>> embed_file(emb, f"{folder}/in.csv", f"{folder}/out.parquet", keep="id",
    ...            chunk_size=8)  # doctest: +ELLIPSIS
    {'path': '...out.parquet', 'rows': 20, 'chunks': 3, 'dim': 2}
    >>> pd.read_parquet(f"{folder}/out.parquet").columns.tolist()
    ['id', 'lsa0', 'lsa1']
    """
    from tqdm.auto import tqdm

    if not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size={chunk_size!r}; pass a positive number of rows, e.g. 10000.")
    names = output_columns(representation, densify)
    keep = keep_columns(keep, text_column, names)
    out_path = Path(out_path)
    rows = chunks = 0
    with (FrameWriter(out_path, "parquet") as writer,
          tqdm(unit="docs", desc=f"embedding {Path(in_path).name}", disable=not progress) as bar):
        for chunk in read_chunks(in_path, [text_column, *keep], chunk_size, hint=EMBED_COLUMNS):
            writer.write(encode_frame(chunk[text_column], representation, names, densify,
                                      chunk[keep], f"rows {rows}-{rows + len(chunk) - 1}"))
            rows += len(chunk)
            chunks += 1
            bar.update(len(chunk))
        if not chunks:  # an empty input still gets a valid, empty output
            empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in keep})
            writer.write(pd.concat([empty, pd.DataFrame({c: np.float32([]) for c in names})], axis=1))
    return {"path": str(out_path), "rows": rows, "chunks": chunks, "dim": len(names)}


def parquet_to_npy(source: Path, output: Path, id_column: str | None, rows: int, dim: int) -> None:
    """Copy `embed_file`'s parquet output to an .npy of vectors and a .ids.txt, row group by row
    group. Both appear whole or not at all (`atomic_path`), and are written with plain writes,
    not a memory map, so a full disk is an error (`embedkit.storage.files.WriteError`), not a crash."""
    import pyarrow.parquet as pq

    header = {"descr": np.lib.format.dtype_to_descr(np.dtype("<f4")), "fortran_order": False,
              "shape": (rows, dim)}
    with atomic_path(output) as npy, atomic_path(output.with_suffix(".ids.txt")) as ids_path, \
            open(npy, "wb") as vectors, open(ids_path, "w", encoding="utf-8") as ids:
        np.lib.format.write_array_header_1_0(vectors, header)
        start = 0
        for batch in pq.ParquetFile(source).iter_batches():
            frame = batch.to_pandas()
            stop = start + len(frame)
            names = frame.pop(id_column) if id_column else range(start, stop)
            vectors.write(np.ascontiguousarray(frame.to_numpy(dtype="<f4")).tobytes())
            ids.write("".join(f"{i}\n" for i in names))
            start = stop
    source.unlink()
