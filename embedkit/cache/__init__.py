"""Embedding cache shared by grid-search candidates, folds and runs.

Every representation takes ``cache=``:

* ``None`` (default): no caching.
* ``"memory"``: one bounded in-process store (LRU by bytes). Each worker process of
  ``GridSearchCV(n_jobs=k)`` has its own, so only the documents a worker already encoded are hits.
* ``"disk"`` (``$EMBEDKIT_HOME/embeddings``) or a folder path (a ``pathlib.Path``, or a str with
  a path separator such as ``"./cache"``; a bare word such as ``"memroy"`` is refused as a typo):
  a SQLite database in WAL mode, safe for several threads and processes at once, bounded in size
  (least recently used entries are evicted), each entry checksummed so a corrupt entry is
  detected, dropped and recomputed, never returned.
* an `EmbeddingCache` object (`MemoryCache` / `DiskCache`), to choose the size bound.

A cache never changes results, and its faults never stop a transform: a database file that
SQLite reports as corrupted is moved aside (``embeddings.sqlite.corrupt-<time>``) and rebuilt,
with one warning naming the file; a cache the process may not write to (permissions, read-only
file system) serves its entries and stores nothing new, with one warning; `DiskCache.clear`
deletes a corrupted file outright.

The key of an entry is ``(representation fingerprint, document hash)``. The fingerprint
(`fingerprint`) covers the class, the parameters that change vectors (not ``cache``,
``batch_size``, ``device``, ``verbose``, thread counts, nor anything a class lists in
``_cache_exclude``), the identity of pretrained weights (a representation's
``_cache_identity()``, e.g. the digest of a safetensors file) and, for representations trained on
data, a digest of the fitted state. Only documents missing from the cache are encoded; the
results are assembled in input order.

Pooled arrays and `Sequences` rows are cached. Sparse output (bag-of-words TF-IDF) and
`TokenIds` depend on a fitted vocabulary as a whole and bypass the cache: they are computed for
the unique documents of the call and nothing is stored.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..sequences import Sequences
from ._disk import DEFAULT_MAX_BYTES, DiskCache, default_dir
from ._keys import NEUTRAL_PARAMS, doc_keys, fingerprint, state_digest
from ._memory import EmbeddingCache, MemoryCache

__all__ = ["EmbeddingCache", "MemoryCache", "DiskCache", "get_cache", "fingerprint",
           "cached_encode", "store_encoded", "cache_spec_problem", "default_dir", "DEFAULT_MAX_BYTES",
           "NEUTRAL_PARAMS", "state_digest"]

_MEMORY: MemoryCache | None = None
_DISKS: dict[str, DiskCache] = {}
_REGISTRY_LOCK = threading.Lock()
_WORDS = ("memory", "disk")


def cache_spec_problem(spec) -> str | None:
    """What is wrong with a ``cache=`` value, or None when it is valid.

    Valid: None, ``"memory"``, ``"disk"``, an `EmbeddingCache`, a ``pathlib.Path`` (any
    ``os.PathLike``) or a str containing a path separator (``"./cache"``, ``"~/cache"``) that is
    not an existing file. A bare word is taken for a typo, not a folder name.

    Examples
    --------
    >>> print(cache_spec_problem("memroy"))  # doctest: +NORMALIZE_WHITESPACE
    cache='memroy' is neither 'memory', 'disk' nor a folder path. Did you mean 'memory'? To use
    a folder of that name, pass './memroy' or pathlib.Path('memroy').
    """
    if spec is None or isinstance(spec, EmbeddingCache) or (isinstance(spec, str) and spec in _WORDS):
        return None
    if isinstance(spec, str) and not any(sep and sep in spec for sep in ("/", os.sep, os.altsep)):
        from .._suggest import did_you_mean

        return (f"cache={spec!r} is neither 'memory', 'disk' nor a folder path."
                f"{did_you_mean(spec, _WORDS)} To use a "
                f"folder of that name, pass './{spec}' or pathlib.Path({spec!r}).")
    if isinstance(spec, (str, os.PathLike)):
        path = Path(spec).expanduser()
        if path.exists() and not path.is_dir():
            return (f"cache={str(spec)!r} is a file; pass a directory for the disk cache, "
                    "'memory', or None.")
        return None
    return (f"cache={spec!r}; use None, 'memory', 'disk', a directory path, or an "
            "embedkit.cache.MemoryCache / DiskCache object.")


def get_cache(spec) -> EmbeddingCache | None:
    """Resolve a ``cache=`` parameter to a store (one per process per directory).

    Raises a ValueError naming the fix for a value `cache_spec_problem` refuses.

    Examples
    --------
    >>> get_cache(None) is None, type(get_cache("memory")).__name__
    (True, 'MemoryCache')
    """
    global _MEMORY
    problem = cache_spec_problem(spec)
    if problem:
        raise ValueError(problem)
    if spec is None or isinstance(spec, EmbeddingCache):
        return spec
    if spec == "memory":
        with _REGISTRY_LOCK:
            if _MEMORY is None:
                _MEMORY = MemoryCache()
            return _MEMORY
    path = default_dir() if spec == "disk" else Path(spec).expanduser()
    key = str(path.resolve())
    with _REGISTRY_LOCK:
        if key not in _DISKS:
            _DISKS[key] = DiskCache(path)
        return _DISKS[key]


# ---------------------------------------------------------------------------------------------
# the hook used by Representation._encode
# ---------------------------------------------------------------------------------------------

def _records(out, n: int) -> list | None:
    """Split an output into per-document records, or None when the form is not cacheable."""
    if isinstance(out, np.ndarray) and out.ndim == 2:
        return [(out[i], None) for i in range(n)]
    if isinstance(out, Sequences):
        tokens = out.tokens
        return [(out.values[i, : int(out.lengths[i])],
                 None if tokens is None else list(tokens[i])) for i in range(n)]
    return None


def _assemble(records: list, like) -> Any:
    if like == "pooled":
        return np.stack([r[0] for r in records]).astype(np.float32, copy=False)
    tokens = None if any(r[1] is None for r in records) else [r[1] for r in records]
    return Sequences.from_rows([r[0] for r in records], tokens=tokens)


def cached_encode(rep, docs: list[str]):
    """Encode ``docs`` with ``rep._transform``, reading and filling ``rep.cache``.

    Only the unique documents missing from the cache are passed to ``_transform``; the result
    keeps the input order.
    """
    store = get_cache(rep.cache)
    if not docs:
        return rep._transform(docs)
    rep_key = fingerprint(rep)
    keys = doc_keys(docs)
    unique = list(dict.fromkeys(keys))
    hits = store.get_many(rep_key, unique)
    missing = [k for k in unique if k not in hits]
    if missing:
        first = {}
        for k, d in zip(keys, docs, strict=True):
            first.setdefault(k, d)
        out = rep._transform([first[k] for k in missing])
        records = _records(out, len(missing))
        if records is None:  # sparse / ids: not cacheable, computed for the unique docs
            if hits:  # cannot happen for one fingerprint (nothing is stored), but stay exact
                out = rep._transform(list(dict.fromkeys(docs)))
                missing = unique
            position = {k: i for i, k in enumerate(missing)}
            rows = np.array([position[k] for k in keys], dtype=np.intp)
            if len(missing) == len(keys) and (rows == np.arange(len(keys))).all():
                return out
            return out[rows]
        fresh = dict(zip(missing, records, strict=True))
        store.put_many(rep_key, fresh, label=_label(rep))
        hits.update(fresh)
    ordered = [hits[k] for k in keys]
    return _assemble(ordered, "sequence" if ordered[0][0].ndim == 2 else "pooled")


def store_encoded(rep, docs: list[str], out) -> None:
    """Keep ``out``, ``rep``'s output for ``docs`` computed elsewhere (a Dask cluster's
    workers), in ``rep.cache`` as `cached_encode` would have (nothing for an uncacheable form)."""
    records = _records(out, len(docs))
    if rep.cache is None or records is None:
        return
    get_cache(rep.cache).put_many(fingerprint(rep), dict(zip(doc_keys(docs), records, strict=True)),
                                  label=_label(rep))


def _label(rep) -> str:
    try:
        from sklearn.base import clone

        text = repr(clone(rep).set_params(cache=None))
    except Exception:  # pragma: no cover - repr must never break caching
        text = type(rep).__name__
    return " ".join(text.split())[:200]
