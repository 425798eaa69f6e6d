"""Fingerprints and document keys: what identifies an entry of the embedding cache.

The key of an entry is ``(fingerprint(rep), document hash)``; `fingerprint` covers the class, the
parameters that change vectors (not those in `NEUTRAL_PARAMS` or a class's ``_cache_exclude``)
and the identity of the weights or fitted state (`state_digest`).
"""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["NEUTRAL_PARAMS", "doc_keys", "fingerprint", "state_digest"]

#: parameters that never change vectors, excluded from every fingerprint
NEUTRAL_PARAMS = frozenset({
    "cache", "batch_size", "max_tokens_per_batch", "device", "verbose", "num_threads", "n_jobs",
    "workers", "progress",
})


def _stable(value: Any) -> Any:
    """A JSON-able, process-independent description of a parameter value."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_stable(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", sorted((str(k), _stable(v)) for k, v in value.items())]
    if isinstance(value, (set, frozenset)):
        return ["set", sorted(repr(_stable(v)) for v in value)]
    if hasattr(value, "get_params"):
        return ["estimator", fingerprint(value, fitted=False)]
    if isinstance(value, np.ndarray):
        return ["ndarray", value.dtype.str, list(value.shape),
                hashlib.blake2b(np.ascontiguousarray(value).tobytes(), digest_size=16).hexdigest()]
    return ["object", type(value).__module__, type(value).__qualname__, repr(value)]


def state_digest(obj: Any) -> str:
    """Digest of a picklable object (used for fitted state); stable within a process run."""
    digest = hashlib.blake2b(digest_size=16)

    class _Writer:
        def write(self, data):
            digest.update(data)

    pickle.Pickler(_Writer(), protocol=5).dump(obj)
    return digest.hexdigest()


def fingerprint(rep, *, fitted: bool = True) -> str:
    """Hex digest that identifies what ``rep`` computes (see the module docstring).

    Parameters
    ----------
    rep : Representation
    fitted : bool, default=True
        Include the weights identity / fitted-state digest (``rep._cache_identity()``).

    Examples
    --------
    >>> from embedkit import TfidfEmbedder
    >>> fingerprint(TfidfEmbedder(), fitted=False) == fingerprint(TfidfEmbedder(cache="memory"), fitted=False)
    True
    """
    exclude = NEUTRAL_PARAMS | frozenset(getattr(rep, "_cache_exclude", ()))
    params = {k: _stable(v) for k, v in rep.get_params(deep=False).items() if k not in exclude}
    desc = {"class": f"{type(rep).__module__}.{type(rep).__qualname__}", "params": params}
    if fitted:
        desc["identity"] = _stable(rep._cache_identity())
    text = json.dumps(desc, sort_keys=True, default=repr)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def doc_keys(docs: list[str]) -> list[str]:
    """Hash of each document: the second half of an entry's key."""
    return [hashlib.blake2b(d.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
            for d in docs]
