"""The catalog: named representations and heads, their aliases, and which pairs fit together.

This module is data and names only. Each entry is a zero-argument factory plus a one-line
description; a factory names its class (``step("TfidfEmbedder", min_df=2)``) and builds it through
the package's lazy exports when called, so importing the catalog imports no representation or
head, and any layer may read it: the ensemble head resolves its ``"representation:head"``
members here. Which steps fit together is read from the classes' own declarations when a
factory is called, never copied by hand (`embedkit.base.output_form`, `accepted_forms`):

* a representation produces the form its ``output`` parameter names, which must be one of its
  class's ``_outputs``; ``"passthrough"`` hands the raw ``"text"`` on; a scikit-learn transformer
  without ``_outputs`` produces ``"pooled"`` (a feature matrix);
* an embedkit head accepts its class's ``_accepts``; any other scikit-learn estimator or
  pipeline accepts ``"pooled"``.

One name per model: ``embedkit compare -r minilm``, ``embedkit embed -r minilm`` and
``REPRESENTATIONS["minilm"]`` are the same step. Class names and short class names
(``TransformerEmbedder``, ``transformer``, ``GloveEmbedder``, ``MLPClassifier``) are accepted
as aliases of the first entry that builds that class (`aliases`; ``embedkit compare --list``
prints them). An unknown name gets the closest known one ("did you mean 'glove-seq'?").

Built on the catalog: step parameters (``-p [step.]name=value``) and `make_pipeline` in
`embedkit.configure`; named selections of pairs, the baselines and experiment files in
`embedkit.experiments`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._counterparts import for_task
from ._suggest import did_you_mean
from .base import accepted_forms, non_negative, output_form, reads_non_negative

__all__ = [
    "DEFAULT_HEADS",
    "DEFAULT_REPRESENTATIONS",
    "HEADS",
    "QUICK_HEADS",
    "QUICK_REPRESENTATIONS",
    "REPRESENTATIONS",
    "Entry",
    "aliases",
    "compatible",
    "for_task",
    "head_forms",
    "TRAINS_ENCODER",
    "pair_kind",
    "pair_pipeline",
    "passthrough",
    "representation_form",
    "resolve",
    "sampled_settings",
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

    ``setup`` is the seconds (on 2 CPU cores) of a one-time preparation the step caches on disk
    (a distillation, a model's fetch), paid only while the built step's ``ready()`` says it is
    not done.

    ``gain`` is the accuracy the pair's first model is expected to add over the better five-line
    baseline, in points (the order of magnitude the accuracy suite measured), where it differs
    from its tier's (`embedkit.tuning._schedule.TIERS`); the search orders candidates by expected gain
    per estimated second.

    ``kind`` says what the step costs and where it runs, which places a pair in a tier of the
    search (`pair_kind`). A representation is ``"sparse"`` (term counts), ``"static"`` (a table
    of word or token vectors, pretrained or trained on the fold), ``"frozen"`` (a pretrained
    encoder run once over every document, its vectors cached) or ``"text"`` (raw text handed
    on). A head is ``""`` (it learns from the features it is given), ``"frozen"`` (it runs a
    frozen encoder itself), ``"finetune"`` (it trains a pretrained encoder to classify) or
    ``"contrastive"`` (it tunes a pretrained encoder on pairs of documents: SetFit); the last
    two train an encoder (`TRAINS_ENCODER`).
    """

    factory: Callable[[], Any]
    about: str
    space: Mapping[str, list] = field(default_factory=dict, compare=False)
    cost: float = 1.0
    kind: str = ""
    setup: float = 0.0
    gain: float | None = None


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


def pair_pipeline(features, head):
    """The shape of every model the library composes (`embedkit.configure.make_pipeline`,
    `embedkit.tune`'s candidates, baselines and ensembles, `embedkit.search`):
    ``Pipeline([("features", features), ("head", head)])``, built here alone. ``features`` may
    be ``"passthrough"`` (a head that reads the text itself, or a fitted ensemble's vote).

    Examples
    --------
    >>> pair_pipeline("passthrough", HEADS["logreg"].factory()).named_steps["features"]
    'passthrough'
    """
    from sklearn.pipeline import Pipeline

    return Pipeline([("features", features), ("head", head)])


def passthrough() -> str:
    """The factory of the ``"passthrough"`` step: scikit-learn's word for "no features step"."""
    return "passthrough"


def _finetune_seeds():
    # Two fine-tunings of the same recipe land on different solutions; their mean probability
    # gains what neither has alone (pipelines/benchmarks/results/defaults.md).
    members = tuple(
        (f"finetune-short-seed{seed}", pair_pipeline(
            "passthrough", HEADS["finetune-short"].factory().set_params(random_state=seed)))
        for seed in (0, 1))
    return _build("EnsembleClassifier", members=members, method="vote")


_NGRAMS = [(1, 1), (1, 2)]

REPRESENTATIONS: dict[str, Entry] = {
    "tfidf": Entry(step("TfidfEmbedder", sublinear_tf=True, min_df=2, max_features=20000),
                   "TF-IDF over words (sublinear tf, min_df=2, 20k terms), sparse",
                   {"ngram_range": [(1, 1), (1, 2), (1, 3)], "sublinear_tf": [True, False],
                    "min_df": [1, 2]}, cost=0.5, kind="sparse"),
    "bow": Entry(step("TfidfEmbedder", weighting="count", min_df=2),
                 "bag-of-words counts (min_df=2), sparse", {"ngram_range": _NGRAMS}, cost=0.5, kind="sparse"),
    "lsa": Entry(step("TfidfEmbedder", sublinear_tf=True, min_df=2, n_components=200),
                 "TF-IDF reduced to 200 dense dims by truncated SVD",
                 {"n_components": [100, 200, 300]}, cost=3, kind="sparse"),
    "word2vec": Entry(step("Word2VecEmbedder", sg=1, vector_size=100, epochs=5, min_count=2,
                           cache="memory"),
                      "skip-gram Word2Vec trained on the fold, mean-pooled",
                      {"vector_size": [100, 200], "epochs": [5, 10]}, cost=4, kind="static"),
    "fasttext": Entry(step("FastTextEmbedder", sg=1, vector_size=100, epochs=5, min_count=2,
                           cache="memory"),
                      "skip-gram FastText (char 3-6 grams) trained on the fold, mean-pooled",
                      {"vector_size": [100, 200], "epochs": [5, 10]}, cost=8, kind="static"),
    "glove": Entry(step("GloveEmbedder", cache="memory"), "pretrained GloVe 6B 50d, mean-pooled",
                   cost=1, kind="static"),
    "glove-sif": Entry(step("GloveEmbedder", pooling="sif", cache="memory"),
                       "pretrained GloVe 6B 50d, SIF-weighted", cost=1, kind="static"),
    "glove-seq": Entry(step("GloveEmbedder", output="sequence", max_length=256, cache="memory"),
                       "pretrained GloVe 6B 50d word vectors (256 max)", cost=2, kind="static"),
    "doc2vec": Entry(step("Doc2VecEmbedder", dm=0, vector_size=100, epochs=20, min_count=2,
                          cache="memory"),
                     "Doc2Vec PV-DBOW, 100 dims, trained on the fold",
                     {"vector_size": [100, 200], "epochs": [20, 40]}, cost=6, kind="static"),
    "minilm": Entry(step("TransformerEmbedder", normalize=True, max_length=256, cache="memory"),
                    "frozen all-MiniLM-L6-v2, mean-pooled and L2-normalised as "
                    "sentence-transformers encodes, 384 dims (cached)", cost=40, kind="frozen"),
    "minilm-static": Entry(step("DistilledEmbedder"),
                           "all-MiniLM-L6-v2 distilled to static token vectors (model2vec method: "
                           "PCA 256, SIF-weighted), mean of the text's tokens; distilled once "
                           "and cached (minutes, once), then no network at transform",
                           {"pca_dims": [128, 256]}, cost=1, kind="static", setup=300),
    "minilm-tokens": Entry(step("TransformerEmbedder", output="sequence", max_length=128,
                                cache="memory"),
                           "frozen MiniLM word-piece vectors (128 max)", cost=35, kind="frozen"),
    "learned": Entry(step("TokenIndexer", min_count=2, max_length=400),
                     "token ids; the head learns its embedding from scratch",
                     {"min_count": [1, 2]}, cost=0.5, kind="sparse"),
    "passthrough": Entry(passthrough, "raw text, for heads that own their encoder", cost=0, kind="text"),
    # NBSVM's features before the ratios, which the `nblr` head applies per class
    "ngrams": Entry(step("TfidfEmbedder", ngram_range=(1, 2), min_df=2, sublinear_tf=True),
                    "TF-IDF over word 1-2 grams (sublinear tf, min_df=2, no cap on terms), sparse",
                    {"ngram_range": [(1, 2), (1, 3)]}, cost=1, kind="sparse"),
    "nbsvm": Entry(step("TfidfEmbedder", ngram_range=(1, 2), min_df=2, sublinear_tf=True,
                        log_count_ratio=True),
                   "NBSVM: word 1-2 gram TF-IDF times NB log-count ratios (supervised), sparse",
                   {"ngram_range": [(1, 2), (1, 3)], "nb_alpha": [0.5, 1.0]},
                   cost=1, kind="sparse"),
    "nbsvm-char": Entry(step("TfidfEmbedder", ngram_range=(1, 2), char_ngram_range=(2, 5),
                             min_df=2, sublinear_tf=True, log_count_ratio=True),
                        "NBSVM over word 1-2 grams + char 2-5 grams (supervised), sparse", cost=30,
                        kind="sparse"),
    # the base-size encoder, fetched once (404 MB); 384 word pieces as sentence-transformers
    # encodes with it; cost: minilm's times the 7x bench_mpnet.py measures; gain: frozen mpnet
    # + LR over the better baseline on the suite's six short-text sets (0.1 to 9.8 points)
    "mpnet": Entry(step("TransformerEmbedder", model="all-mpnet-base-v2", normalize=True,
                        max_length=384, cache="memory"),
                   "frozen all-mpnet-base-v2 (base size, 12 layers), mean-pooled and "
                   "L2-normalised as sentence-transformers encodes, 768 dims (cached; fetched "
                   "once, 404 MB)", cost=280, kind="frozen", setup=30, gain=3.0),
}

HEADS: dict[str, Entry] = {
    "mlp": Entry(step("MLPClassifier", hidden_layer_sizes=(128,), epochs=10),
                 "MLP, one hidden layer of 128, 10 epochs (torch/skorch)",
                 {"hidden_layer_sizes": [(128,), (256,)], "epochs": [10, 20]}, cost=20),
    "linear": Entry(step("MLPClassifier", hidden_layer_sizes=(), epochs=30, lr=3e-3),
                    "softmax regression trained with skorch", {"lr": [1e-3, 3e-3]}, cost=10),
    # no search space: the head picks C (and scaling of dense input) by its own inner CV
    "logreg": Entry(step("LogisticRegressionHead"),
                    "logistic regression, C and scaling of dense input chosen by inner 3-fold CV "
                    "(LogisticRegressionHead)", cost=2),
    # SGD: a few passes, whatever the number of classes (issue 60); alpha by its own held-out
    # slice; the space tries FLAML's loss on wordnet-glosses (decided: bench_linear.md)
    "sgd": Entry(step("LinearSGDClassifier"),
                 "linear model trained by SGD (log-loss, L2), alpha and the probabilities' "
                 "temperature chosen on a held-out slice: fast on many rows and classes "
                 "(LinearSGDClassifier)", {"loss": ["log_loss", "modified_huber"]}, cost=0.5),
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
                      {"lr": [3e-5, 5e-5], "epochs": [2, 3]}, cost=75, kind="finetune"),
    "finetune-short": Entry(step("TransformerClassifier", fine_tune="last_k", k=6, lr=1e-4,
                                 batch_size=32, epochs=2, max_length=64),
                            "MiniLM fine-tuned for short texts: 2 epochs, batch 32, lr 1e-4, "
                            "its six blocks trained, word embeddings frozen",
                            {"lr": [5e-5, 1e-4], "epochs": [2, 3]}, cost=40, kind="finetune"),
    # few labels: SetFit's own pairs (each distinct pair once, the smaller side repeated; 20
    # rounds cost 3-4x SetFit's time: results/defaults.md) over 64 word pieces; max_steps bounds
    # large sets; the space grows the pairs to 20 rounds. gain: 2.0 points over frozen MiniLM +
    # LR at 16 documents a class, the mean of results/few_labels.md's four sets
    "setfit": Entry(step("SetFitClassifier", max_length=64, max_steps=400),
                    "SetFit: MiniLM tuned on same/other-label pairs, then LR (few labels; "
                    "slow on CPU beyond a few hundred texts)", {"num_iterations": [None, 20]},
                    cost=400, kind="contrastive", gain=2.0),
    # the same head on a shorter grid scored by accuracy, never scaling, a label set's
    # threshold 0.5 (scikit-learn's LogisticRegressionCV, one per label): SAGA on TF-IDF
    "logreg-cv": Entry(step("LogisticRegressionHead", Cs=(0.25, 1.0, 4.0, 16.0, 64.0),
                            scoring="accuracy", scale=False, threshold=0.5),
                       "LogisticRegression, C by inner 3-fold CV, no scaling", cost=2),
    # NBSVM's classifier: a two-class model per class on its own ratio-scaled features, so its
    # cost grows with the classes where nbsvm + logreg-cv's multinomial model grows with their
    # square (bench_linear.py measures both)
    "nblr": Entry(step("NBLogisticRegression"),
                  "NBSVM: a logistic regression per class on the features times its NB "
                  "log-count ratios, C by inner 3-fold CV (term counts or TF-IDF only)",
                  {"nb_alpha": [0.5, 1.0]}, cost=2),
    "stack": Entry(step("EnsembleClassifier", members=("nbsvm:logreg-cv", "minilm:logreg-cv")),
                   "stacking of NBSVM + LR and MiniLM + LR (raw text, after passthrough)",
                   cost=70, kind="frozen"),
    "finetune-seeds": Entry(_finetune_seeds,
                            "mean probability of two finetune-short models that differ only in "
                            "their seed (twice its fit time)", cost=80, kind="finetune"),
    "vote-finetune": Entry(step("EnsembleClassifier", method="vote",
                                members=("passthrough:finetune-short", "nbsvm-char:logreg-cv",
                                         "minilm:logreg-cv")),
                           "mean probability of fine-tuned MiniLM, NBSVM (+char) + LR and "
                           "MiniLM + LR (one fine-tuning; slow on CPU)", cost=120, kind="finetune"),
    # the short-text recipe on the base-size encoder: every block trained, word embeddings frozen,
    # a base model's learning rate; cost: finetune-short's times the 6.5-7x of a step
    # (bench_mpnet.py)
    "finetune-mpnet": Entry(step("TransformerClassifier", model="all-mpnet-base-v2",
                                 fine_tune="last_k", k=12, lr=5e-5, batch_size=32, epochs=2,
                                 max_length=64),
                            "all-mpnet-base-v2 fine-tuned for short texts: 2 epochs, batch 32, "
                            "lr 5e-5, its twelve blocks trained, word embeddings frozen (a GPU's "
                            "work; slow on CPU)", {"lr": [3e-5, 5e-5], "epochs": [2, 3]}, cost=280,
                            kind="finetune", setup=30, gain=6.0),
}

#: what `embedkit compare` runs when no selection is given
DEFAULT_REPRESENTATIONS = ("tfidf", "word2vec", "fasttext", "glove", "doc2vec", "minilm")
DEFAULT_HEADS = ("logreg", "mlp")
QUICK_REPRESENTATIONS = ("tfidf",)
QUICK_HEADS = ("logreg", "mlp")


# -- compatibility, from the classes' declarations (`embedkit.base.output_form`) -----------
@functools.cache
def representation_form(entry: Entry) -> str:
    """`output_form` of the step ``entry`` builds (computed once per entry)."""
    return output_form(entry.factory())


@functools.cache
def head_forms(entry: Entry) -> tuple[str, ...]:
    """`accepted_forms` of the step ``entry`` builds (computed once per entry)."""
    return accepted_forms(entry.factory())


#: the pair kinds that train a pretrained encoder (what ``finetune=False`` leaves out)
TRAINS_ENCODER = ("finetune", "contrastive")


def pair_kind(representation: str, head: str) -> str:
    """What a ``(representation, head)`` pair is, from its entries' ``kind``: the head's when it
    has one (a head that fine-tunes or runs an encoder decides the pair's cost), else the
    representation's.

    Examples
    --------
    >>> pair_kind("tfidf", "logreg"), pair_kind("minilm", "mlp"), pair_kind("passthrough", "finetune")
    ('sparse', 'frozen', 'finetune')
    """
    return HEADS[head].kind or REPRESENTATIONS[representation].kind


@functools.cache
def _signs_fit(representation: Entry, head: Entry) -> bool:
    built = head.factory()
    return not reads_non_negative(built) or non_negative(representation.factory())


def compatible(representation: Entry, head: Entry) -> bool:
    """True when the head accepts the form the representation produces, and, for a head of
    counts (NBSVM's ``nblr``), features that are never negative."""
    return representation_form(representation) in head_forms(head) and _signs_fit(representation, head)


# -- names: one per model, aliases, did-you-mean ---------------------------------------------
def _class_entries(registry: Mapping[str, Entry], suffixes: tuple[str, ...]) -> dict[str, str]:
    """``{alias: entry name}`` for each embedkit class that some entry builds."""
    built: dict[str, str] = {}
    for name, entry in registry.items():  # the first entry that builds a class stands for it
        cls = type(entry.factory())
        if cls.__module__.startswith("embedkit."):
            built.setdefault(cls.__name__, name)
    out = {}
    for cls, name in built.items():
        out[cls] = name
        short = cls
        for suffix in suffixes:
            short = short.removesuffix(suffix)
        if short != cls:
            out.setdefault(short.lower(), name)
    return {alias: name for alias, name in out.items() if alias not in registry}


@functools.cache
def aliases() -> dict[str, dict[str, str]]:
    """Accepted aliases: ``{"representation": {alias: name}, "head": {alias: name}}``.

    A class name (and its short form, without ``Embedder`` / ``Classifier`` / ``Head``) stands for the
    first entry that builds that class, so ``transformer`` and ``TransformerEmbedder`` mean
    ``minilm``, ``MLPClassifier`` means ``mlp``. Lookups ignore case.

    Examples
    --------
    >>> aliases()["representation"]["transformer"], aliases()["head"]["RNNClassifier"]
    ('minilm', 'rnn')
    """
    return {"representation": _class_entries(REPRESENTATIONS, ("Embedder",)),
            "head": _class_entries(HEADS, ("Classifier", "Head"))}


def resolve(name: str, what: str, registry: Mapping[str, Entry] | None = None) -> str:
    """The registry name that ``name`` (a name or an alias) refers to; a clear error if none.

    Parameters
    ----------
    name : str
    what : {"representation", "head"}
    registry : mapping, optional
        The names in force (an experiment's); `REPRESENTATIONS` / `HEADS` by default.

    Examples
    --------
    >>> resolve("TransformerEmbedder", "representation"), resolve("glove", "representation")
    ('minilm', 'glove')
    """
    if registry is None:
        registry = REPRESENTATIONS if what == "representation" else HEADS
    if name in registry:
        return name
    known = aliases()[what]
    folded = {alias.lower(): target for alias, target in known.items()}
    target = folded.get(str(name).lower())
    if target is not None and target in registry:
        return target
    flag = "-r" if what == "representation" else "-H"
    raise ValueError(f"unknown {what} {name!r}.{did_you_mean(name, [*registry, *known])} Choose "
                     f"from {', '.join(registry)} (`embedkit compare --list` shows each with its "
                     f"aliases), e.g. {flag} {next(iter(registry))}.")


def sampled_settings(representation: str, head: str, n: int | None, seed: int) -> list[dict]:
    """Up to ``n`` (None: all) settings of the pair's registry ``space`` other than its
    defaults, in a random order."""
    from sklearn.model_selection import ParameterSampler

    rep, hd = REPRESENTATIONS[representation], HEADS[head]
    space = {**{f"features__{k}": list(v) for k, v in rep.space.items()},
             **{f"head__{k}": list(v) for k, v in hd.space.items()}}
    if not space:
        return []
    steps = {"features": rep.factory(), "head": hd.factory()}
    defaults = {k: steps[k.split("__")[0]].get_params()[k.split("__", 1)[1]] for k in space}
    size = math.prod(len(v) for v in space.values())
    out: list[dict] = []
    for draw in ParameterSampler(space, n_iter=size, random_state=seed):
        changed = {k: v for k, v in sorted(draw.items()) if defaults[k] != v}
        if changed and changed not in out:
            out.append(changed)
    return out[:n]
