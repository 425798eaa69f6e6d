"""What a file of documents holds before it is read: its rows and bytes bound from one pass that
parses nothing (`size_file`), the seconds reading it takes (`READ_COST`) and the memory reading
it holds (`READ_MEMORY`); `embedkit.data.reading` reads it."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from ..storage.files import file_format, opener

__all__ = ["READ_COST", "READ_MEMORY", "FileSize", "size_file"]

#: seconds reading a file of documents takes, a byte and a line (pandas' parser, the pass that
#: checks every row's fields, the checks of the values): 23 MB of news articles (116k lines)
#: were read in 1.9 s and 5.7 MB of questions (100k lines) in 1.2 s, on two busy cores
READ_COST = (8e-8, 7e-6)
#: bytes of memory a row read takes at the peak of reading, a byte of the file: Python's strings
#: and pandas' frames, the chunk being read and the copies the checks make (2,290,186 rows of
#: 98 bytes sampled from a 5.4 GB file of short texts peaked at 1.67 GB, 729 bytes a row, and
#: held 947 MB once read; `pipelines/benchmarks/make_short_texts.py`'s rows)
READ_MEMORY = 7.5


class FileSize(NamedTuple):
    """What a file of documents holds, at most, before it is read (`size_file`): ``rows`` (its
    lines but the header: a quoted text may span several), ``characters`` (its bytes, every
    column's), and the ``seconds`` reading it takes (`READ_COST`)."""

    rows: int
    characters: int
    seconds: float


def size_file(path) -> FileSize | None:
    """The size of a file (or a folder per class) of documents without parsing it: one pass
    counting its lines (a parquet file's metadata; a folder's files), which is cheap beside
    reading it. None where it cannot be sized (no such file, a type not read): reading it then
    says why.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.csv")
    >>> _ = open(path, "w").write("text,label\\na good film,pos\\na dull one,neg\\n")
    >>> size_file(path)[:2]
    (2, 42)
    """
    path = Path(path)
    try:
        if path.is_dir():
            files = [f for d in path.iterdir() if d.is_dir() and not d.name.startswith(".")
                     for f in d.iterdir() if f.is_file() and not f.name.startswith(".")]
            size = sum(f.stat().st_size for f in files)
            return FileSize(len(files), size, READ_COST[0] * size + READ_COST[1] * len(files))
        kind = file_format(path)
        if kind == "parquet":
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(path).metadata
            size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
            return FileSize(meta.num_rows, size, READ_COST[0] * size + READ_COST[1] * meta.num_rows)
        lines, size, last = 0, 0, b"\n"
        with opener(path)(path, "rb") as fh:
            while block := fh.read(1 << 20):
                lines, size, last = lines + block.count(b"\n"), size + len(block), block[-1:]
        lines += last != b"\n"  # a last line without its newline
        rows = max(lines - (kind != "jsonl"), 0)  # the header is no document
        return FileSize(rows, size, READ_COST[0] * size + READ_COST[1] * lines)
    except (OSError, ValueError):  # gone, unreadable, not a type read: reading it says which
        return None
