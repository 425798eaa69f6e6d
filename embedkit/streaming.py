"""Chunked, bounded-memory feature extraction to files, on one machine (no Dask needed).

`embed_file` streams a CSV/TSV/JSONL/parquet file larger than memory through a fitted
representation, ``chunk_size`` rows at a time (read by `embedkit.io.read_chunks`), appending
parquet row groups; peak memory depends on ``chunk_size``, not on the file. It is the engine
behind ``embedkit embed``. It needs pandas and pyarrow only.

The pieces it shares with `embedkit.distributed` live here: `output_columns` (checks a
representation is fitted and pooled, names its output columns), `encode_frame` (one chunk or
partition to a float32 frame) and `atomic_path` (a file appears whole or not at all).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .io import read_chunks

__all__ = ["atomic_path", "embed_file", "encode_frame", "keep_columns", "output_columns"]


@contextlib.contextmanager
def atomic_path(path) -> Iterator[Path]:
    """A hidden temporary path next to ``path``, renamed to ``path`` when the block succeeds.

    Readers see the whole file or none: on an error (or a crash) the temporary file is
    removed and ``path`` is left as it was. The temporary name is ``.{name}.{random}.tmp``.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text()
    'done'
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)  # atomic on POSIX
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


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

    Reads ``chunk_size`` rows at a time with `embedkit.io.read_chunks` (CSV/TSV/JSONL with
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
    Texts are read as `embedkit.io` documents: verbatim (an empty CSV cell is an empty
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
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tqdm.auto import tqdm

    if not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size={chunk_size!r}; pass a positive number of rows, e.g. 10000.")
    names = output_columns(representation, densify)
    keep = keep_columns(keep, text_column, names)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    rows = chunks = 0
    with (atomic_path(out_path) as tmp,
          tqdm(unit="docs", desc=f"embedding {Path(in_path).name}", disable=not progress) as bar):
        writer = None
        try:
            for chunk in read_chunks(in_path, [text_column, *keep], chunk_size):
                frame = encode_frame(chunk[text_column], representation, names, densify,
                                     chunk[keep], f"rows {rows}-{rows + len(chunk) - 1}")
                table = pa.Table.from_pandas(frame, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(tmp, table.schema)
                elif table.schema != writer.schema:
                    table = table.cast(writer.schema)
                writer.write_table(table)
                rows += len(chunk)
                chunks += 1
                bar.update(len(chunk))
            if writer is None:  # an empty input still gets a valid, empty output
                empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in keep})
                empty = pd.concat([empty, pd.DataFrame({c: np.float32([]) for c in names})], axis=1)
                writer = pq.ParquetWriter(tmp, pa.Table.from_pandas(empty, preserve_index=False).schema)
        finally:
            if writer is not None:
                writer.close()
    return {"path": str(out_path), "rows": rows, "chunks": chunks, "dim": len(names)}
