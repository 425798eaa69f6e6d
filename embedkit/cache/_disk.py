"""The disk store (`DiskCache`): one SQLite database in WAL mode per folder, process-safe,
size-bounded (LRU eviction), checksummed, and its fault handling (corrupted or read-only files).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from ._memory import EmbeddingCache

__all__ = ["DEFAULT_MAX_BYTES", "DiskCache", "default_dir"]

#: default size bound of a cache (bytes of stored vectors)
DEFAULT_MAX_BYTES = int(os.environ.get("EMBEDKIT_CACHE_MAX_BYTES", 2 * 1024**3))


def default_dir() -> Path:
    """The disk cache folder used for ``cache="disk"``: ``$EMBEDKIT_HOME/embeddings``."""
    from ..storage.resources import home

    return home() / "embeddings"


def _serialize(arr: np.ndarray, tokens) -> bytes:
    arr = np.ascontiguousarray(arr)
    head = json.dumps({"dtype": arr.dtype.str, "shape": list(arr.shape), "tokens": tokens},
                      ensure_ascii=False).encode()
    return len(head).to_bytes(4, "little") + head + arr.tobytes()


def _deserialize(blob: bytes):
    n = int.from_bytes(blob[:4], "little")
    head = json.loads(blob[4:4 + n].decode())
    arr = np.frombuffer(blob[4 + n:], dtype=np.dtype(head["dtype"])).reshape(head["shape"])
    return arr, head["tokens"]


def _checksum(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=16).digest()


def _initialise(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA busy_timeout=60000")
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(
        """
        CREATE TABLE IF NOT EXISTS entries (
            rep TEXT NOT NULL, doc TEXT NOT NULL, value BLOB NOT NULL,
            checksum BLOB NOT NULL, size INTEGER NOT NULL, atime REAL NOT NULL,
            PRIMARY KEY (rep, doc)) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS entries_atime ON entries(atime);
        CREATE TABLE IF NOT EXISTS reps (rep TEXT PRIMARY KEY, label TEXT, created REAL);
        """
    )


def _retry_busy(operation, seconds: float = 60.0):
    """Run ``operation()``, retrying while SQLite says the database is locked or busy.

    Switching a new database to WAL needs an exclusive lock, and SQLite answers a second process
    doing the same at that moment with "database is locked" at once, without waiting on its busy
    timeout (e.g. two GridSearchCV workers opening a fresh cache together).
    """
    deadline = time.monotonic() + seconds
    delay = 0.01
    while True:
        try:
            return operation()
        except sqlite3.OperationalError as err:
            text = str(err).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


class DiskCache(EmbeddingCache):
    """SQLite (WAL) store in ``directory``: process-safe, size-bounded (LRU eviction), checksummed.

    Faults are handled, never passed on to a transform: a database SQLite reports as corrupted
    is moved aside and rebuilt (one warning naming the file), and a database this process may
    not write to is read only (one warning): hits are served, new entries and access times are
    not stored.

    Parameters
    ----------
    directory : str or Path
        Folder of the database file ``embeddings.sqlite`` (created if missing).
    max_bytes : int, default=DEFAULT_MAX_BYTES (2 GiB, or ``$EMBEDKIT_CACHE_MAX_BYTES``)
        When stored vectors exceed this, the least recently used entries are deleted down to
        90% of it.

    Examples
    --------
    >>> import tempfile
    >>> c = DiskCache(tempfile.mkdtemp())
    >>> c.put_many("rep", {"k": (np.arange(3, dtype=np.float32), None)})
    >>> c.get_many("rep", ["k"])["k"][0].tolist()
    [0.0, 1.0, 2.0]
    """

    FILENAME = "embeddings.sqlite"

    def __init__(self, directory, max_bytes: int = DEFAULT_MAX_BYTES):
        self.directory = Path(directory).expanduser()
        self.max_bytes = int(max_bytes)
        self._conn = None
        self._pid = None
        self._inode = None
        self._readonly = False
        self._ignored = False  # corrupted and read-only: neither readable nor replaceable
        self._lock = threading.RLock()

    def __getstate__(self):
        return {"directory": str(self.directory), "max_bytes": self.max_bytes}

    def __setstate__(self, state):
        self.__init__(state["directory"], state["max_bytes"])

    def __repr__(self) -> str:
        return f"DiskCache({str(self.directory)!r}, max_bytes={self.max_bytes})"

    @property
    def path(self) -> Path:
        return self.directory / self.FILENAME

    @property
    def readonly(self) -> bool:
        """True once this process found it may not write the database (it then only reads)."""
        return self._readonly

    # -- connection and faults ----------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection | None:
        """The open connection (None: read-only and no database file to read)."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        if not self._readonly and not self._writable():
            self._go_readonly("the folder or the database file is not writable")
        if self._readonly:
            if not self.path.exists():
                return None
            # immutable: no locks, no -shm/-wal files (which a read-only folder cannot hold)
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro&immutable=1", uri=True,
                                   timeout=60, check_same_thread=False, isolation_level=None)
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # a corrupt file fails here
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False,
                                   isolation_level=None)
            try:
                _retry_busy(lambda: _initialise(conn))
            except BaseException:
                conn.close()
                raise
        self._inode = _inode(self.path)
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _writable(self) -> bool:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            return False
        return os.access(self.directory, os.W_OK) and (
            not self.path.exists() or os.access(self.path, os.W_OK))

    def close(self) -> None:
        """Close this process's connection (the next operation reopens it)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = self._pid = None

    def _go_readonly(self, why: str) -> None:
        self.close()
        self._readonly = True
        _warn_once(self.path, "read-only", f"embedkit cache {self.path} is read-only ({why}): "
                   "cached vectors are served from it, new ones are not stored. Make the folder "
                   "writable, or pass another cache folder, to store them again.")

    def _recover(self, err: sqlite3.DatabaseError) -> bool:
        """Handle a database fault; True when the operation can be retried."""
        if _is_readonly_error(err) and not self._readonly:
            self._go_readonly(str(err))
            return True
        if not _is_corrupt(err):
            return False
        opened = self._inode
        self.close()
        if self._readonly:  # cannot move it aside: read nothing from it
            _warn_once(self.path, "corrupt", f"embedkit cache {self.path} is corrupted ({err}) "
                       "and read-only; it is ignored: every document is encoded afresh.")
            self._ignored = True
            return True
        current = _inode(self.path)
        if current is not None and (opened is None or current == opened):  # not yet replaced
            aside = self.path.with_name(f"{self.FILENAME}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}"
                                        f"-{os.getpid()}")
            os.replace(self.path, aside)
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{self.path}{suffix}")
            _warn_once(self.path, "corrupt", f"embedkit cache {self.path} is corrupted ({err}); "
                       f"moved it aside to {aside.name} and started an empty cache there. Results "
                       "are unaffected (missing vectors are recomputed); delete the moved file "
                       "once you no longer need it, or run `embedkit cache clear`.")
        return True

    def _run(self, operation, default=None):
        """``operation(conn)`` under the lock, recovering from database faults (`_recover`)."""
        with self._lock:
            for attempt in range(3):  # e.g. read-only found first, then corruption
                if self._ignored:
                    return default
                try:
                    conn = self._connect()
                    return default if conn is None else operation(conn)
                except sqlite3.DatabaseError as err:
                    if attempt == 2 or not self._recover(err):
                        raise
            return default  # pragma: no cover - the loop returns or raises

    # -- the store ----------------------------------------------------------------------------
    def get_many(self, rep_key, keys):
        def read(conn):
            found, corrupt = {}, []
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    "SELECT doc, CAST(value AS BLOB), CAST(checksum AS BLOB) FROM entries "
                    f"WHERE rep=? AND doc IN ({marks})",
                    [rep_key, *chunk]).fetchall()
                for doc, blob, checksum in rows:
                    try:
                        if _checksum(blob) != checksum:
                            raise ValueError("checksum mismatch")
                        found[doc] = _deserialize(blob)
                    except Exception:  # corrupt entry: drop it, recompute the document
                        corrupt.append(doc)
            if (found or corrupt) and not self._readonly:
                now = time.time()
                with _transaction(conn):
                    conn.executemany("UPDATE entries SET atime=? WHERE rep=? AND doc=?",
                                     [(now, rep_key, d) for d in found])
                    conn.executemany("DELETE FROM entries WHERE rep=? AND doc=?",
                                     [(rep_key, d) for d in corrupt])
            return found

        return self._run(read, default={})

    def put_many(self, rep_key, records, label=""):
        if not records:
            return
        now = time.time()
        rows = []
        for doc, (arr, tokens) in records.items():
            blob = _serialize(arr, tokens)
            rows.append((rep_key, doc, blob, _checksum(blob), len(blob), now))

        def write(conn):
            if self._readonly:
                return
            with _transaction(conn):
                conn.execute("INSERT OR IGNORE INTO reps VALUES (?, ?, ?)", (rep_key, label, now))
                conn.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?)", rows)
                total = conn.execute("SELECT COALESCE(SUM(size), 0) FROM entries").fetchone()[0]
                if total > self.max_bytes:
                    self._evict(conn, total)

        self._run(write)

    def _evict(self, conn, total: int) -> None:
        target = int(self.max_bytes * 0.9)
        cursor = conn.execute("SELECT rep, doc, size FROM entries ORDER BY atime")
        doomed = []
        for rep, doc, size in cursor:
            if total <= target:
                break
            doomed.append((rep, doc))
            total -= size
        conn.executemany("DELETE FROM entries WHERE rep=? AND doc=?", doomed)

    def info(self) -> dict:
        def read(conn):
            entries, size = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM entries").fetchone()
            reps = conn.execute(
                "SELECT e.rep, COALESCE(r.label, ''), COUNT(*), SUM(e.size) FROM entries e "
                "LEFT JOIN reps r ON r.rep = e.rep GROUP BY e.rep ORDER BY 4 DESC").fetchall()
            return entries, size, reps

        entries, size, reps = self._run(read, default=(0, 0, []))
        file_bytes = sum(p.stat().st_size for p in self.directory.glob(self.FILENAME + "*"))
        return {"kind": "disk", "path": str(self.path), "entries": entries, "bytes": size,
                "file_bytes": file_bytes, "max_bytes": self.max_bytes, "readonly": self._readonly,
                "representations": [{"fingerprint": r, "label": lab, "entries": n, "bytes": b}
                                    for r, lab, n, b in reps]}

    def clear(self) -> int:
        """Delete every entry and return how many there were.

        A database SQLite reports as corrupted is deleted whole (its entries cannot be counted:
        0 is returned), as are corrupted files moved aside earlier
        (``embeddings.sqlite.corrupt-*``). A read-only cache cannot be cleared (ValueError).
        """
        with self._lock:
            if self._readonly or not self._writable():
                raise ValueError(f"cannot clear the embedding cache {self.path}: this process may "
                                 "not write to it; make the folder writable first.")
            try:
                conn = self._connect()
                (n,) = conn.execute("SELECT COUNT(*) FROM entries").fetchone()
                conn.execute("DELETE FROM entries")
                conn.execute("DELETE FROM reps")
                conn.execute("VACUUM")
            except sqlite3.DatabaseError as err:
                if not _is_corrupt(err):
                    raise
                self.close()
                n = 0
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(f"{self.path}{suffix}")
            for aside in self.directory.glob(self.FILENAME + ".corrupt-*"):
                aside.unlink()
            return int(n)


@contextlib.contextmanager
def _transaction(conn):
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _sqlite_error_name(err: sqlite3.Error) -> str:
    return getattr(err, "sqlite_errorname", "") or ""  # Python >= 3.11


def _is_corrupt(err: sqlite3.Error) -> bool:
    text = str(err).lower()
    return (_sqlite_error_name(err).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
            or "malformed" in text or "not a database" in text)


def _is_readonly_error(err: sqlite3.Error) -> bool:
    return _sqlite_error_name(err).startswith("SQLITE_READONLY") or "readonly" in str(err).lower()


_WARNED: set[tuple[str, str]] = set()


def _warn_once(path: Path, kind: str, message: str) -> None:
    """One warning per cache file and kind of fault per process."""
    key = (str(path), kind)
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=4)

