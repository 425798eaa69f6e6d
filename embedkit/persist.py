"""Model folders: `save` a fitted pipeline, `load` it back, `predict_file` with it; nothing pickled.

A model folder holds

* ``manifest.json``: the format name and version, library versions, the size and SHA-256 of
  every other file, and the whole object tree as JSON: each object as its trusted type name and
  its state (parameters and fitted attributes);
* ``arrays/*.npy``: every numeric array of that state, read back with ``allow_pickle=False``;
* ``objects/<n>/``: what a class writes itself: torch weights as ``.safetensors`` (the neural
  heads), a Hugging Face model folder (a fine-tuned encoder, which
  ``transformers.AutoModel.from_pretrained`` opens).

One mechanism covers every step. An object's state is what pickle would store
(``__getstate__``: its ``__dict__`` for scikit-learn estimators and embedkit representations,
which already leave out what can be reloaded, such as a Transformer's network), written as
JSON + ``.npy`` instead of a pickle; a class whose state holds code-built objects (a torch
module, a tokenizer) describes it with a ``_to_state(folder)`` / ``_from_state(state, folder)``
pair (`embedkit.heads.NeuralHead`, the fine-tuning heads, `embedkit.vectors.WordVectors`).
Packaged resources are stored by name and loaded again at `load` (a GloVe pipeline stays a few
kilobytes; the bundled MiniLM is never copied).

`load` rebuilds only the types of `TRUSTED_TYPES` (plus any the caller vouches for), calls only
the functions of `TRUSTED_FUNCTIONS`, never unpickles, refuses a folder that holds a pickle
(or any file it did not write, or one changed since), and refuses a newer format version.

gensim models (Word2Vec/FastText vectors, Doc2Vec) are stored the same way, their arrays as
``.npy`` (never gensim's pickle-based ``save``); the restored objects transform and predict
exactly as before, but continuing to train them is not supported.
"""

from __future__ import annotations

import importlib
import json
import os
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .resources import file_sha256

__all__ = ["FORMAT_VERSION", "MANIFEST", "TRUSTED_FUNCTIONS", "TRUSTED_TYPES",
           "UntrustedTypeError", "folder_size", "load", "predict_file", "save"]

FORMAT = "embedkit-model"
#: the model-folder format this embedkit writes (and the newest it reads)
FORMAT_VERSION = 1
MANIFEST = "manifest.json"

_E = "embedkit"
_SK = "sklearn"
#: classes `load` rebuilds (by the name they are saved under; a name outside it is refused)
TRUSTED_TYPES = frozenset({
    # embedkit representations, heads and their parts
    f"{_E}.representations.tfidf.TfidfEmbedder",
    f"{_E}.representations.word2vec.Word2VecEmbedder",
    f"{_E}.representations.fasttext.FastTextEmbedder",
    f"{_E}.representations.glove.GloveEmbedder",
    f"{_E}.representations.doc2vec.Doc2VecEmbedder",
    f"{_E}.representations.transformer.TransformerEmbedder",
    f"{_E}.representations.distilled.DistilledEmbedder",
    f"{_E}.representations.tokens.TokenIndexer",
    f"{_E}.heads.mlp.MLPClassifier", f"{_E}.heads.mlp.MLPRegressor",
    f"{_E}.heads.conv.ConvClassifier", f"{_E}.heads.conv.ConvRegressor",
    f"{_E}.heads.rnn.RNNClassifier", f"{_E}.heads.rnn.RNNRegressor",
    f"{_E}.heads.attention.AttentionClassifier", f"{_E}.heads.attention.AttentionRegressor",
    f"{_E}.heads.selfattention.SelfAttentionClassifier",
    f"{_E}.heads.selfattention.SelfAttentionRegressor",
    f"{_E}.heads.finetune.TransformerClassifier", f"{_E}.heads.finetune.TransformerRegressor",
    f"{_E}.heads.ensemble.EnsembleClassifier", f"{_E}.registry.LogisticRegressionHead",
    f"{_E}.heads.setfit.SetFitClassifier",
    f"{_E}.documents.Tokenizer", f"{_E}.vectors.WordVectors",
    f"{_E}.cache.MemoryCache", f"{_E}.cache.DiskCache",
    # scikit-learn: composition, text, scaling, reduction, linear models, ensembles
    f"{_SK}.pipeline.Pipeline", f"{_SK}.pipeline.FeatureUnion",
    f"{_SK}.compose.ColumnTransformer", f"{_SK}.utils.Bunch",
    *(f"{_SK}.feature_extraction.text.{n}" for n in (
        "CountVectorizer", "TfidfVectorizer", "TfidfTransformer", "HashingVectorizer")),
    *(f"{_SK}.preprocessing.{n}" for n in (
        "StandardScaler", "MaxAbsScaler", "MinMaxScaler", "RobustScaler", "Normalizer",
        "LabelEncoder", "LabelBinarizer", "MultiLabelBinarizer", "FunctionTransformer")),
    # multi-label wrappers (LogisticRegressionHead, EnsembleClassifier on multi-label targets)
    f"{_SK}.multiclass.OneVsRestClassifier", f"{_SK}.multioutput.MultiOutputClassifier",
    f"{_SK}.decomposition.TruncatedSVD", f"{_SK}.decomposition.PCA",
    *(f"{_SK}.linear_model.{n}" for n in (
        "LogisticRegression", "LogisticRegressionCV", "RidgeClassifier", "RidgeClassifierCV",
        "Ridge", "RidgeCV", "LinearRegression", "SGDClassifier", "SGDRegressor", "Perceptron")),
    f"{_SK}.svm.LinearSVC", f"{_SK}.svm.LinearSVR",
    *(f"{_SK}.naive_bayes.{n}" for n in ("MultinomialNB", "ComplementNB", "BernoulliNB")),
    *(f"{_SK}.ensemble.{n}" for n in (
        "StackingClassifier", "StackingRegressor", "VotingClassifier", "VotingRegressor")),
    f"{_SK}.model_selection.StratifiedKFold", f"{_SK}.model_selection.KFold",
    f"{_SK}.dummy.DummyClassifier", f"{_SK}.dummy.DummyRegressor",
    # gensim's models, as embedkit's word and document vectors hold them
    "gensim.models.keyedvectors.KeyedVectors", "gensim.models.fasttext.FastTextKeyedVectors",
    "gensim.models.doc2vec.Doc2Vec",
    # numpy's legacy random state (gensim keeps one), restored from its state tuple
    "numpy.random.RandomState",
})

#: functions and types a saved state may refer to as values (e.g. ``FunctionTransformer(func=...)``,
#: a vectorizer's ``dtype``), never called at `load`
TRUSTED_FUNCTIONS = frozenset({
    *(f"numpy.{n}" for n in ("log1p", "expm1", "log", "exp", "sqrt", "square", "abs", "sign",
                             "tanh", "float16", "float32", "float64", "int8", "int16", "int32",
                             "int64", "uint8", "bool_", "str_")),
    "builtins.int", "builtins.float", "builtins.str", "builtins.bool", "builtins.list",
    "builtins.hash",  # gensim's Doc2Vec.hashfxn
    "gensim.utils.call_on_class_only",  # gensim's instance-level `load` guard
})

_PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".dill", ".pt", ".pth", ".bin", ".ckpt",
                    ".cloudpickle")
_FILE_SUFFIXES = (".json", ".npy", ".safetensors", ".txt", ".model")


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
        "embedkit.load would refuse it. Use a trusted step (see embedkit.persist.TRUSTED_TYPES "
        "and TRUSTED_FUNCTIONS) or, for your own class, pass trusted=[its name] to save and load."
    )


# -------------------------------------------------------------------------------------------
# writing
# -------------------------------------------------------------------------------------------
class _Writer:
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



def _versions() -> dict[str, str]:
    import platform
    import sys

    import sklearn

    import embedkit

    out = {"embedkit": embedkit.__version__, "python": platform.python_version(),
           "numpy": np.__version__, "scikit-learn": sklearn.__version__}
    for module in ("torch", "transformers", "gensim"):
        if module in sys.modules:
            out[module] = str(getattr(sys.modules[module], "__version__", ""))
    return out


def save(pipeline, path, *, trusted: Iterable[str] = ()) -> Path:
    """Save a fitted pipeline (or any trusted estimator) as a model folder; nothing is pickled.

    The folder holds ``manifest.json`` (format version, library versions, checksums of every
    file, and every step's parameters and fitted attributes as JSON), numeric arrays as
    ``.npy``, torch weights as ``.safetensors`` and fine-tuned encoders as Hugging Face model
    folders. Packaged resources (the bundled GloVe vectors, the bundled MiniLM) are stored by
    name, not copied. The folder is written next to ``path`` under a temporary name and renamed
    at the end, so an interrupted save leaves no half-written model; an existing model folder at
    ``path`` is replaced.

    Parameters
    ----------
    pipeline : fitted estimator
        A `sklearn.pipeline.Pipeline` of embedkit representations and heads and scikit-learn
        steps (every type must be in `TRUSTED_TYPES` or ``trusted``).
    path : str or Path
        The model folder to write. A folder that exists and is not a model folder is refused.
    trusted : list of str, default=()
        More type names (``"package.module.Class"``) to allow, for your own step classes; `load`
        needs the same list.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.linear_model import LogisticRegression
    >>> from embedkit import TfidfEmbedder
    >>> docs, y = ["good film", "great plot", "bad film", "awful plot"], [1, 1, 0, 0]
    >>> pipe = make_pipeline(TfidfEmbedder(), LogisticRegression()).fit(docs, y)
    >>> folder = save(pipe, tempfile.mkdtemp() + "/model")
    >>> load(folder).predict(["a great film"]).tolist()
    [1]
    """
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    from .streaming import atomic_path

    try:
        check_is_fitted(pipeline)
    except NotFittedError:
        raise ValueError(f"{type(pipeline).__name__} is not fitted; call .fit(X, y) before "
                         "embedkit.save.") from None
    except TypeError:
        raise ValueError(f"embedkit.save takes a fitted estimator; got a "
                         f"{type(pipeline).__name__}.") from None
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise FileExistsError(f"{path} is a file; pass the path of a folder to create.")
        if any(path.iterdir()) and not (path / MANIFEST).is_file():
            raise FileExistsError(f"{path} is a folder that is not an embedkit model folder and is "
                                  "not empty; save into a new folder (it is replaced only when it "
                                  "is a model folder).")
    path.parent.mkdir(parents=True, exist_ok=True)
    trusted = TRUSTED_TYPES | TRUSTED_FUNCTIONS | frozenset(trusted)
    with atomic_path(path) as tmp:
        tmp.mkdir()
        writer = _Writer(tmp, trusted)
        root = writer.encode(pipeline, type(pipeline).__name__)
        files = {p.relative_to(tmp).as_posix(): {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
                 for p in sorted(tmp.rglob("*")) if p.is_file()}
        classes = getattr(pipeline, "classes_", None)
        manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "versions": _versions(),
                    "estimator": root.get("object") if isinstance(root, dict) else None,
                    "classes": None if classes is None else
                    writer.encode(np.asarray(classes).tolist(), "classes_"),
                    "files": files, "root": root}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, allow_nan=True))
    return path


# -------------------------------------------------------------------------------------------
# reading
# -------------------------------------------------------------------------------------------
def _not_a_model(path: Path, why: str) -> ValueError:
    return ValueError(f"{path} is not an embedkit model folder ({why}); pass a folder written by "
                      "embedkit.save(pipeline, path) or `embedkit tune`.")


def _check_files(path: Path, listed: dict) -> None:
    """Refuse pickles, files the save did not write, and files changed since."""
    present = {p.relative_to(path).as_posix(): p for p in sorted(path.rglob("*"))
               if p.is_file() or p.is_symlink()}
    for rel, p in present.items():
        if p.is_symlink():
            raise ValueError(f"{path} holds a symbolic link {rel}; model folders hold plain files "
                             "only. Refusing to load it.")
        with open(p, "rb") as fh:
            head = fh.read(2)
        pickled = p.suffix.lower() in _PICKLE_SUFFIXES or (
            p.suffix.lower() != ".safetensors" and len(head) == 2 and head[0] == 0x80
            and 2 <= head[1] <= 5) or head == b"PK"
        if pickled:
            raise ValueError(f"{path} holds a pickle file ({rel}); embedkit never unpickles and "
                             "refuses to load a folder that contains one. Remove it only if you "
                             "know where it came from, or save the model again.")
    for rel in present:
        if rel == MANIFEST:
            continue
        if rel not in listed:
            raise ValueError(f"{path} holds {rel}, which embedkit.save did not write (it is not "
                             "in manifest.json); refusing to load a folder that was altered.")
        if Path(rel).suffix.lower() not in _FILE_SUFFIXES:
            raise ValueError(f"{path}: {rel} has a file type embedkit does not read.")
    for rel, info in listed.items():
        p = path / rel
        if rel not in present:
            raise ValueError(f"{path} is missing {rel}, listed in its manifest.json; the folder "
                             "is incomplete. Copy the whole folder, or save the model again.")
        if p.stat().st_size != info.get("bytes") or file_sha256(p) != info.get("sha256"):
            raise ValueError(f"{path}: {rel} changed since the model was saved (its checksum "
                             "differs from manifest.json); refusing to load it.")


class _Reader:
    """Decodes the JSON nodes written by `_Writer`."""

    def __init__(self, root: Path, trusted: frozenset[str]):
        self.root = root.resolve()
        self.trusted = trusted
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
            return _resolve(name)
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
        self.memo[node["id"]] = out
        return out


def _check_no_remote_code(obj, where: str) -> None:
    """Model folders never run code shipped with a model (``trust_remote_code=True``)."""
    if getattr(obj, "__dict__", {}).get("trust_remote_code", False) is not False:
        raise ValueError(f"{where} has trust_remote_code={obj.trust_remote_code!r}; embedkit model "
                         "folders never run code shipped with a model, so they hold only "
                         "estimators with trust_remote_code=False.")


def _read_manifest(path: Path) -> dict:
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; pass the folder written by "
                                "embedkit.save(pipeline, path).")
    if not path.is_dir():
        raise _not_a_model(path, "it is a file, not a folder")
    if not (path / MANIFEST).is_file():
        raise _not_a_model(path, f"it has no {MANIFEST}")
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise _not_a_model(path, f"its {MANIFEST} is not valid JSON: {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _not_a_model(path, f"its {MANIFEST} is not an embedkit model manifest")
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _not_a_model(path, f"its format_version {version!r} is not a version number")
    if version > FORMAT_VERSION:
        import embedkit

        raise ValueError(
            f"{path} was saved in model-folder format version {version}, by a newer embedkit "
            f"(saved with embedkit {manifest.get('versions', {}).get('embedkit', '?')}); this "
            f"embedkit {embedkit.__version__} reads format versions up to {FORMAT_VERSION}. "
            "Upgrade embedkit: pip install -U embedkit."
        )
    return manifest


def load(path, *, trusted: Iterable[str] = ()):
    """Load a model folder written by `save`; nothing is unpickled.

    Every type in the folder must be in `TRUSTED_TYPES` (or ``trusted``); every file must be
    one `save` wrote, unchanged (checked against the SHA-256 sums in ``manifest.json``);
    arrays are read with ``numpy.load(allow_pickle=False)`` and weights with safetensors.
    Packaged resources named in the folder (the bundled GloVe, MiniLM) are loaded from the
    installed packages.

    Parameters
    ----------
    path : str or Path
        A model folder.
    trusted : list of str, default=()
        More type names to allow (your own step classes, as given to `save`).

    Returns
    -------
    estimator
        The fitted pipeline, predicting exactly as it did when saved.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        ``path`` is not a model folder, was written by a newer format version, holds a pickle
        or any file `save` did not write, or a file changed since; `UntrustedTypeError` (a
        ``ValueError``) when it names a type outside the trusted list.

    Examples
    --------
    >>> import tempfile
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.linear_model import LogisticRegression
    >>> from embedkit import TfidfEmbedder
    >>> docs, y = ["good film", "great plot", "bad film", "awful plot"], ["pos", "pos", "neg", "neg"]
    >>> pipe = make_pipeline(TfidfEmbedder(), LogisticRegression()).fit(docs, y)
    >>> model = load(save(pipe, tempfile.mkdtemp() + "/model"))
    >>> bool((model.predict_proba(docs) == pipe.predict_proba(docs)).all())
    True
    """
    path = Path(path)
    manifest = _read_manifest(path)
    files = manifest.get("files")
    if not isinstance(files, dict) or "root" not in manifest:
        raise _not_a_model(path, f"its {MANIFEST} lists no files or no model")
    _check_files(path, files)
    reader = _Reader(path, TRUSTED_TYPES | TRUSTED_FUNCTIONS | frozenset(trusted))
    try:
        return reader.decode(manifest["root"])
    except (KeyError, IndexError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: could not rebuild the model from its {MANIFEST} "
                         f"({type(err).__name__}: {err}); the folder is malformed, or needs the "
                         f"library versions it was saved with ({manifest.get('versions')}).") from None


# -------------------------------------------------------------------------------------------
# prediction over files
# -------------------------------------------------------------------------------------------
def predict_file(model_dir, input, output, text_column: str = "text",
                 id_column: str | None = None, chunksize: int = 10_000,
                 progress: bool = False) -> dict:
    """Predict every row of a CSV/TSV/JSONL/parquet file with a saved model, in bounded memory.

    The input is read ``chunksize`` rows at a time (`embedkit.io.read_chunks`, the same reader
    as ``embedkit embed``); each chunk's predictions are appended to ``output``, so memory
    depends on ``chunksize`` and the model, not on the file. Each output row holds the id (when
    ``id_column`` is given), the predicted ``label`` and, for a classifier with
    ``predict_proba``, one ``proba_<class>`` column per class. The output is written under a
    temporary name and renamed at the end: an interrupted run leaves no partial file.

    Parameters
    ----------
    model_dir : str, Path or fitted estimator
        A model folder written by `save` (or an already loaded model).
    input : str or Path
        ``.csv``, ``.tsv``, ``.jsonl`` (optionally ``.gz``) or ``.parquet``.
    output : str or Path
        ``.csv``, ``.tsv``, ``.jsonl`` or ``.parquet``; its name decides the format.
    text_column : str, default="text"
    id_column : str, optional
        A column copied to the output, e.g. the row's id.
    chunksize : int, default=10_000
        Rows per chunk.
    progress : bool, default=False
        Show a progress bar (rows).

    Returns
    -------
    dict
        ``{"path", "rows", "chunks", "classes"}``.

    Notes
    -----
    The label is the class of highest probability (the rows' ``predict_proba`` is computed
    once, so the representation encodes each text once). A model without ``predict_proba``
    (a regressor) writes ``prediction`` only.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.linear_model import LogisticRegression
    >>> from embedkit import TfidfEmbedder
    >>> folder = tempfile.mkdtemp()
    >>> docs, y = ["good film", "great plot", "bad film", "awful plot"], ["pos", "pos", "neg", "neg"]
    >>> model = save(make_pipeline(TfidfEmbedder(), LogisticRegression()).fit(docs, y),
    ...              f"{folder}/model")
    >>> pd.DataFrame({"id": [7, 8], "text": ["a good plot", "bad"]}).to_csv(f"{folder}/new.csv",
    ...                                                                    index=False)
    >>> predict_file(model, f"{folder}/new.csv", f"{folder}/out.csv", id_column="id")["rows"]
    2
    >>> pd.read_csv(f"{folder}/out.csv").columns.tolist()
    ['id', 'label', 'proba_neg', 'proba_pos']
    """
    import pandas as pd
    from tqdm.auto import tqdm

    from .io import file_format, read_chunks
    from .streaming import FrameWriter

    model = load(model_dir) if isinstance(model_dir, (str, os.PathLike)) else model_dir
    kind = file_format(output)
    columns = [text_column] + ([id_column] if id_column is not None else [])
    if id_column == text_column:
        raise ValueError(f"id_column={id_column!r} is the text column; name another column.")
    classes = getattr(model, "classes_", None)
    proba = hasattr(model, "predict_proba") and classes is not None
    names = [f"proba_{c}" for c in classes] if proba else []
    rows = chunks = 0
    output = Path(output)
    with FrameWriter(output, kind) as writer, tqdm(unit="docs", disable=not progress,
                                                   desc=f"predicting {Path(input).name}") as bar:
        for chunk in read_chunks(input, columns, chunksize):
            where = f"{input}, rows {rows}-{rows + len(chunk) - 1}"
            texts = chunk[text_column]
            try:
                if proba:
                    p = np.asarray(model.predict_proba(texts), dtype=np.float64)
                    frame = pd.DataFrame(p, columns=names, index=chunk.index)
                    frame.insert(0, "label", np.asarray(classes)[p.argmax(axis=1)])
                else:
                    frame = pd.DataFrame({"prediction": model.predict(texts)}, index=chunk.index)
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from None
            if id_column is not None:
                frame.insert(0, id_column, chunk[id_column])
            writer.write(frame)
            rows += len(chunk)
            chunks += 1
            bar.update(len(chunk))
        if not rows:
            empty = {**({id_column: []} if id_column else {}),
                     **({"label": []} if proba else {"prediction": []}), **{name: [] for name in names}}
            writer.write(pd.DataFrame(empty))
    return {"path": str(output), "rows": rows, "chunks": chunks,
            "classes": None if classes is None else np.asarray(classes).tolist()}


def folder_size(path) -> int:
    """Bytes of all files in a model folder (``du`` without block rounding)."""
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())

