"""Named representations and heads: what `embedkit compare`, `embedkit.search` and the CLI pair.

Each entry is a zero-argument factory plus a one-line description. Which steps fit together is
read from the classes' own declarations, never copied by hand (the forms are
`embedkit.base.FORMS`):

* a representation produces the form its ``output`` parameter names, which must be one of its
  class's ``_outputs``; ``"passthrough"`` hands the raw ``"text"`` on; a scikit-learn transformer
  without ``_outputs`` produces ``"pooled"`` (a feature matrix);
* an embedkit head accepts its class's ``_accepts``; any other scikit-learn estimator or
  pipeline accepts ``"pooled"``.

Named selections of pairs are *experiments*: the built-in ones live in `embedkit.experiments`,
and ``embedkit compare -e path/to/mine.py`` runs a file of your own, which may also name new
steps (see `load_experiment`).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "HEADS",
    "REPRESENTATIONS",
    "Entry",
    "Experiment",
    "accepted_forms",
    "compatible",
    "experiments",
    "head_forms",
    "load_experiment",
    "make_pipeline",
    "make_representation",
    "output_form",
    "representation_form",
    "select",
    "step",
]


@dataclass(frozen=True)
class Entry:
    """A named step: ``factory()`` builds a fresh estimator; ``about`` says what it is.

    ``space`` lists the values `embedkit.tune` may try for the step's key hyperparameters
    (parameter name -> list of values, the default among them; small on purpose: the search
    multiplies them). ``cost`` is a rough fit time in seconds per 1,000 short training documents
    on 2 CPU cores (from `pipelines/benchmarks/accuracy_suite.py` runs); `embedkit.tune` orders
    candidates by it and leaves out steps the budget cannot pay for. For a representation
    with a cache (a pretrained encoder), it is the first encoding's cost.
    """

    factory: Callable[[], Any]
    about: str
    space: Mapping[str, list] = field(default_factory=dict, compare=False)
    cost: float = 1.0


def _build(name: str, **params):
    import embedkit

    return getattr(embedkit, name)(**params)


def step(name: str, **params) -> Callable[[], Any]:
    """A factory for ``embedkit.<name>(**params)``; the class is imported when it is called.

    Examples
    --------
    >>> step("TfidfEmbedder", min_df=2)()
    TfidfEmbedder(min_df=2)
    """
    return functools.partial(_build, name, **params)


def _passthrough():
    return "passthrough"


def _logreg():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # scaling matters for vectors trained on small corpora (small, uneven norms); with_mean=False
    # keeps sparse TF-IDF sparse
    return make_pipeline(StandardScaler(with_mean=False), LogisticRegression(max_iter=2000))


def _logreg_cv():
    from sklearn.linear_model import LogisticRegressionCV

    # no scaling; C picked by 3-fold inner cross-validation on the training rows
    model = LogisticRegressionCV(Cs=(0.25, 1.0, 4.0, 16.0, 64.0), cv=3, max_iter=3000,
                                 scoring="accuracy")
    if "use_legacy_attributes" in model.get_params():  # scikit-learn >= 1.9: the same L2 model,
        # without the two FutureWarnings every fit prints (they flood `embedkit tune`'s progress)
        model.set_params(l1_ratios=(0.0,), use_legacy_attributes=False)
    return model


_NGRAMS = [(1, 1), (1, 2)]

REPRESENTATIONS: dict[str, Entry] = {
    "tfidf": Entry(step("TfidfEmbedder", sublinear_tf=True, min_df=2, max_features=20000),
                   "TF-IDF over words (sublinear tf, min_df=2, 20k terms), sparse",
                   {"ngram_range": _NGRAMS, "sublinear_tf": [True, False]}, cost=0.5),
    "bow": Entry(step("TfidfEmbedder", weighting="count", min_df=2),
                 "bag-of-words counts (min_df=2), sparse", {"ngram_range": _NGRAMS}, cost=0.5),
    "lsa": Entry(step("TfidfEmbedder", sublinear_tf=True, min_df=2, n_components=200),
                 "TF-IDF reduced to 200 dense dims by truncated SVD",
                 {"n_components": [100, 200, 300]}, cost=3),
    "word2vec": Entry(step("Word2VecEmbedder", sg=1, vector_size=100, epochs=5, min_count=2,
                           cache="memory"),
                      "skip-gram Word2Vec trained on the fold, mean-pooled",
                      {"vector_size": [100, 200], "epochs": [5, 10]}, cost=4),
    "fasttext": Entry(step("FastTextEmbedder", sg=1, vector_size=100, epochs=5, min_count=2,
                           cache="memory"),
                      "skip-gram FastText (char 3-6 grams) trained on the fold, mean-pooled",
                      {"vector_size": [100, 200], "epochs": [5, 10]}, cost=8),
    "glove": Entry(step("GloveEmbedder", cache="memory"), "pretrained GloVe 6B 50d, mean-pooled",
                   cost=1),
    "glove-sif": Entry(step("GloveEmbedder", pooling="sif", cache="memory"),
                       "pretrained GloVe 6B 50d, SIF-weighted", cost=1),
    "glove-seq": Entry(step("GloveEmbedder", output="sequence", max_length=256, cache="memory"),
                       "pretrained GloVe 6B 50d word vectors (256 max)", cost=2),
    "doc2vec": Entry(step("Doc2VecEmbedder", dm=0, vector_size=100, epochs=20, min_count=2,
                          cache="memory"),
                     "Doc2Vec PV-DBOW, 100 dims, trained on the fold",
                     {"vector_size": [100, 200], "epochs": [20, 40]}, cost=6),
    "minilm": Entry(step("TransformerEmbedder", max_length=256, cache="memory"),
                    "frozen all-MiniLM-L6-v2, mean-pooled, 384 dims (cached)", cost=40),
    "minilm-tokens": Entry(step("TransformerEmbedder", output="sequence", max_length=128,
                                cache="memory"),
                           "frozen MiniLM word-piece vectors (128 max)", cost=35),
    "learned": Entry(step("TokenIndexer", min_count=2, max_length=400),
                     "token ids; the head learns its embedding from scratch",
                     {"min_count": [1, 2]}, cost=0.5),
    "passthrough": Entry(_passthrough, "raw text, for heads that own their encoder", cost=0),
    "nbsvm": Entry(step("TfidfEmbedder", ngram_range=(1, 2), min_df=2, sublinear_tf=True,
                        log_count_ratio=True),
                   "NBSVM: word 1-2 gram TF-IDF times NB log-count ratios (supervised), sparse",
                   {"ngram_range": [(1, 2), (1, 3)], "nb_alpha": [0.5, 1.0]},
                   cost=1),
    "nbsvm-char": Entry(step("TfidfEmbedder", ngram_range=(1, 2), char_ngram_range=(2, 5),
                             min_df=2, sublinear_tf=True, log_count_ratio=True),
                        "NBSVM over word 1-2 grams + char 2-5 grams (supervised), sparse", cost=30),
}

HEADS: dict[str, Entry] = {
    "mlp": Entry(step("MLPClassifier", hidden_layer_sizes=(128,), epochs=10),
                 "MLP, one hidden layer of 128, 10 epochs (torch/skorch)",
                 {"hidden_layer_sizes": [(128,), (256,)], "epochs": [10, 20]}, cost=20),
    "linear": Entry(step("MLPClassifier", hidden_layer_sizes=(), epochs=30, lr=3e-3),
                    "softmax regression trained with skorch", {"lr": [1e-3, 3e-3]}, cost=10),
    "logreg": Entry(_logreg, "StandardScaler + scikit-learn LogisticRegression",
                    {"logisticregression__C": [0.1, 1.0, 10.0]}, cost=1),
    "conv": Entry(step("ConvClassifier", kernel_sizes=(2, 3, 4), filters=64, epochs=10),
                  "Conv1D, kernels 2/3/4 x 64 filters, max over time", {"filters": [64, 128]},
                  cost=20),
    "rnn": Entry(step("RNNClassifier", cell="lstm", bidirectional=True, pooling="max", epochs=10),
                 "bidirectional LSTM, max pooling over time", {"hidden_size": [64, 128]},
                 cost=40),
    "gru": Entry(step("RNNClassifier", cell="gru", pooling="last", epochs=10),
                 "GRU acceptor (last step)", {"hidden_size": [64, 128]}, cost=30),
    "attention": Entry(step("AttentionClassifier", epochs=10),
                       "attention pooling with a learned query + MLP", {"epochs": [10, 20]},
                       cost=15),
    "selfattention": Entry(step("SelfAttentionClassifier", num_layers=2, epochs=10),
                           "2 Transformer encoder blocks, CLS pooling", {"num_layers": [1, 2]},
                           cost=40),
    "finetune": Entry(step("TransformerClassifier", fine_tune="full", epochs=2, max_length=128),
                      "MiniLM fine-tuned end to end, 2 epochs (slow on CPU)",
                      {"lr": [3e-5, 5e-5]}, cost=75),
    "finetune-short": Entry(step("TransformerClassifier", fine_tune="last_k", k=6, lr=1e-4,
                                 batch_size=32, epochs=2, max_length=64),
                            "MiniLM fine-tuned for short texts: 2 epochs, batch 32, lr 1e-4, "
                            "its six blocks trained, word embeddings frozen",
                            {"lr": [5e-5, 1e-4]}, cost=40),
    "logreg-cv": Entry(_logreg_cv, "LogisticRegression, C by inner 3-fold CV, no scaling", cost=2),
    "stack": Entry(step("EnsembleClassifier", members=("nbsvm:logreg-cv", "minilm:logreg-cv")),
                   "stacking of NBSVM + LR and MiniLM + LR (raw text, after passthrough)",
                   cost=70),
    "vote-finetune": Entry(step("EnsembleClassifier", method="vote",
                                members=("passthrough:finetune-short", "nbsvm-char:logreg-cv",
                                         "minilm:logreg-cv")),
                           "mean probability of fine-tuned MiniLM, NBSVM (+char) + LR and "
                           "MiniLM + LR (one fine-tuning; slow on CPU)", cost=120),
}

#: what `embedkit compare` runs when no selection is given
DEFAULT_REPRESENTATIONS = ("tfidf", "word2vec", "fasttext", "glove", "doc2vec", "minilm")
DEFAULT_HEADS = ("logreg", "mlp")
QUICK_REPRESENTATIONS = ("tfidf",)
QUICK_HEADS = ("logreg", "mlp")


# -- compatibility, from the classes' declarations -------------------------------------------
def output_form(representation) -> str:
    """The form a representation step produces (one of `embedkit.base.FORMS`).

    Examples
    --------
    >>> from embedkit import GloveEmbedder
    >>> output_form(GloveEmbedder(output="sequence")), output_form("passthrough")
    ('sequence', 'text')
    """
    if isinstance(representation, str) and representation == "passthrough":
        return "text"
    declared = getattr(type(representation), "_outputs", None)
    if declared is None:  # a scikit-learn transformer: a feature matrix, one row per document
        return "pooled"
    output = getattr(representation, "output", declared[0])
    if output not in declared:
        raise ValueError(f"{type(representation).__name__}(output={output!r}) cannot produce that "
                         f"form; it produces {', '.join(map(repr, declared))}.")
    return output


def accepted_forms(head) -> tuple[str, ...]:
    """The forms a head step accepts (embedkit heads declare theirs; others read a matrix).

    Examples
    --------
    >>> from embedkit import RNNClassifier
    >>> accepted_forms(RNNClassifier())
    ('sequence', 'ids')
    """
    declared = getattr(type(head), "_accepts", None)
    return tuple(declared) if declared is not None else ("pooled",)


@functools.cache
def representation_form(entry: Entry) -> str:
    """`output_form` of the step ``entry`` builds (computed once per entry)."""
    return output_form(entry.factory())


@functools.cache
def head_forms(entry: Entry) -> tuple[str, ...]:
    """`accepted_forms` of the step ``entry`` builds (computed once per entry)."""
    return accepted_forms(entry.factory())


def compatible(representation: Entry, head: Entry) -> bool:
    """True when the head accepts the form the representation produces."""
    return representation_form(representation) in head_forms(head)


# -- selections and experiments --------------------------------------------------------------
@dataclass(frozen=True)
class Experiment:
    """Compatible ``(representation, head)`` name pairs and the entries the names refer to."""

    pairs: tuple[tuple[str, str], ...]
    representations: Mapping[str, Entry] = field(default_factory=lambda: REPRESENTATIONS)
    heads: Mapping[str, Entry] = field(default_factory=lambda: HEADS)
    about: str = ""


def _check_names(names, registry: Mapping[str, Entry], what: str) -> None:
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ValueError(f"unknown {what}(s) {unknown}; choose from {sorted(registry)} "
                         "(or name your own in an experiment file: see `embedkit compare --help`).")


def _checked(pairs, representations, heads, where: str) -> tuple[tuple[str, str], ...]:
    pairs = tuple((str(r), str(h)) for r, h in pairs)
    _check_names([r for r, _ in pairs], representations, "representation")
    _check_names([h for _, h in pairs], heads, "head")
    bad = [(r, h) for r, h in pairs if not compatible(representations[r], heads[h])]
    if bad:
        r, h = bad[0]
        raise ValueError(f"{where} pairs steps that do not fit together: {bad}; {r!r} produces "
                         f"{representation_form(representations[r])!r} and {h!r} accepts "
                         f"{', '.join(head_forms(heads[h]))}.")
    return pairs


def select(representations=None, heads=None, *, quick: bool = False,
           experiment: str | Path | None = None) -> Experiment:
    """Every compatible pair of a representation x head selection, or a named experiment.

    Parameters
    ----------
    representations, heads : list of str, optional
        Names from `REPRESENTATIONS` / `HEADS`; the defaults (or the quick ones) when None.
    quick : bool, default=False
        Use ``QUICK_REPRESENTATIONS`` x ``QUICK_HEADS`` as the defaults.
    experiment : str or Path, optional
        A built-in experiment's name or an experiment file (`load_experiment`), instead of a
        selection.

    Examples
    --------
    >>> select(["tfidf", "glove-seq"], ["logreg", "rnn"]).pairs
    (('tfidf', 'logreg'), ('glove-seq', 'rnn'))
    """
    if experiment is not None:
        if representations or heads:
            raise ValueError("give either an experiment or a representation/head selection, not both.")
        return load_experiment(experiment)
    reps = list(representations or (QUICK_REPRESENTATIONS if quick else DEFAULT_REPRESENTATIONS))
    hds = list(heads or (QUICK_HEADS if quick else DEFAULT_HEADS))
    _check_names(reps, REPRESENTATIONS, "representation")
    _check_names(hds, HEADS, "head")
    pairs = tuple((r, h) for r in reps for h in hds if compatible(REPRESENTATIONS[r], HEADS[h]))
    if not pairs:
        raise ValueError(f"no head in {hds} accepts what {reps} produce; see `embedkit compare --list`.")
    return Experiment(pairs)


def _summary(module) -> str:
    return (module.__doc__ or "").strip().split("\n")[0]


def experiments() -> dict[str, str]:
    """The built-in experiments: name -> one-line summary."""
    from . import experiments as package

    return {info.name: _summary(importlib.import_module(f"{package.__name__}.{info.name}"))
            for info in pkgutil.iter_modules(package.__path__)}


def _extra(module, attribute: str, builtin: Mapping[str, Entry], where: str) -> dict[str, Entry]:
    extra = {name: entry for name, entry in getattr(module, attribute, {}).items()
             if builtin.get(name) is not entry}  # a module may import the built-in dict
    for name, entry in extra.items():
        if name in builtin:
            raise ValueError(f"{where}: {attribute} redefines the built-in {name!r}; give your "
                             "step another name (results are recorded under it).")
        if not isinstance(entry, Entry):
            raise ValueError(f"{where}: {attribute}[{name!r}] is a {type(entry).__name__}; "
                             "write Entry(factory, 'what it is'), e.g. "
                             "Entry(step('TfidfEmbedder', min_df=2), 'TF-IDF, min_df=2').")
    return extra


def load_experiment(experiment: str | Path) -> Experiment:
    """A built-in experiment by name, or an experiment file by path.

    An experiment is a Python module: its docstring's first line is the summary
    ``embedkit compare --list`` prints, ``PAIRS`` lists ``(representation, head)`` names, and
    optional ``REPRESENTATIONS`` / ``HEADS`` dicts name steps of its own (`Entry` values, new
    names only). A file runs as Python, like any script you run: load only your own files.
    Copy ``embedkit/experiments/course_comparison.py`` to start one.

    Examples
    --------
    >>> len(load_experiment("course_comparison").pairs)
    12
    """
    from . import experiments as package

    text = str(experiment)
    builtin = [info.name for info in pkgutil.iter_modules(package.__path__)]
    if text in builtin:
        module = importlib.import_module(f"{package.__name__}.{text}")
        where = f"experiment {text!r}"
    elif text.endswith(".py") or Path(text).exists():
        path = Path(text)
        if not path.is_file():
            raise FileNotFoundError(f"experiment file {path} does not exist.")
        spec = importlib.util.spec_from_file_location(f"embedkit_experiment_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        where = str(path)
    else:
        raise ValueError(f"unknown experiment {text!r}; choose from {sorted(builtin)} or pass the "
                         "path of a .py file that defines PAIRS (copy "
                         "embedkit/experiments/course_comparison.py to start one).")
    if not hasattr(module, "PAIRS"):
        raise ValueError(f"{where} defines no PAIRS; list (representation, head) names in it, "
                         "e.g. PAIRS = [('tfidf', 'logreg')].")
    reps = {**REPRESENTATIONS, **_extra(module, "REPRESENTATIONS", REPRESENTATIONS, where)}
    hds = {**HEADS, **_extra(module, "HEADS", HEADS, where)}
    return Experiment(_checked(module.PAIRS, reps, hds, where), reps, hds, _summary(module))


def make_pipeline(representation: str, head: str):
    """A fresh ``Pipeline([("features", ...), ("head", ...)])`` for two registry names."""
    from sklearn.pipeline import Pipeline

    features = REPRESENTATIONS[representation].factory()
    return Pipeline([("features", features), ("head", HEADS[head].factory())])


# -- representations by class name (embedkit embed) ------------------------------------------
def _parse_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def make_representation(name: str, params: list[str] | None = None):
    """Build a representation from its class name (or short name) and ``key=value`` strings.

    Examples
    --------
    >>> make_representation("tfidf", ["ngram_range=(1, 2)"])
    TfidfEmbedder(ngram_range=(1, 2))
    """
    from . import representations

    names = {n.lower(): n for n in representations.__all__}
    names.update({n.lower().removesuffix("embedder"): n for n in representations.__all__})
    cls_name = names.get(name.lower())
    if cls_name is None:
        raise ValueError(f"unknown representation {name!r}; choose one of "
                         f"{sorted(representations.__all__)} (or their short names, e.g. 'transformer').")
    cls = getattr(representations, cls_name)
    kwargs = {}
    for item in params or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--param {item!r}: write key=value, e.g. --param pooling=cls.")
        kwargs[key.strip()] = _parse_value(value.strip())
    try:
        return cls(**kwargs)
    except TypeError as err:
        raise ValueError(str(err)) from None  # names the class, the closest and every parameter
