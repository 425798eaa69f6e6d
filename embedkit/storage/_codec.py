"""Object trees as JSON nodes plus ``.npy`` arrays: the encoding inside a model folder.

`Writer` turns a fitted estimator into JSON (each object as its trusted type name and its
state, arrays as ``.npy`` files, class-owned files under ``objects/``); `Reader` rebuilds it,
resolving only trusted names and never unpickling. `embedkit.storage.persist` owns the folder around
them: the manifest, the digests, the trusted lists and the atomic write.
"""

from __future__ import annotations

import importlib
import os
from collections import OrderedDict, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Reader", "UntrustedTypeError", "Writer"]


class UntrustedTypeError(ValueError):
    """A model folder (or an object being saved) names a type outside the trusted list."""


# -------------------------------------------------------------------------------------------
# names <-> objects
# -------------------------------------------------------------------------------------------
def _resolve(name: str):
    """The object called ``name`` (``module.attr``), importing the longest importable module."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


_NAMES: dict[int, tuple[Any, str]] = {}  # id -> (object, trusted name), a look-up cache


def _name_of(obj, trusted: frozenset[str], what: str, where: str) -> str:
    """The trusted name ``obj`` (a class or function) is saved under, or a clear error."""
    known = _NAMES.get(id(obj))
    if known is not None and known[0] is obj and known[1] in trusted:
        return known[1]
    module = getattr(obj, "__module__", None) or ("numpy" if type(obj).__name__ == "ufunc" else "")
    qual = getattr(obj, "__qualname__", getattr(obj, "__name__", type(obj).__name__))
    tail = qual.rsplit(".", 1)[-1]
    for name in [f"{module}.{qual}", *sorted(n for n in trusted if n.rsplit(".", 1)[-1] == tail)]:
        if name in trusted:
            try:
                if _resolve(name) is obj:
                    _NAMES[id(obj)] = (obj, name)
                    return name
            except (ImportError, AttributeError):
                continue
    raise UntrustedTypeError(
        f"cannot save {where}: {what} {module}.{qual} is not in embedkit's trusted list, so "
        "embedkit.load would refuse it. Use a trusted step (see embedkit.storage.persist.TRUSTED_TYPES "
        "and TRUSTED_FUNCTIONS) or, for your own class, pass trusted=[its name] to save and load."
    )


# -------------------------------------------------------------------------------------------
# writing
# -------------------------------------------------------------------------------------------
class Writer:
    """Encodes an object tree into JSON nodes, writing arrays and class-owned files under ``root``."""

    def __init__(self, root: Path, trusted: frozenset[str]):
        self.root = root
        self.trusted = trusted
        self.memo: dict[int, int] = {}  # id(object or array) -> reference number
        self.keep: list = []  # keeps encoded objects alive so their ids stay unique
        self.n_arrays = 0

    def _array_file(self, array: np.ndarray) -> str:
        rel = f"arrays/{self.n_arrays}.npy"
        self.n_arrays += 1
        (self.root / "arrays").mkdir(exist_ok=True)
        np.save(self.root / rel, np.ascontiguousarray(array), allow_pickle=False)
        return rel

    def _memo(self, obj) -> tuple[int, bool]:
        ref = self.memo.get(id(obj))
        if ref is not None:
            return ref, True
        ref = self.memo[id(obj)] = len(self.memo)
        self.keep.append(obj)
        return ref, False

    def encode(self, obj, where: str):
        import scipy.sparse as sp

        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int) and type(obj) is int:
            return obj
        if type(obj) is float:
            return obj
        if isinstance(obj, np.generic):
            if obj.dtype.kind not in "biufcUS?":
                raise UntrustedTypeError(f"cannot save {where}: numpy scalar of dtype {obj.dtype}.")
            value = obj.item()
            if isinstance(value, complex):
                value = [value.real, value.imag]
            elif isinstance(value, bytes):
                value = value.decode("latin-1")
            return {"scalar": value, "dtype": obj.dtype.str}
        if isinstance(obj, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, tuple) and type(obj) is tuple:
            return {"tuple": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if type(obj) is slice:  # e.g. a ColumnTransformer's output_indices_
            return {"slice": [self.encode(v, f"{where}.slice") for v in
                              (obj.start, obj.stop, obj.step)]}
        if isinstance(obj, (set, frozenset)):
            values = sorted(obj, key=repr)
            return {"set": [self.encode(v, f"{where}{{}}") for v in values],
                    "frozen": isinstance(obj, frozenset)}
        if isinstance(obj, np.ndarray):
            ref, seen = self._memo(obj)
            if seen:
                return {"ref": ref}
            if obj.dtype.kind == "O":
                return {"id": ref, "object_array": [self.encode(v, f"{where}[{i}]") for i, v in
                                                   enumerate(obj.ravel().tolist())],
                        "shape": list(obj.shape)}
            if obj.dtype.kind not in "biufcUS" or obj.dtype.fields is not None:
                raise UntrustedTypeError(f"cannot save {where}: array of dtype {obj.dtype}.")
            return {"id": ref, "array": self._array_file(obj)}
        if isinstance(obj, np.dtype):
            if obj.fields is not None or obj.kind == "O":
                raise UntrustedTypeError(f"cannot save {where}: dtype {obj}.")
            return {"dtype": obj.str}
        if sp.issparse(obj):
            fmt = obj.format if obj.format in ("csr", "csc") else "csr"
            m = obj.asformat(fmt)
            kind = f"{fmt}_{'array' if isinstance(obj, sp.sparray) else 'matrix'}"
            return {"sparse": kind, "shape": list(m.shape),
                    **{k: self.encode(getattr(m, k), f"{where}.{k}")
                       for k in ("data", "indices", "indptr")}}
        if isinstance(obj, dict):
            return self._dict(obj, where)
        if isinstance(obj, os.PathLike):
            return {"path": os.fspath(obj)}
        if isinstance(obj, type) or callable(obj) and not hasattr(obj, "__dict__") \
                or type(obj).__name__ in ("function", "builtin_function_or_method", "ufunc"):
            return {"function": _name_of(obj, self.trusted, "the function or type", where)}
        return self._object(obj, where)

    def _dict(self, obj: dict, where: str):
        cls = type(obj)
        node: dict[str, Any] = {}
        if cls not in (dict, OrderedDict, defaultdict):
            node["class"] = _name_of(cls, self.trusted, "the mapping type", where)
        elif cls is defaultdict:
            node["default"] = self.encode(obj.default_factory, f"{where}.default_factory")
        if all(type(k) is str for k in obj):
            node["dict"] = {k: self.encode(v, f"{where}[{k!r}]") for k, v in obj.items()}
        else:
            node["items"] = [[self.encode(k, f"{where} key"), self.encode(v, f"{where}[{k!r}]")]
                             for k, v in obj.items()]
        return node

    def _object(self, obj, where: str):
        import numpy.random

        ref, seen = self._memo(obj)
        if seen:
            return {"ref": ref}
        cls = type(obj)
        name = _name_of(cls, self.trusted, "the type", where)
        _check_no_remote_code(obj, where)
        node: dict[str, Any] = {"object": name, "id": ref}
        if isinstance(obj, numpy.random.RandomState):
            node["state"] = self.encode(obj.get_state(legacy=True), f"{where}.state")
        elif hasattr(obj, "_to_state"):
            folder = self.root / "objects" / str(ref)
            folder.mkdir(parents=True)
            node["state"] = self.encode(obj._to_state(folder), f"{where}")
            node["folder"] = folder.relative_to(self.root).as_posix()
            if not any(folder.iterdir()):
                folder.rmdir()
                del node["folder"]
        else:
            state = obj.__getstate__()
            if not isinstance(state, dict):
                raise UntrustedTypeError(f"cannot save {where}: {name} has no dictionary state.")
            node["state"] = self.encode(state, where)
        return node



class Reader:
    """Decodes the JSON nodes written by `_Writer`."""

    def __init__(self, root: Path, trusted: frozenset[str], renamed: dict[str, str]):
        self.root = root.resolve()
        self.trusted = trusted
        self.renamed = renamed
        self.memo: dict[int, Any] = {}

    def _file(self, rel) -> Path:
        p = (self.root / str(rel)).resolve()
        if not p.is_relative_to(self.root) or not p.exists():
            raise ValueError(f"{self.root}: manifest.json refers to {rel!r}, which is not a file "
                             "of the model folder; refusing to load it.")
        return p

    def _trusted(self, name, kind: str):
        if not isinstance(name, str) or name not in self.trusted:
            raise UntrustedTypeError(
                f"{self.root} names the {kind} {name!r}, which is not in embedkit's trusted list; "
                "refusing to load it (the folder was altered, or holds a class of your own: pass "
                "trusted=[its name] to load if you trust it).")
        try:
            return _resolve(self.renamed.get(name, name))
        except (ImportError, AttributeError):
            raise ValueError(f"{self.root} needs {name}, which cannot be imported here; install "
                             "the package that provides it (e.g. `pip install 'embedkit[all]'`)."
                             ) from None

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict):
            raise ValueError(f"{self.root}: malformed manifest.json entry {node!r}.")  # noqa: TRY004
        if "ref" in node:
            if node["ref"] not in self.memo:
                raise ValueError(f"{self.root}: manifest.json refers to an unknown object "
                                 f"{node['ref']!r}.")
            return self.memo[node["ref"]]
        if "scalar" in node:
            dtype = np.dtype(node["dtype"])
            if dtype.kind not in "biufcUS?":
                raise ValueError(f"{self.root}: bad scalar dtype {node['dtype']!r}.")
            value = node["scalar"]
            return dtype.type(complex(*value) if dtype.kind == "c" else value)
        if "tuple" in node:
            return tuple(self.decode(v) for v in node["tuple"])
        if "slice" in node:
            bounds = [self.decode(v) for v in node["slice"]]
            if len(bounds) != 3 or not all(b is None or type(b) is int for b in bounds):
                raise ValueError(f"{self.root}: malformed slice {node['slice']!r}.")
            return slice(*bounds)
        if "set" in node:
            values = [self.decode(v) for v in node["set"]]
            return frozenset(values) if node.get("frozen") else set(values)
        if "array" in node:
            try:
                out = np.load(self._file(node["array"]), allow_pickle=False)
            except ValueError as err:
                raise ValueError(f"{self.root}: {node['array']} is not a plain numeric .npy "
                                 f"file ({err}); refusing to load it.") from None
            self.memo[node["id"]] = out
            return out
        if "object_array" in node:
            out = np.empty(len(node["object_array"]), dtype=object)
            out[:] = [self.decode(v) for v in node["object_array"]]
            out = out.reshape(node["shape"])
            self.memo[node["id"]] = out
            return out
        if "dtype" in node:
            dtype = np.dtype(node["dtype"])
            if dtype.kind == "O" or dtype.fields is not None:
                raise ValueError(f"{self.root}: bad dtype {node['dtype']!r}.")
            return dtype
        if "sparse" in node:
            import scipy.sparse as sp

            kinds = {"csr_matrix": sp.csr_matrix, "csc_matrix": sp.csc_matrix,
                     "csr_array": sp.csr_array, "csc_array": sp.csc_array}
            if node["sparse"] not in kinds:
                raise ValueError(f"{self.root}: unknown sparse format {node['sparse']!r}.")
            parts = [self.decode(node[k]) for k in ("data", "indices", "indptr")]
            return kinds[node["sparse"]](tuple(parts), shape=tuple(node["shape"]))
        if "dict" in node or "items" in node:
            return self._dict(node)
        if "path" in node:
            return Path(node["path"])
        if "function" in node:
            return self._trusted(node["function"], "function or type")
        if "object" in node:
            return self._object(node)
        raise ValueError(f"{self.root}: malformed manifest.json entry with keys {sorted(node)}.")

    def _dict(self, node):
        if "class" in node:
            out = self._trusted(node["class"], "type")()
        elif "default" in node:
            out = defaultdict(self.decode(node["default"]))
        else:
            out = {}
        if "dict" in node:
            for k, v in node["dict"].items():
                out[k] = self.decode(v)
        else:
            for k, v in node["items"]:
                out[self.decode(k)] = self.decode(v)
        return out

    def _object(self, node):
        import numpy.random

        cls = self._trusted(node["object"], "type")
        if not isinstance(cls, type):
            raise UntrustedTypeError(f"{self.root}: {node['object']} is not a class.")
        if cls is numpy.random.RandomState:
            out = numpy.random.RandomState()
            out.set_state(self.decode(node["state"]))
        elif hasattr(cls, "_from_state"):
            folder = self._file(node["folder"]) if "folder" in node else None
            out = cls._from_state(self.decode(node["state"]), folder)
        else:
            out = cls.__new__(cls)
            self.memo[node["id"]] = out  # before its state: the state may refer back to it
            state = self.decode(node["state"])
            if hasattr(out, "__setstate__"):
                out.__setstate__(state)
            else:
                out.__dict__.update(state)
        _check_no_remote_code(out, f"{self.root}: {node['object']}")
        _fill_new_parameters(out)
        self.memo[node["id"]] = out
        return out


def _fill_new_parameters(obj) -> None:
    """An estimator saved before a parameter of its class existed gets that parameter's default
    (a parameter is added with the default that keeps the behaviour before it), so its methods,
    ``get_params`` and ``clone`` find it."""
    import inspect

    names = getattr(type(obj), "_get_param_names", None)
    if names is None or not hasattr(obj, "__dict__"):
        return
    try:
        names = names()
    except RuntimeError:  # scikit-learn's refusal of an __init__ taking *args: no parameters
        return
    parameters = inspect.signature(type(obj).__init__).parameters
    for name in names:
        default = parameters[name].default if name in parameters else inspect.Parameter.empty
        if (name not in obj.__dict__ and default is not inspect.Parameter.empty
                and not hasattr(type(obj), name)):
            setattr(obj, name, default)


def _check_no_remote_code(obj, where: str) -> None:
    """Model folders never run code shipped with a model (``trust_remote_code=True``)."""
    if getattr(obj, "__dict__", {}).get("trust_remote_code", False) is not False:
        raise ValueError(f"{where} has trust_remote_code={obj.trust_remote_code!r}; embedkit model "
                         "folders never run code shipped with a model, so they hold only "
                         "estimators with trust_remote_code=False.")
