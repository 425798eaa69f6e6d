"""Files on disk: the format a file's name says (`file_format`), and writing so that readers see
a whole file or folder or none: `atomic_path`, the temporary names it uses, and `WriteError`,
what a full disk or a file-size limit met while writing means. Every file or folder embedkit
writes goes through `atomic_path`.

A folder is published one way (`publish`): built under a temporary sibling, swapped in at one
rename; what a killed process left beside it is swept by the next publication (`sweep`), never
while that process lives, and never when it holds a file found nowhere else. The output folders
of tune (`embedkit.storage.outputs`), the fetched resources and the distilled tables
(`embedkit.storage.fetch`) and the ONNX exports are all published so.
"""

from __future__ import annotations

import contextlib
import errno
import filecmp
import glob
import os
import re
import shutil
import sys
import uuid
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

__all__ = ["FORMATS", "WriteError", "atomic_path", "file_format", "opener", "publish", "serializer_faults",
           "sweep", "temporary_name"]

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


def opener(path) -> Callable:
    """What opens ``path`` as its name says it is stored: `gzip.open` for a ``.gz`` name, else
    `open` (same arguments)."""
    import gzip

    return gzip.open if Path(path).name.lower().endswith(".gz") else open


def temporary_name(path, suffix: str = "tmp") -> Path:
    """A hidden sibling of ``path`` for work in progress: ``.{name}.{pid}-{random}.{suffix}``
    (the process id tells a dead run's leftovers from a running one's, `sweep`)."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.{suffix}")


#: a `temporary_name`: what it is the temporary of, the process that made it, what it holds
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)-[0-9a-f]+\.(?P<kind>[a-z]+)")


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


#: a write fault as a library that writes files itself says it: Rust's ``io::Error`` (safetensors,
#: tokenizers: ``File too large (os error 27)``), numpy's short write (``8000 requested and 109
#: written``, no errno)
_OS_ERROR = re.compile(r"\(os error (\d+)\)")
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")


def _short_write_cause(where: Path) -> int | None:
    """The errno of a short write under ``where`` that its library did not say: a file there at
    this process's file-size limit (EFBIG), or a disk with no room left (ENOSPC)."""
    try:
        import resource
    except ImportError:  # not a POSIX system: no file-size limit
        resource = None
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0] if resource else -1
    if resource and limit != resource.RLIM_INFINITY:
        files = [where] if where.is_file() else where.rglob("*") if where.is_dir() else []
        if any(p.is_file() and p.stat().st_size >= limit for p in files):
            return errno.EFBIG
    with contextlib.suppress(OSError):
        room = os.statvfs(where if where.exists() else where.parent)
        if room.f_bavail * room.f_frsize < 1 << 20:
            return errno.ENOSPC
    return None


@contextlib.contextmanager
def serializer_faults(where) -> Iterator[None]:
    """Around a library's own writing under ``where`` (inside an `atomic_path` block): a write
    fault it reports as its own exception is raised as the `OSError` it stands for, so the block
    ends in `WriteError` as any other write does. Read are safetensors' and tokenizers'
    ``... (os error 27)``, and numpy's short write without an errno (``np.save``), whose cause
    is read from ``where`` (a file at the file-size limit, or a full disk); any other exception
    passes unchanged.

    Examples
    --------
    >>> import tempfile
    >>> try:
    ...     with serializer_faults(tempfile.gettempdir()):
    ...         raise RuntimeError("Error while serializing: I/O error: File too large (os error 27)")
    ... except OSError as err:
    ...     print(err.errno, err.strerror)
    27 File too large
    """
    try:
        yield
    except Exception as err:
        code = getattr(err, "errno", None)
        if code in _WRITE_FAULTS:
            raise
        found = _OS_ERROR.search(str(err))
        if found:
            code = int(found[1])
        elif isinstance(err, OSError) and _SHORT_WRITE.search(str(err)):
            code = _short_write_cause(Path(where))
        if code not in _WRITE_FAULTS:
            raise
        raise OSError(code, os.strerror(code)) from err


# -- publishing a folder, and sweeping what killed processes left -------------------------------
def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (another user's included)."""
    import psutil

    try:
        return psutil.pid_exists(pid)
    except OverflowError:  # past what a process id can be: none has it
        return False


def _leftovers(target: Path) -> list[tuple[Path, str]]:
    """``(path, kind)`` of the temporaries of ``target`` (`temporary_name`) whose process is dead."""
    found = []
    for sibling in target.parent.glob(f".{glob.escape(target.name)}.*"):
        match = _TEMPORARY.fullmatch(sibling.name)
        if match and match["name"] == target.name and not _alive(int(match["pid"])):
            found.append((sibling, match["kind"]))
    return found


def _only_copies(leftover: Path, target: Path, ours: Collection[str] | None) -> bool:
    """Whether removing the folder ``leftover`` loses nothing: each file in it is under an entry
    named in ``ours`` (or a temporary of one), or is also at its place in ``target`` (the same
    file, or the same bytes). ``ours`` None: every file is."""
    if ours is None:
        return True
    for file in leftover.rglob("*"):
        if file.is_dir() and not file.is_symlink():
            continue
        rel = file.relative_to(leftover)
        top = rel.parts[0]
        temporary = _TEMPORARY.fullmatch(top)
        if top in ours or (temporary and temporary["name"] in ours):
            continue
        twin = target / rel
        if file.is_symlink() or not twin.is_file():
            return False
        if not (os.path.samefile(file, twin) or filecmp.cmp(file, twin, shallow=False)):
            return False
    return True


def sweep(target, ours: Collection[str] | None = None) -> None:
    """Clear away what processes that died while writing ``target`` left beside it.

    Their temporaries (`temporary_name`) are removed, unless one holds a file found nowhere
    else: a file is disposable when the entry it is under is named in ``ours`` (what the writer
    itself writes there; None: every file, as in a cache that is built again) or is a
    temporary of such an entry, or when ``target`` holds it too at the same place (the same
    file, or the same bytes). A folder that an interrupted swap had moved aside (on systems
    without an atomic exchange, `atomic_path`) is put back first where ``target`` is missing.
    The temporaries of a live process are never touched.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out"
    >>> left = target.with_name(".out.4206649-0a1b.tmp")  # past Linux's largest process id
    >>> left.mkdir()
    >>> sweep(target)
    >>> left.exists()
    False
    """
    target = Path(target)
    leftovers = _leftovers(target)
    aside = [path for path, kind in leftovers if kind == "old" and path.is_dir()]
    if aside and not os.path.lexists(target):
        back = max(aside, key=lambda path: path.stat().st_mtime)
        os.replace(back, target)
        leftovers = [(path, kind) for path, kind in leftovers if path != back]
    for leftover, _ in leftovers:
        if leftover.is_dir() and not leftover.is_symlink():
            if _only_copies(leftover, target, ours):
                shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


class _Kept(Exception):
    """Another process published a folder that will do while this one built its own."""


def publish(folder, build: Callable[[Path], object], *, reuse: Callable[[Path], bool] | None = None,
            ours: Collection[str] | None = None,
            on_replaced: Callable[[Path, Path], None] | None = None) -> Path:
    """Publish a folder: ``build(tmp)`` fills a new temporary sibling, swapped in at one rename.

    The one way a folder is published. ``build`` fills the empty folder it is given, which
    `atomic_path` then swaps in at ``folder``: readers, and a kill at any moment, find the old
    folder or the new one, never part of one. An error in ``build`` leaves ``folder`` as it was
    and no temporary. What killed processes left beside ``folder`` is swept first (`sweep`:
    never a live process's temporaries, nor one holding a file found nowhere else).

    Parameters
    ----------
    folder : str or Path
    build : callable
        ``build(tmp)`` writes the folder's content into the empty folder ``tmp``.
    reuse : callable or None, default=None
        For a cache: whether a folder found at ``folder`` will do (e.g. its checksums hold).
        One that will is kept: nothing is built, or, when another process published it while
        this one built, the one built is dropped, so that two processes publishing at once
        end with one complete copy. One that will not is replaced. None: always replace.
    ours : collection of str or None, default=None
        The entries ``build`` writes, for `sweep`; None: every file of a leftover is ours.
    on_replaced : callable or None, default=None
        As `atomic_path`: called with the old folder and the new one after the swap.

    Returns
    -------
    Path
        ``folder``, published.

    Examples
    --------
    >>> from tempfile import mkdtemp
    >>> out = Path(mkdtemp(), "out")
    >>> _ = publish(out, lambda tmp: (tmp / "a.txt").write_text("first"))
    >>> _ = publish(out, lambda tmp: (tmp / "b.txt").write_text("second"))
    >>> [p.name for p in out.iterdir()], [p.name for p in out.parent.iterdir()]
    (['b.txt'], ['out'])
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    sweep(folder, ours)
    if reuse is not None and reuse(folder):
        return folder
    built = False
    try:
        with atomic_path(folder, on_replaced=on_replaced) as tmp:
            tmp.mkdir()
            build(tmp)
            built = True
            if reuse is not None and reuse(folder):
                raise _Kept
    except _Kept:
        pass
    except OSError:  # the rename met a folder another process published meanwhile
        if not (built and reuse is not None and reuse(folder)):
            raise
    return folder
