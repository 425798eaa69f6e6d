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

One name per model: ``embedkit compare -r minilm``, ``embedkit embed -r minilm`` and
``REPRESENTATIONS["minilm"]`` are the same step. Class names and short class names
(``TransformerEmbedder``, ``transformer``, ``GloveEmbedder``, ``MLPClassifier``) are accepted
as aliases of the first entry that builds that class (`aliases`; ``embedkit compare --list``
prints them). An unknown name gets the closest known one ("did you mean 'glove-seq'?").

Step parameters are set with ``[step.]name=value`` strings (``embedkit compare -p
head.epochs=3``), resolved against the estimator's own parameters and checked before any work
(`parse_params`, `configure`, `check_values`).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import get_scorer_names
from sklearn.utils._param_validation import Interval, StrOptions

from ._params import THRESHOLD, did_you_mean
from .base import store_params

__all__ = [
    "BASELINES",
    "HEADS",
    "REPRESENTATIONS",
    "Entry",
    "Experiment",
    "LogisticRegressionHead",
    "Param",
    "accepted_forms",
    "aliases",
    "check_values",
    "compatible",
    "configure",
    "did_you_mean",
    "experiments",
    "head_forms",
    "load_experiment",
    "logreg_head",
    "make_pipeline",
    "make_representation",
    "output_form",
    "parse_params",
    "representation_form",
    "resolve",
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


class LogisticRegressionHead(ClassifierMixin, BaseEstimator):
    """Logistic regression whose strength, and whether dense input is standardised, are chosen
    by inner cross-validation: the registry's ``logreg`` head.

    Why not ``StandardScaler + LogisticRegression`` (the head before): scaling sparse TF-IDF
    columns to unit variance blows up rare terms, and a fixed ``C=1`` over-regularises TF-IDF.
    So sparse input is never scaled; dense input is fitted both as it is and standardised (then
    divided by the square root of its dimension, so a row has about unit norm and one grid of
    ``Cs`` suits both), and the candidate with the better inner cross-validation score is kept:
    scaling is used where it helps (vectors trained on a small corpus, with small, uneven norms)
    and not elsewhere. Each candidate is a `sklearn.linear_model.LogisticRegressionCV` (a
    warm-started path over ``Cs``, L2 penalty, lbfgs, log-loss).

    Measured with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python
    pipelines/benchmarks/head_defaults.py --train 3000 --test 1000`` (accuracy in %; test
    slices of 445 / 500 / 968 documents; each dataset split as the accuracy suite splits it,
    then cut to at most 3,000 training documents): ``lr`` is the plain baselines'
    ``LogisticRegression(max_iter=3000)``, ``scaled-lr`` the head before, ``cv`` /
    ``scaled-cv`` ``LogisticRegressionCV`` over the same ``Cs`` without / with
    ``StandardScaler(with_mean=False)``, ``auto`` this head, ``logreg-cv`` the registry's head
    of that name. ``plain-tfidf`` is the baseline's ``TfidfVectorizer``; the other rows are the
    registry's representations.

    ====================  =====  =========  =====  =========  =====  =========
    dataset, features        lr  scaled-lr     cv  scaled-cv   auto  logreg-cv
    ====================  =====  =========  =====  =========  =====  =========
    bbc-news plain-tfidf   98.2       98.9   98.7       98.4   98.7       98.7
    bbc-news tfidf         98.2       98.4   98.7       98.2   98.7       98.9
    bbc-news tfidf-bi      98.7       98.9   98.9       99.1   98.9       98.9
    bbc-news minilm        97.8       97.8   97.3       97.8   97.3       98.0
    bbc-news glove         95.7       96.4   96.2       96.0   96.2       96.2
    bbc-news word2vec      94.6       96.6   95.7       96.4   96.0       95.5
    bbc-news fasttext      95.3       96.0   95.7       96.0   96.0       95.5
    bbc-news doc2vec       98.2       98.0   98.2       98.2   98.2       98.4
    trec plain-tfidf       84.2       86.4   89.2       86.2   89.2       86.8
    trec tfidf             83.4       80.0   86.0       80.8   86.0       85.6
    trec tfidf-bi          87.0       86.6   89.4       86.4   89.4       89.4
    trec minilm            89.0       84.4   88.4       89.4   88.4       89.2
    trec glove             68.0       67.0   68.2       68.0   68.2       66.0
    trec word2vec          45.6       72.0   63.6       71.0   71.2       62.2
    trec fasttext          38.4       67.0   54.8       70.2   67.2       55.0
    trec doc2vec           37.4       55.4   53.0       49.4   53.0       52.6
    sms-spam plain-tfidf   96.1       98.2   98.9       98.2   98.9       99.0
    sms-spam tfidf         97.0       98.0   98.9       98.2   98.9       98.9
    sms-spam tfidf-bi      96.2       98.0   98.9       98.3   98.9       98.9
    sms-spam minilm        98.1       98.8   98.8       98.9   98.7       98.7
    sms-spam glove         95.1       95.8   95.8       95.8   95.2       95.6
    sms-spam word2vec      96.9       97.9   97.7       98.2   97.6       97.8
    sms-spam fasttext      97.2       97.5   97.6       97.9   97.5       97.5
    sms-spam doc2vec       97.4       91.1   93.5       93.0   93.5       92.7
    ====================  =====  =========  =====  =========  =====  =========

    Against the plain baselines (the rule: never behind by more than noise): registry TF-IDF +
    this head vs plain TF-IDF + LR is +0.5 / +1.8 / +2.8 points on BBC / TREC / SMS; GloVe +
    this head vs GloVe + LR +0.5 / +0.2 / +0.1. MiniLM + this head vs plain MiniLM + LR is -0.5
    / -0.6 / +0.6: two and three test documents on BBC and TREC. On TREC with its full 5,452
    training questions the gap is -1.2 (six of 500 questions; the accuracy suite): there the
    inner CV's accuracy rises from C=1 to C=10 (83.0 -> 84.8) while TREC's official test
    questions, from another TREC year, prefer C=1 (91.4 -> 90.2). ``scaled-lr`` (the head
    before) loses up to 3.4 points to plain LR on TF-IDF (TREC) and 4.6 on MiniLM; ``scaled-cv``
    is as costly and loses on sparse input; ``logreg-cv`` (C by accuracy) falls 2 points behind
    on GloVe / TREC. Doc2Vec on SMS (plain LR 97.4, every CV-tuned head about 93) is a Doc2Vec
    matter: inner folds see trained document vectors, the test inferred ones. Head fit seconds
    summed over the representations (one thread; the ``cv``/``scaled-cv``/``auto`` columns were
    rerun with the half-decade grid while two other jobs shared the 2 cores): BBC 5.5 plain LR,
    131 this head; TREC 1.1 / 55; SMS 0.2 / 5.0 (with the decade grid, on a quieter machine:
    33 / 23 / 2.3).

    Parameters
    ----------
    Cs : sequence of float, default=(0.01, 0.0316, 0.1, 0.316, 1, 3.16, 10, 31.6, 100)
        Inverse regularisation strengths tried: half-decade steps. A decade grid (0.01, 0.1, 1,
        10, 100) made the log-loss choice jump from 1 to 10 where the optimum lies between, and
        C=10 over-fits short texts: `pipelines/benchmarks/accuracy_suite.py` scored `tfidf +
        logreg` on disaster-tweets 80.0% with the decade grid and 81.1% with this one, beside
        81.2% for plain TF-IDF + LR (the head's fit seconds: the table's paragraph above).
    cv : int, default=3
        Inner stratified folds.
    scoring : str, default="neg_log_loss"
        What the inner cross-validation maximises (log-loss is smoother than accuracy on small
        folds).
    scale : {"auto", True, False}, default="auto"
        Standardise dense input: chosen by the inner cross-validation, always, or never.
        Sparse input is never scaled.
    max_iter : int, default=3000
    class_weight : dict, "balanced" or None, default=None
        A dict applies to single-label targets; with multi-label targets "balanced" balances
        each label's own two-class problem.
    threshold : float in (0, 1) or "tune", default="tune"
        Multi-label targets only: a label is predicted where its probability exceeds this.
        "tune" refits each label's model at its chosen C on the inner folds and keeps the value
        among 0.05, 0.10, ..., 0.95 that maximises micro-F1 of the out-of-fold probabilities
        (`embedkit.heads._base.tune_threshold`). Rare labels are why it is the default: on
        ``movie-genres`` (8,000 titles, 7 genres, 80/20 split) 0.5 predicts almost none of them,
        micro-F1 0.26, where the tuned value (0.25) gives 0.50.

    Attributes
    ----------
    classes_ : ndarray
        The classes; for multi-label targets the label names of a list of label lists, or
        ``arange(n_labels)`` for an indicator matrix.
    multilabel_ : bool
        Whether ``y`` was multi-label: a 0/1 indicator matrix or a list of label lists
        (scikit-learn's conventions, `embedkit.heads._base.encode_targets`). Then each label is
        its own two-class problem (scikit-learn's `OneVsRestClassifier` around the
        cross-validated model), ``predict_proba`` gives each label's probability and
        ``predict`` the int 0/1 indicator matrix.
    scaled_ : bool
        Whether the kept model reads standardised input.
    model_ : LogisticRegressionCV or OneVsRestClassifier
        The refitted model (``model_.C_`` is the chosen C; per label in
        ``model_.estimators_`` for multi-label targets).
    cv_scores_ : dict
        Best mean inner score of each candidate (``{"raw": ..., "scaled": ...}``; averaged over
        the labels for multi-label targets).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(60, 5)); y = (X[:, 0] > 0).astype(int)
    >>> LogisticRegressionHead().fit(X, y).score(X, y) > 0.9
    True
    """

    _parameter_constraints: ClassVar[dict] = {  # scikit-learn's table, checked at the start of fit
        "Cs": ["array-like"],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "scoring": [StrOptions(set(get_scorer_names())), callable],
        "scale": [StrOptions({"auto"}), "boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "threshold": THRESHOLD,
    }

    def __init__(self, Cs=(0.01, 0.0316, 0.1, 0.316, 1.0, 3.16, 10.0, 31.6, 100.0), cv: int = 3,
                 scoring: str = "neg_log_loss", scale="auto", max_iter: int = 3000,
                 class_weight=None, threshold="tune"):
        store_params(self, locals())

    def _model(self):
        from sklearn.linear_model import LogisticRegressionCV

        return LogisticRegressionCV(Cs=list(self.Cs), cv=self.cv, scoring=self.scoring,
                                    l1_ratios=(0.0,), max_iter=self.max_iter,
                                    class_weight=self.class_weight, use_legacy_attributes=False)

    def _standardise(self, X):
        return (X - self.mean_) / self.scale_

    def fit(self, X, y):
        """Fit each candidate (raw, standardised) with an inner CV over ``Cs``; keep the best."""
        import scipy.sparse as sp
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.utils.validation import _num_samples, validate_data

        from .heads._base import encode_targets

        self._validate_params()
        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32))
        if _num_samples(y) != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {_num_samples(y)}; they must "
                             "match row for row.")
        classes, encoded, self.multilabel_ = encode_targets(y, type(self).__name__)
        if self.multilabel_:
            if isinstance(self.class_weight, dict):
                raise ValueError("LogisticRegressionHead(class_weight={...}): a dict of class "
                                 "weights applies to single-label targets; y is multi-label. Use "
                                 "class_weight='balanced' (per label) or None.")
            y = encoded.astype(np.int64)
        else:
            y = classes[encoded]
        candidates = [False] if sp.issparse(X) else {"auto": [False, True], True: [True],
                                                    False: [False]}[self.scale]
        if True in candidates:
            std = X.std(axis=0)
            self.mean_ = X.mean(axis=0)
            self.scale_ = np.where(std > 0, std, 1.0) * np.sqrt(X.shape[1])
        fitted = {}
        for scaled in candidates:
            model = self._model()
            if self.multilabel_:  # scikit-learn's multi-label wrapper: one model per label
                model = OneVsRestClassifier(model)
            model.fit(self._standardise(X) if scaled else X, y)
            per_label = model.estimators_ if self.multilabel_ else [model]
            score = np.mean([m.scores_.mean(axis=0).max() for m in per_label])
            fitted[scaled] = (model, float(score))
        self.scaled_ = max(fitted, key=lambda c: (fitted[c][1], not c))  # ties: no scaling
        self.model_ = fitted[self.scaled_][0]
        self.cv_scores_ = {("scaled" if c else "raw"): score for c, (_, score) in fitted.items()}
        self.classes_ = classes if self.multilabel_ else self.model_.classes_
        if self.multilabel_:
            self.threshold_ = (self._out_of_fold_threshold(X, y) if self.threshold == "tune"
                               else float(self.threshold))
        return self

    def _out_of_fold_threshold(self, X, y: np.ndarray) -> float:
        """`tune_threshold` on out-of-fold probabilities: each label's model refitted at its
        chosen C on the inner folds (the folds LogisticRegressionCV used)."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold, cross_val_predict

        from .heads._base import tune_threshold

        X = self._standardise(X) if self.scaled_ else X
        proba = [cross_val_predict(
            LogisticRegression(C=float(np.ravel(model.C_)[0]), max_iter=self.max_iter,
                               class_weight=self.class_weight),
            X, y[:, j], cv=StratifiedKFold(self.cv), method="predict_proba")[:, 1]
            for j, model in enumerate(self.model_.estimators_)]
        return tune_threshold(np.column_stack(proba), y)

    def _input(self, X):
        from sklearn.utils.validation import check_is_fitted, validate_data

        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32), reset=False)
        return self._standardise(X) if self.scaled_ else X

    def decision_function(self, X):
        return self.model_.decision_function(self._input(X))

    def predict(self, X):
        if self.multilabel_:
            from .heads._base import multilabel_decisions

            return multilabel_decisions(self.predict_proba(X), self.threshold_)
        return self.model_.predict(self._input(X))

    def predict_proba(self, X):
        return self.model_.predict_proba(self._input(X))

    def predict_log_proba(self, X):
        if self.multilabel_:
            with np.errstate(divide="ignore"):
                return np.log(self.predict_proba(X))
        return self.model_.predict_log_proba(self._input(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        return tags


def logreg_head() -> LogisticRegressionHead:
    """The registry's ``logreg`` head: `LogisticRegressionHead` with its defaults."""
    return LogisticRegressionHead()


def _logreg_cv():
    from sklearn.linear_model import LogisticRegressionCV

    # no scaling; C picked by 3-fold inner cross-validation on the training rows
    model = LogisticRegressionCV(Cs=(0.25, 1.0, 4.0, 16.0, 64.0), cv=3, max_iter=3000,
                                 scoring="accuracy")
    if "use_legacy_attributes" in model.get_params():  # scikit-learn >= 1.9: the same L2 model,
        # without the two FutureWarnings every fit prints (they flood `embedkit tune`'s progress)
        model.set_params(l1_ratios=(0.0,), use_legacy_attributes=False)
    return model


def _finetune_seeds():
    # Two fine-tunings of the same recipe land on different solutions (on disaster-tweets 5% of
    # the test tweets are predicted differently by seeds 0 and 1); their mean probability
    # gains what neither has alone (accuracy suite, issue 13).
    from .heads.ensemble import EnsembleClassifier

    members = tuple((f"finetune-short-seed{seed}",
                     make_pipeline("passthrough", "finetune-short", [f"head.random_state={seed}"]))
                    for seed in (0, 1))
    return EnsembleClassifier(members=members, method="vote")


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
    "minilm": Entry(step("TransformerEmbedder", normalize=True, max_length=256, cache="memory"),
                    "frozen all-MiniLM-L6-v2, mean-pooled and L2-normalised as "
                    "sentence-transformers encodes, 384 dims (cached)", cost=40),
    "minilm-static": Entry(step("DistilledEmbedder"),
                           "all-MiniLM-L6-v2 distilled to static token vectors (model2vec method: "
                           "PCA 256, SIF-weighted), mean of the text's tokens; distilled once "
                           "and cached (minutes, once), then no network at transform",
                           {"pca_dims": [128, 256]}, cost=1),
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
    # no search space: the head picks C (and scaling of dense input) by its own inner CV
    "logreg": Entry(logreg_head, "logistic regression, C and scaling of dense input chosen "
                                 "by inner 3-fold CV (LogisticRegressionHead)", cost=2),
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
    # few labels: SetFit's 20 pair rounds (5 lost to frozen MiniLM on 2 of 4 suite datasets at
    # 8 per class; pipelines/benchmarks/few_labels.py) and 64 word pieces make 16 labelled texts
    # 40 steps of 16 pairs (1-3 min on the shared 2-core machine); max_steps bounds large sets
    "setfit": Entry(step("SetFitClassifier", num_iterations=20, max_length=64, max_steps=400),
                    "SetFit: MiniLM tuned on same/other-label pairs, then LR (few labels; "
                    "slow on CPU beyond a few hundred texts)", {"num_iterations": [5, 20]},
                    cost=400),
    "logreg-cv": Entry(_logreg_cv, "LogisticRegression, C by inner 3-fold CV, no scaling", cost=2),
    "stack": Entry(step("EnsembleClassifier", members=("nbsvm:logreg-cv", "minilm:logreg-cv")),
                   "stacking of NBSVM + LR and MiniLM + LR (raw text, after passthrough)",
                   cost=70),
    "finetune-seeds": Entry(_finetune_seeds,
                            "mean probability of two finetune-short models that differ only in "
                            "their seed (twice its fit time)", cost=80),
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


# -- names: one per model, aliases, did-you-mean ---------------------------------------------
def _class_entries(package: str, registry: Mapping[str, Entry], suffixes: tuple[str, ...]):
    """``{alias: entry name}`` for each class of ``embedkit.<package>`` that some entry builds."""
    module = importlib.import_module(f"embedkit.{package}")
    built = {}
    for name, entry in registry.items():  # the first entry that builds a class stands for it
        built.setdefault(type(entry.factory()).__name__, name)
    out = {}
    for cls in module.__all__:
        if cls in built:
            short = cls
            for suffix in suffixes:
                short = short.removesuffix(suffix)
            out[cls] = built[cls]
            if short != cls:
                out.setdefault(short.lower(), built[cls])
    return {alias: name for alias, name in out.items() if alias not in registry}


@functools.cache
def aliases() -> dict[str, dict[str, str]]:
    """Accepted aliases: ``{"representation": {alias: name}, "head": {alias: name}}``.

    A class name (and its short form, without ``Embedder`` / ``Classifier``) stands for the
    first entry that builds that class, so ``transformer`` and ``TransformerEmbedder`` mean
    ``minilm``, ``MLPClassifier`` means ``mlp``. Lookups ignore case.

    Examples
    --------
    >>> aliases()["representation"]["transformer"], aliases()["head"]["RNNClassifier"]
    ('minilm', 'rnn')
    """
    return {"representation": _class_entries("representations", REPRESENTATIONS, ("Embedder",)),
            "head": _class_entries("heads", HEADS, ("Classifier",))}


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


# -- step parameters: -p [step.]name=value ----------------------------------------------------
@dataclass(frozen=True)
class Param:
    """One ``[step.]name=value`` setting: ``step`` is ``"features"``, ``"head"``, a step's
    registry name, or None (whichever step has a parameter of that name)."""

    step: str | None
    name: str
    value: Any
    text: str


def _parse_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_params(items) -> tuple[Param, ...]:
    """Parse ``"[step.]name=value"`` strings; values are Python literals, else strings.

    Examples
    --------
    >>> parse_params(["head.epochs=3", "pooling=sif"])[0]
    Param(step='head', name='epochs', value=3, text='head.epochs=3')
    """
    out = []
    for item in items or ():
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"-p {item!r}: write [step.]name=value, e.g. -p head.epochs=3 or "
                             "-p features.pooling=sif.")
        step_, dot, name = key.rpartition(".")
        out.append(Param(step_ if dot else None, name, _parse_value(value.strip()), str(item)))
    return tuple(out)


def _settable(estimator) -> dict[str, str]:
    """``{name a user may write: set_params key}``: the estimator's parameters, its nested ones
    (``step__name``) and, for a Pipeline, each step's bare names where they are unambiguous."""
    if isinstance(estimator, str) or not hasattr(estimator, "get_params"):
        return {}
    names = {k: k for k in estimator.get_params(deep=True)}
    bare: dict[str, list[str]] = {}
    for step_name, part in getattr(estimator, "steps", ()):
        if hasattr(part, "get_params"):
            for k in part.get_params(deep=False):
                bare.setdefault(k, []).append(f"{step_name}__{k}")
    names.update({k: v[0] for k, v in bare.items() if len(v) == 1 and k not in names})
    return names


def _estimators(estimator):
    """The estimator and, for a Pipeline, its steps (recursively)."""
    if isinstance(estimator, str) or estimator is None:
        return []
    out = [estimator]
    for _, part in getattr(estimator, "steps", ()):
        out.extend(_estimators(part))
    return out


def check_values(estimator) -> None:
    """Check an estimator's parameter values (every step of a Pipeline) before any work.

    This is the one place that points at the parameter tables: a class with a
    ``_parameter_constraints`` table is checked against it (embedkit's by
    ``embedkit._params.validate_params`` where that module exists, scikit-learn's by
    ``_validate_params``); any other by its own ``_check_params``, if it has one.

    Raises
    ------
    ValueError
        Naming the estimator, the parameter, the value and what is allowed.
    """
    try:
        from ._params import validate_params
    except ImportError:  # before the parameter tables: each class's own checks
        validate_params = None
    for part in _estimators(estimator):
        declared = hasattr(type(part), "_parameter_constraints")
        if declared and validate_params is not None and type(part).__module__.startswith("embedkit."):
            validate_params(part)
        elif declared and hasattr(part, "_validate_params"):  # scikit-learn's own table
            part._validate_params()
        elif hasattr(part, "_check_params"):
            part._check_params()


def configure(estimator, params: Mapping[str, Any], label: str = ""):
    """A clone of ``estimator`` with ``params`` set and checked (`check_values`).

    Names are the estimator's own (``epochs``), nested ones (``logisticregressioncv__Cs``) or,
    for a Pipeline, a step's bare name where only one step has it. An unknown name gets the
    closest valid one.

    Examples
    --------
    >>> configure(HEADS["mlp"].factory(), {"epochs": 3}).epochs
    3
    """
    from sklearn.base import clone

    if not params:
        return estimator
    label = label or (estimator if isinstance(estimator, str) else type(estimator).__name__)
    names = _settable(estimator)
    if not names:
        raise ValueError(f"{label} takes no parameters; drop {sorted(params)} for it.")
    unknown = [n for n in params if n not in names]
    if unknown:
        n = unknown[0]
        listed = sorted(k for k in names if "__" not in k)
        raise ValueError(f"{label} has no parameter {n!r}.{did_you_mean(n, names)} Its parameters: "
                         f"{', '.join(listed)}.")
    configured = clone(estimator)
    configured.set_params(**{names[k]: v for k, v in params.items()})
    try:
        check_values(configured)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{label}: {err}") from None
    return configured


def _configured(factory: Callable[[], Any], params: dict, label: str):
    return configure(factory(), params, label)


def _assign(params: tuple[Param, ...], reps: Mapping[str, Entry], heads: Mapping[str, Entry],
            used_reps: list[str], used_heads: list[str]) -> dict[tuple[str, str], dict]:
    """``{(kind, name): {param: value}}``: which selected step each `Param` goes to.

    ``features.x`` / ``head.x`` go to every selected representation / head that has ``x``; a
    bare ``x`` to every selected step that has it, as long as those are all representations or
    all heads; ``glove.x`` to that step alone. Nothing is dropped silently: a parameter that no
    step it names has is an error with the closest valid name.
    """
    built = {("representation", r): reps[r].factory() for r in used_reps}
    built.update({("head", h): heads[h].factory() for h in used_heads})
    names = {key: _settable(est) for key, est in built.items()}

    def listing(keys):
        return ", ".join(sorted({n for k in keys for n in names[k] if "__" not in n}))

    out: dict[tuple[str, str], dict] = {}
    for p in params:
        if p.step is None or p.step in ("features", "head"):
            kinds = {"features": ["representation"], "head": ["head"]}.get(
                p.step, ["representation", "head"])
            candidates = [k for k in built if k[0] in kinds]
            targets = [k for k in candidates if p.name in names[k]]
            if len({k[0] for k in targets}) > 1:
                raise ValueError(f"-p {p.text}: both representations and heads have {p.name!r}; "
                                 f"write -p features.{p.text} or -p head.{p.text}.")
            if not targets:
                where = {"features": "representation", "head": "head"}.get(p.step, "step")
                steps = ", ".join(k[1] for k in candidates)
                guess = did_you_mean(p.name, [n for k in candidates for n in names[k]])
                raise ValueError(f"-p {p.text}: no selected {where} ({steps}) has a parameter "
                                 f"{p.name!r}.{guess} Their parameters: {listing(candidates)}.")
        else:
            target = None
            for kind, registry in (("representation", reps), ("head", heads)):
                try:
                    target = (kind, resolve(p.step, kind, registry))
                    break
                except ValueError:
                    continue
            steps = ["features", "head", *used_reps, *used_heads]
            if target is None:
                raise ValueError(f"-p {p.text}: no step {p.step!r} in this run."
                                 f"{did_you_mean(p.step, steps)} Name one of {', '.join(steps)}.")
            if target not in built:
                raise ValueError(f"-p {p.text}: {p.step!r} is not in this run's selection; its "
                                 f"steps are {', '.join(steps[2:])}.")
            if p.name not in names[target]:
                raise ValueError(f"-p {p.text}: {target[1]} ({type(built[target]).__name__}) has no "
                                 f"parameter {p.name!r}.{did_you_mean(p.name, names[target])} Its "
                                 f"parameters: {listing([target])}.")
            targets = [target]
        for target in targets:
            out.setdefault(target, {})[p.name] = p.value
    return out


# -- selections and experiments --------------------------------------------------------------
@dataclass(frozen=True)
class Experiment:
    """Compatible ``(representation, head)`` name pairs and the entries the names refer to."""

    pairs: tuple[tuple[str, str], ...]
    representations: Mapping[str, Entry] = field(default_factory=lambda: REPRESENTATIONS)
    heads: Mapping[str, Entry] = field(default_factory=lambda: HEADS)
    about: str = ""

    def with_params(self, params) -> Experiment:
        """This experiment with ``params`` (`Param` or ``"[step.]name=value"`` strings) set on
        its steps; every value is checked here, before any work."""
        params = tuple(p if isinstance(p, Param) else parse_params([p])[0] for p in params or ())
        if not params:
            return self
        used_reps = list(dict.fromkeys(r for r, _ in self.pairs))
        used_heads = list(dict.fromkeys(h for _, h in self.pairs))
        settings = _assign(params, self.representations, self.heads, used_reps, used_heads)
        reps, heads = dict(self.representations), dict(self.heads)
        for (kind, name), values in settings.items():
            where = reps if kind == "representation" else heads
            entry = where[name]
            factory = functools.partial(_configured, entry.factory, values, name)
            factory()  # checks the values now
            where[name] = dataclasses.replace(entry, factory=factory)
        return Experiment(self.pairs, reps, heads, self.about)


def _checked(pairs, representations, heads, where: str) -> tuple[tuple[str, str], ...]:
    pairs = tuple((resolve(str(r), "representation", representations),
                   resolve(str(h), "head", heads)) for r, h in pairs)
    bad = [(r, h) for r, h in pairs if not compatible(representations[r], heads[h])]
    if bad:
        r, h = bad[0]
        raise ValueError(f"{where} pairs steps that do not fit together: {bad}; {r!r} produces "
                         f"{representation_form(representations[r])!r} and {h!r} accepts "
                         f"{', '.join(head_forms(heads[h]))}.")
    return pairs


def select(representations=None, heads=None, *, quick: bool = False,
           experiment: str | Path | None = None, params=()) -> Experiment:
    """Every compatible pair of a representation x head selection, or a named experiment.

    Parameters
    ----------
    representations, heads : list of str, optional
        Names (or aliases) from `REPRESENTATIONS` / `HEADS`; the defaults (or the quick ones)
        when None.
    quick : bool, default=False
        Use ``QUICK_REPRESENTATIONS`` x ``QUICK_HEADS`` as the defaults.
    experiment : str or Path, optional
        A built-in experiment's name or an experiment file (`load_experiment`), instead of a
        selection.
    params : list of str, optional
        Step parameters, ``"[step.]name=value"`` (`Experiment.with_params`).

    Examples
    --------
    >>> select(["tfidf", "glove-seq"], ["logreg", "rnn"]).pairs
    (('tfidf', 'logreg'), ('glove-seq', 'rnn'))
    """
    if experiment is not None:
        if representations or heads:
            raise ValueError("give either an experiment (-e) or a representation/head selection "
                             "(-r/-H), not both.")
        return load_experiment(experiment).with_params(params)
    reps = list(representations or (QUICK_REPRESENTATIONS if quick else DEFAULT_REPRESENTATIONS))
    hds = list(heads or (QUICK_HEADS if quick else DEFAULT_HEADS))
    reps = list(dict.fromkeys(resolve(r, "representation") for r in reps))
    hds = list(dict.fromkeys(resolve(h, "head") for h in hds))
    pairs = tuple((r, h) for r in reps for h in hds if compatible(REPRESENTATIONS[r], HEADS[h]))
    if not pairs:
        raise ValueError(f"no head in {hds} accepts what {reps} produce; see `embedkit compare --list`.")
    return Experiment(pairs).with_params(params)


def _plain_tfidf():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)


def _plain_logreg():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=3000)


def _majority():
    from sklearn.dummy import DummyClassifier

    return DummyClassifier(strategy="most_frequent")


#: the rows every `embedkit compare` report carries (``--no-baselines`` leaves them out): what a
#: user writes in five lines, to judge every other row against. ``baseline-minilm`` is
#: ``TransformerEmbedder(normalize=True)``: the packaged all-MiniLM-L6-v2, mean-pooled over
#: 256 tokens and L2-normalised, which is what sentence-transformers' ``encode`` returns for
#: that model (cosine 1.0 to it, tested); it shares its cache entries with ``minilm``.
BASELINES = Experiment(
    pairs=(("baseline", "majority-class"), ("baseline-tfidf", "plain-lr"),
           ("baseline-minilm", "plain-lr")),
    representations={
        "baseline": Entry(_passthrough, "no features"),
        "baseline-tfidf": Entry(_plain_tfidf, "scikit-learn TfidfVectorizer(ngram_range=(1, 2), "
                                              "min_df=2, sublinear_tf=True)"),
        "baseline-minilm": Entry(step("TransformerEmbedder", normalize=True),
                                 "all-MiniLM-L6-v2 mean-pooled, L2-normalised (sentence-"
                                 "transformers encode)"),
    },
    heads={
        "majority-class": Entry(_majority, "DummyClassifier: always the most frequent class"),
        "plain-lr": Entry(_plain_logreg, "LogisticRegression(max_iter=3000), default C, no "
                                         "scaling"),
    },
    about="majority class, plain TF-IDF + LR, plain MiniLM + LR",
)


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
        raise ValueError(f"unknown experiment {text!r}.{did_you_mean(text, builtin)} Choose from "
                         f"{', '.join(sorted(builtin))} or pass the path of a .py file that "
                         "defines PAIRS (copy embedkit/experiments/course_comparison.py to start one).")
    if not hasattr(module, "PAIRS"):
        raise ValueError(f"{where} defines no PAIRS; list (representation, head) names in it, "
                         "e.g. PAIRS = [('tfidf', 'logreg')].")
    reps = {**REPRESENTATIONS, **_extra(module, "REPRESENTATIONS", REPRESENTATIONS, where)}
    hds = {**HEADS, **_extra(module, "HEADS", HEADS, where)}
    return Experiment(_checked(module.PAIRS, reps, hds, where), reps, hds, _summary(module))


def make_pipeline(representation: str, head: str, params=()):
    """A fresh ``Pipeline([("features", ...), ("head", ...)])`` for two registry names.

    Examples
    --------
    >>> make_pipeline("glove", "mlp", ["head.epochs=3"]).named_steps["head"].epochs
    3
    """
    from sklearn.pipeline import Pipeline

    chosen = select([representation], [head], params=params)
    (rep, hd), = chosen.pairs
    return Pipeline([("features", chosen.representations[rep].factory()),
                     ("head", chosen.heads[hd].factory())])


def make_representation(name: str, params=()):
    """A representation by registry name or alias, with ``[features.]name=value`` parameters.

    What ``embedkit embed -r NAME -p key=value`` builds: the same step as ``embedkit compare
    -r NAME``.

    Examples
    --------
    >>> make_representation("minilm", ["pooling=cls"]).pooling
    'cls'
    """
    rep = resolve(name, "representation")
    settings = {}
    for p in parse_params(params):
        if p.step not in (None, "features") and resolve(p.step, "representation") != rep:
            raise ValueError(f"-p {p.text}: this command builds one representation, {rep}; "
                             f"write -p {p.name}=... or -p features.{p.name}=....")
        settings[p.name] = p.value
    return configure(REPRESENTATIONS[rep].factory(), settings, rep)
