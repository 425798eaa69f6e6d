"""Files on disk: the format a file's name says (`file_format`), and writing so that readers see
a whole file or folder or none: `atomic_path`, the temporary names it uses, and `WriteError`,
what a full disk or a file-size limit met while writing means. Every file or folder embedkit
writes goes through `atomic_path`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["FORMATS", "WriteError", "atomic_path", "file_format", "temporary_name"]

#: file name endings -> format (CSV, TSV and JSON Lines may be gzip-compressed)
FORMATS = {".csv": "csv", ".csv.gz": "csv", ".tsv": "tsv", ".tsv.gz": "tsv",
           ".jsonl": "jsonl", ".jsonl.gz": "jsonl", ".ndjson": "jsonl",
           ".parquet": "parquet", ".pq": "parquet"}


def file_format(path) -> str:
    """The format of ``path`` from its name: ``"csv"``, ``"tsv"``, ``"jsonl"`` or ``"parquet"``.

    Examples
    --------
    >>> file_format("reviews.tsv.gz")
    'tsv'
    """
    name = Path(path).name.lower()
    for ending, kind in FORMATS.items():
        if name.endswith(ending):
            return kind
    raise ValueError(f"{path}: unsupported file type; use .csv, .tsv, .jsonl (optionally .gz) "
                     "or .parquet.")


def temporary_name(path, suffix: str = "tmp") -> Path:
    """A hidden sibling of ``path`` for work in progress: ``.{name}.{pid}-{random}.{suffix}``
    (the process id tells a dead run's leftovers from a running one's)."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.{suffix}")


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` in one system call (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``); False where the system or the file system has no such call."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    call = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if call is None:
        return False
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    here, exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE
    if call(here, os.fsencode(a), here, os.fsencode(b), exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


#: what a write fault means, and what to do about it, by its ``errno``
_WRITE_FAULTS = {
    errno.ENOSPC: ("the disk is full (no space left on the device)",
                   "Free some space there, or write somewhere else"),
    errno.EDQUOT: ("your disk quota there is used up", "Free some of it, or write somewhere else"),
    errno.EFBIG: ("a file grew past the largest this process may write (the file-size limit, "
                  "`ulimit -f`, or the file system's own)",
                  "Raise the limit (`ulimit -f unlimited`), or write to another file system"),
    errno.EROFS: ("the file system is read-only", "Write somewhere else"),
}


class WriteError(OSError):
    """Writing ``path`` failed for want of room or permission to grow (a full disk, a quota, a
    file-size limit, a read-only file system); nothing was written there. ``errno`` is the
    fault's, the message says what it means and what to do."""

    def __init__(self, path, cause: OSError):
        what, fix = _WRITE_FAULTS[cause.errno]
        super().__init__(f"could not write {path}: {what} ([Errno {cause.errno}] "
                         f"{cause.strerror}). Nothing was written: {path} was left as it was. "
                         f"{fix}.")
        self.errno, self.strerror, self.filename = cause.errno, cause.strerror, str(path)

    def __str__(self) -> str:
        return self.args[0]


@contextlib.contextmanager
def atomic_path(path, on_replaced: Callable[[Path, Path], None] | None = None) -> Iterator[Path]:
    """A hidden temporary path next to ``path``, renamed to ``path`` when the block succeeds.

    Readers see the whole file (or folder) or none: on an error (or a crash) the temporary file
    or folder is removed and ``path`` is left as it was. The temporary name is
    ``.{name}.{pid}-{random}.tmp`` (`temporary_name`); the block creates the file or folder there.
    A folder replacing an existing folder is swapped with it in one system call where the system
    has one (Linux), so a kill at any moment leaves the old folder or the new one at ``path``;
    elsewhere the old one is moved aside first. ``on_replaced(old, new)`` is called with the old
    folder's temporary path and ``path`` after the swap, before the old folder is removed; a
    Ctrl-C or SIGTERM that comes during the swap and ``on_replaced`` takes effect after them
    (`embedkit._stopping.interrupts_held`). A full disk, a quota, a file-size limit or a
    read-only file system met in the block or the swap raise `WriteError`, which names ``path``
    (the outermost one, where blocks nest) and the fix.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text()
    'done'
    """
    from .._stopping import interrupts_held

    path = Path(path)
    tmp = temporary_name(path)
    try:
        try:
            yield tmp
            with interrupts_held():  # the swap and what follows it are one step: a Ctrl-C waits
                if tmp.is_dir() and path.is_dir() and not path.is_symlink():
                    if not _exchange(tmp, path):  # tmp now holds the old folder where it worked
                        old = temporary_name(path, "old")
                        os.replace(path, old)
                        try:
                            os.replace(tmp, path)
                        except BaseException:
                            os.replace(old, path)
                            raise
                        os.replace(old, tmp)
                    if on_replaced is not None:
                        on_replaced(tmp, path)
                else:
                    os.replace(tmp, path)  # atomic on POSIX
        except OSError as err:
            if getattr(err, "errno", None) in _WRITE_FAULTS:
                raise WriteError(path, err) from err
            raise
    finally:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
