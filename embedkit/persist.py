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
(or any file it did not write, or one changed since), and refuses a newer format version.

gensim models (Word2Vec/FastText vectors, Doc2Vec) are stored the same way, their arrays as
``.npy`` (never gensim's pickle-based ``save``); the restored objects transform and predict
exactly as before, but continuing to train them is not supported.
"""

from __future__ import annotations

import json
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

    return {f"{module}.{name}" for name, module in embedkit._EXPORTS.items() if name[:1].isupper()}


#: names that folders written by an earlier embedkit give to classes that have moved since
RENAMED = {
    "embedkit.registry.LogisticRegressionHead": "embedkit.heads.linear.LogisticRegressionHead",
}

#: classes `load` rebuilds (by the name they are saved under; a name outside it is refused)
TRUSTED_TYPES = frozenset({
    *_public_classes(), *RENAMED,
    # embedkit parts that are not exported but live inside fitted steps
    "embedkit.cache.MemoryCache", "embedkit.cache.DiskCache",
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

    from .io import atomic_path

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
    with atomic_path(path) as tmp:
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


def is_model_folder(path) -> bool:
    """Whether ``path`` is a folder with an embedkit model manifest (whole or not: `load` checks
    the rest)."""
    try:
        manifest = json.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == FORMAT


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
    reader = Reader(path, TRUSTED_TYPES | TRUSTED_FUNCTIONS | frozenset(trusted), RENAMED)
    try:
        return reader.decode(manifest["root"])
    except (KeyError, IndexError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: could not rebuild the model from its {MANIFEST} "
                         f"({type(err).__name__}: {err}); the folder is malformed, or needs the "
                         f"library versions it was saved with ({manifest.get('versions')}).") from None


def folder_size(path) -> int:
    """Bytes of all files in a model folder (``du`` without block rounding)."""
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())

