"""Model folders: `save` a fitted pipeline, `load` it back; nothing pickled.

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
(or any file it did not write, or one changed since), and refuses a newer format version. It
builds the model from the files it checked: a folder republished while it is read is read
again, never mixed.

gensim models (Word2Vec/FastText vectors, Doc2Vec) are stored the same way, their arrays as
``.npy`` (never gensim's pickle-based ``save``); the restored objects transform and predict
exactly as before, but continuing to train them is not supported.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ._codec import Reader, UntrustedTypeError, Writer
from .resources import file_sha256

__all__ = ["FORMAT_VERSION", "MANIFEST", "TRUSTED_FUNCTIONS", "TRUSTED_TYPES",
           "UntrustedTypeError", "folder_size", "is_model_folder", "load", "save"]

FORMAT = "embedkit-model"
#: the model-folder format this embedkit writes (and the newest it reads)
FORMAT_VERSION = 1
MANIFEST = "manifest.json"

_SK = "sklearn"


def _public_classes() -> set[str]:
    """``module.Class`` of every class the package exports (its lazy export table): every
    representation, head and public part, so a new one is trusted as soon as it is exported."""
    import embedkit

    return {f"{module}.{name}" for name, module in embedkit.EXPORTS.items() if name[:1].isupper()}


#: names that folders written by an earlier embedkit give to classes that have moved since
RENAMED = {
    "embedkit.registry.LogisticRegressionHead": "embedkit.heads.linear.LogisticRegressionHead",
    # the package root grouped by concern (release after c21f6d8): reading in embedkit.data, the
    # table's embedder with the other representations
    "embedkit.documents.Tokenizer": "embedkit.data.documents.Tokenizer",
    "embedkit.tables.ColumnRoles": "embedkit.data.columns.ColumnRoles",
    "embedkit.tables.TableEmbedder": "embedkit.representations.table.TableEmbedder",
}

#: classes `load` rebuilds (by the name they are saved under; a name outside it is refused)
TRUSTED_TYPES = frozenset({
    *_public_classes(), *RENAMED,
    # embedkit parts that are not exported but live inside fitted steps
    "embedkit.cache.MemoryCache", "embedkit.cache.DiskCache",
    # scikit-learn: composition, text, encoding and scaling, reduction, linear models, ensembles
    f"{_SK}.pipeline.Pipeline", f"{_SK}.pipeline.FeatureUnion",
    f"{_SK}.compose.ColumnTransformer", f"{_SK}.utils.Bunch",
    *(f"{_SK}.feature_extraction.text.{n}" for n in (
        "CountVectorizer", "TfidfVectorizer", "TfidfTransformer", "HashingVectorizer")),
    *(f"{_SK}.preprocessing.{n}" for n in (
        "StandardScaler", "MaxAbsScaler", "MinMaxScaler", "RobustScaler", "Normalizer",
        "LabelEncoder", "LabelBinarizer", "MultiLabelBinarizer", "FunctionTransformer",
        "OneHotEncoder")),
    # imputation (`embedkit.TableEmbedder`'s numeric columns)
    f"{_SK}.impute.SimpleImputer", f"{_SK}.impute.MissingIndicator",
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
    f"{_SK}.frozen.FrozenEstimator",  # ensembles of fitted members (`embedkit.Tuner`)
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
    ``path`` is replaced. A full disk or a file-size limit met by any file of it (the weights
    included) is a `embedkit.storage.files.WriteError` naming ``path`` and the fix, and leaves
    ``path`` as it was.

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

    from .files import atomic_path, serializer_faults

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
        if any(path.iterdir()) and not is_model_folder(path):
            raise FileExistsError(f"{path} is a folder that is not an embedkit model folder and is "
                                  "not empty; save into a new folder (it is replaced only when it "
                                  "is a model folder).")
    path.parent.mkdir(parents=True, exist_ok=True)
    trusted = TRUSTED_TYPES | TRUSTED_FUNCTIONS | frozenset(trusted)
    with atomic_path(path) as tmp, serializer_faults(tmp):  # safetensors' own errors too
        tmp.mkdir()
        writer = Writer(tmp, trusted)
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


def _identity(stat: os.stat_result) -> tuple[int, ...]:
    """Which file a path led to: its inode, and when and how it was last written (a republish
    writes new files, so an inode number used again comes with other times)."""
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def _check_files(path: Path, listed: dict) -> dict[str, tuple[int, ...]]:
    """Refuse pickles, files the save did not write, and files changed since. Returns the
    identity of every file checked (`_identity`), each read from the very file it hashed."""
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
    seen = {}
    for rel, info in listed.items():
        if rel not in present:
            raise ValueError(f"{path} is missing {rel}, listed in its manifest.json; the folder "
                             "is incomplete. Copy the whole folder, or save the model again.")
        with open(path / rel, "rb") as fh:
            stat = os.fstat(fh.fileno())
            same = stat.st_size == info.get("bytes") and \
                hashlib.file_digest(fh, "sha256").hexdigest() == info.get("sha256")
        if not same:
            raise ValueError(f"{path}: {rel} changed since the model was saved (its checksum "
                             "differs from manifest.json); refusing to load it.")
        seen[rel] = _identity(stat)
    return seen


def _read_manifest(path: Path) -> tuple[dict, tuple[int, ...]]:
    """The manifest of ``path``, checked, and the identity of the file it was read from."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; pass the folder written by "
                                "embedkit.save(pipeline, path).")
    if not path.is_dir():
        raise _not_a_model(path, "it is a file, not a folder")
    if not (path / MANIFEST).is_file():
        raise _not_a_model(path, f"it has no {MANIFEST}")
    with open(path / MANIFEST, "rb") as fh:
        identity, raw = _identity(os.fstat(fh.fileno())), fh.read()
    manifest = _parse(raw)
    if manifest is None:
        raise _not_a_model(path, f"its {MANIFEST} is not valid JSON, or nests deeper than a "
                                 "manifest does")
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
    return manifest, identity


def _parse(raw: bytes):
    """The JSON value of ``raw``, or None where it is not JSON (or nests so deep that reading it
    would exhaust Python's stack: no manifest does)."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def is_model_folder(path) -> bool:
    """Whether ``path`` is a folder with an embedkit model manifest (whole or not: `load` checks
    the rest)."""
    try:
        manifest = _parse((Path(path) / MANIFEST).read_bytes())
    except OSError:
        return False
    return isinstance(manifest, dict) and manifest.get("format") == FORMAT


def load(path, *, trusted: Iterable[str] = ()):
    """Load a model folder written by `save`; nothing is unpickled.

    Every type in the folder must be in `TRUSTED_TYPES` (or ``trusted``); every file must be
    one `save` wrote, unchanged (checked against the SHA-256 sums in ``manifest.json``);
    arrays are read with ``numpy.load(allow_pickle=False)`` and weights with safetensors.
    Packaged resources named in the folder (the bundled GloVe, MiniLM) are loaded from the
    installed packages. The model is built from the very files checked: a folder replaced while
    it is read (``embedkit tune`` publishing a new result there) is read again from the start,
    so the model comes from one save, the old or the new, never from a mix of the two.

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
        or any file `save` did not write, or a file changed since, or was replaced while it was
        read three times in a row; `UntrustedTypeError` (a ``ValueError``) when it names a
        type outside the trusted list.

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
    trusted = TRUSTED_TYPES | TRUSTED_FUNCTIONS | frozenset(trusted)
    for _ in range(_ATTEMPTS):
        try:
            return _load_once(path, trusted)
        except _Changed:
            continue  # republished while it was read: read the new one from the start
    raise ValueError(f"{path} changed while loading, {_ATTEMPTS} times in a row (another process "
                     "is saving a model there, e.g. `embedkit tune` publishing its result); load "
                     "it again once that is done.")


#: how many times `load` starts again when the folder is replaced while it reads it
_ATTEMPTS = 3


class _Changed(Exception):
    """The model folder was replaced (republished) while `load` read it."""


def _load_once(path: Path, trusted: frozenset[str]):
    """One reading of the model folder: the manifest, the checks, the model built from the files
    checked. Where the manifest is no longer the one read when something fails, or any path
    leads at the end to another file than the one checked, the folder was replaced meanwhile
    (`_Changed`): no model is built from two saves."""
    manifest, identity = _read_manifest(path)
    files = manifest.get("files")
    if not isinstance(files, dict) or "root" not in manifest:
        raise _not_a_model(path, f"its {MANIFEST} lists no files or no model")
    try:
        seen = _check_files(path, files)
        reader = Reader(path, trusted, RENAMED)
        try:
            model = reader.decode(manifest["root"])
        except (KeyError, IndexError, TypeError, AttributeError, RecursionError) as err:
            raise ValueError(f"{path}: could not rebuild the model from its {MANIFEST} "
                             f"({type(err).__name__}: {err}); the folder is malformed, or needs "
                             f"the library versions it was saved with ({manifest.get('versions')})."
                             ) from None
        now = {rel: _identity(os.stat(path / rel)) for rel in [MANIFEST, *seen]}
    except (OSError, ValueError):  # a file gone, a mix of two saves: or a fault of the folder
        if _replaced(path, identity):
            raise _Changed from None
        raise
    if now != {MANIFEST: identity, **seen}:
        raise _Changed
    return model


def _replaced(path: Path, identity) -> bool:
    """Whether ``path``'s manifest is no longer the one read (an error met while reading may be
    the mix of two saves, not a fault of the folder)."""
    try:
        return identity is not None and _identity(os.stat(path / MANIFEST)) != identity
    except OSError:
        return True


def folder_size(path) -> int:
    """Bytes of all files in a model folder (``du`` without block rounding)."""
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())

