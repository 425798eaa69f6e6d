"""The interface of an embedding store (`EmbeddingCache`) and the in-process store (`MemoryCache`)."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

import numpy as np

__all__ = ["EmbeddingCache", "MemoryCache"]

_MEMORY_MAX_BYTES = int(os.environ.get("EMBEDKIT_MEMORY_CACHE_MAX_BYTES", 512 * 1024**2))


class EmbeddingCache:
    """Interface of a store: ``get_many(rep, keys) -> {key: record}``, ``put_many(rep, {key: record})``.

    A record is ``(array, tokens)``: a float array (a pooled vector ``(dim,)`` or a sequence's
    rows ``(length, dim)``) and the list of tokens (or None).
    """

    def __deepcopy__(self, memo):
        return self  # a store is a shared handle: clones of a representation share it

    def __copy__(self):
        return self

    def get_many(self, rep_key: str, keys: list[str]) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def put_many(self, rep_key: str, records: dict, label: str = "") -> None:  # pragma: no cover
        raise NotImplementedError

    def info(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def clear(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class MemoryCache(EmbeddingCache):
    """In-process LRU store bounded by ``max_bytes``; thread-safe, not shared between processes.

    Pickling it (e.g. to a ``GridSearchCV`` worker) gives an empty store of the same bound.

    Examples
    --------
    >>> c = MemoryCache(max_bytes=1000)
    >>> c.put_many("rep", {"k": (np.ones(3, np.float32), None)})
    >>> c.get_many("rep", ["k", "x"])["k"][0].tolist()
    [1.0, 1.0, 1.0]
    """

    def __init__(self, max_bytes: int = _MEMORY_MAX_BYTES):
        self.max_bytes = int(max_bytes)
        self._store: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"max_bytes": self.max_bytes}

    def __setstate__(self, state):
        self.__init__(state["max_bytes"])

    def __repr__(self) -> str:
        return f"MemoryCache(max_bytes={self.max_bytes})"

    def get_many(self, rep_key, keys):
        found = {}
        with self._lock:
            for k in keys:
                rec = self._store.get((rep_key, k))
                if rec is not None:
                    self._store.move_to_end((rep_key, k))
                    found[k] = rec
        return found

    def put_many(self, rep_key, records, label=""):
        with self._lock:
            for k, (arr, tokens) in records.items():
                key = (rep_key, k)
                old = self._store.pop(key, None)
                if old is not None:
                    self._bytes -= old[0].nbytes
                arr = np.array(arr, copy=True)
                arr.setflags(write=False)
                self._store[key] = (arr, tokens)
                self._bytes += arr.nbytes
            while self._bytes > self.max_bytes and self._store:
                _, (arr, _) = self._store.popitem(last=False)
                self._bytes -= arr.nbytes

    def info(self) -> dict:
        return {"kind": "memory", "entries": len(self._store), "bytes": self._bytes,
                "max_bytes": self.max_bytes}

    def clear(self) -> None:
        with self._lock:
            self._store.clear()
            self._bytes = 0
