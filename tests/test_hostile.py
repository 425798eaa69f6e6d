"""Hostile input for every exported representation and head (found from the packages' ``__all__``).

Each case must end in one of two ways: finite output of the right shape, or a ``ValueError`` /
``TypeError`` that embedkit (or scikit-learn's own input validation) raises on purpose, with a
message. Anything else fails the test: a hang (every test runs under a timeout), a NaN, or an
exception from inside torch, gensim, numpy, transformers or any other dependency (or a Python
error such as an ``IndexError`` in embedkit's own code).

* property-based text (Hypothesis, derandomized: the same examples on every run): arbitrary
  Unicode including lone surrogates, control characters and NUL, empty, whitespace-only and very
  long documents, through ``fit`` and ``transform`` (representations) and ``fit`` / ``predict``
  (heads that read text); arbitrary float matrices and sequences, NaN, infinity and huge values
  included, through the heads;
* empty input, labels with None / NaN, one class, a ``y`` of the wrong length, prediction before
  ``fit``;
* every parameter at the edges of what its table entry allows (`embedkit._params.edge_values`):
  the value just past them is the contract suite's (``test_contract.py``).

Fitted models are shared per module and the budgets are small. Each test's tally is checked when
it ends (`tally`), so the check holds however pytest-xdist spreads the tests over its workers:
every case ended in a finite output or a clear error, and the class the test exercises had cases.
The counts of each estimator's cases, clear errors and finite outputs are printed at the end of
the test session (conftest.py gathers them from the workers).

The hostile user at the commands (a folder of theirs as ``--output``, ``predict -o`` its input,
a kill while writing, Ctrl-C inside an epoch, tiny budgets, files that cannot be read) is in
``tests/test_outputs.py``, whose fixtures (a real tune, two saved models) it shares in one worker.
"""

from __future__ import annotations

import collections
import inspect
import re
import traceback
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.exceptions import NotFittedError

import embedkit.heads
import embedkit.representations
from embedkit._params import edge_values
from embedkit.heads._base import NeuralHead
from embedkit.sequences import Sequences, TokenIds

REPRESENTATIONS = [getattr(embedkit.representations, n) for n in embedkit.representations.__all__]
HEADS = [getattr(embedkit.heads, n) for n in embedkit.heads.__all__]
ESTIMATORS = REPRESENTATIONS + HEADS

#: small budgets that keep a case cheap (parameters not listed keep their defaults)
CHEAP = {
    "Word2VecEmbedder": {"vector_size": 16, "epochs": 2},
    "FastTextEmbedder": {"vector_size": 16, "epochs": 2, "bucket": 2000},
    "Doc2VecEmbedder": {"vector_size": 16, "epochs": 5},
    "TransformerEmbedder": {"max_length": 64},
    "DistilledEmbedder": {"max_vocabulary": 2100, "pca_dims": 32},
    "TransformerClassifier": {"max_length": 16, "fine_tune": "none", "epochs": 1, "batch_size": 16},
    "TransformerRegressor": {"max_length": 16, "fine_tune": "none", "epochs": 1, "batch_size": 16},
    "EnsembleClassifier": {"members": ("tfidf:logreg", "bow:logreg"), "cv": 2},
    "SetFitClassifier": {"num_iterations": 1, "max_length": 16, "max_steps": 1, "batch_size": 4},
    # two values of C on two folds: the same inner search as the default nine on three, fewer fits
    "LogisticRegressionHead": {"Cs": (0.1, 10.0), "cv": 2},
    "NBLogisticRegression": {"Cs": (0.1, 10.0), "cv": 2},
}
HEAD_BUDGET = {"epochs": 2, "batch_size": 8}

#: outcomes per estimator, checked per test by `tally`, printed by conftest's terminal summary
STATS: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)

HYPOTHESIS = settings(max_examples=12, derandomize=True, deadline=None, database=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SENTENCES = ["the cat sat on the mat", "the dog sat on the log", "stocks fell as markets opened",
             "the team won the final match", "the film won an award", "voters elected a leader",
             "a new phone has a faster chip", "the band played a new song"] * 2
LABELS = [0, 1] * 8
HUGE = " ".join(["word", "the", "cat", "zzqx"] * 5000)  # 20,000 tokens
ODD = ["", "   ", "\x00", "\x00\x01\x02\x1b[31m\x7f", "\t\n\r\x0b\x0c", "\u200b\u200d\ufeff",
       "😀🎉 emoji only", "日本語のテキスト", "مرحبا بالعالم", "e\u0301\u0301\u0301", "a" * 10000,
       "lone \ud800 here", "\udfff", HUGE]



def _encodes(doc: str) -> bool:
    """Whether ``doc`` is valid Unicode text (no lone surrogate)."""
    try:
        doc.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


ODD_VALID = [d for d in ODD if _encodes(d)]

#: any Unicode code point, lone surrogates (category Cs) included
TEXT = st.text(alphabet=st.characters(categories=("L", "M", "N", "P", "S", "Z", "C")), max_size=60)
DOCUMENT = st.one_of(TEXT, st.sampled_from(ODD))
DOCUMENTS = st.lists(DOCUMENT, max_size=6)


def _make(cls, **params):
    base = dict(CHEAP.get(cls.__name__, {}))
    if cls in HEADS:
        names = cls().get_params()
        base = {**{k: v for k, v in HEAD_BUDGET.items() if k in names}, **base}
    return cls(**{**base, **params})


def _form(cls) -> str:
    """The input form a head is exercised with here."""
    return next(f for f in ("text", "pooled", "sequence") if f in cls._accepts)


def _is_regressor(cls) -> bool:
    return getattr(cls, "_estimator_type", "") == "regressor"


# ----------------------------------------------------------------------------------------------
# outcomes
# ----------------------------------------------------------------------------------------------

def _raised_on_purpose(err: BaseException) -> bool:
    """A ValueError / TypeError from a ``raise`` statement of embedkit or scikit-learn (whose
    input validation embedkit uses), with a message."""
    if not isinstance(err, (ValueError, TypeError)) or not str(err).strip():
        return False
    last = traceback.extract_tb(err.__traceback__)[-1]
    parts = Path(last.filename).parts
    return ("embedkit" in parts or "sklearn" in parts) and (last.line or "").lstrip().startswith("raise")


def _check_output(out, n: int) -> None:
    if isinstance(out, Sequences):
        values, rows = out.values, len(out)
    elif isinstance(out, TokenIds):
        values, rows = out.ids, len(out)
        assert ((0 <= out.ids) & (out.ids < out.vocab_size)).all()
    elif sp.issparse(out):
        values, rows = out.data, out.shape[0]
    else:
        values = np.asarray(out)
        rows = values.shape[0]
    assert rows == n, f"{rows} rows of output for {n} rows of input"
    if values.dtype.kind in "fc":
        assert np.isfinite(values).all(), "non-finite output"


def outcome(est, call, n_rows: int | None = None, expect_error: bool = False):
    """Run ``call()``; record a finite output (checked against ``n_rows``) or a clear error.

    Anything else is recorded as unexpected and re-raised, so the test fails with it.
    """
    name = type(est).__name__ if not isinstance(est, type) else est.__name__
    STATS[name]["cases"] += 1
    try:
        out = call()
    except Exception as err:
        if _raised_on_purpose(err):
            STATS[name]["clear errors"] += 1
            return None
        STATS[name]["unexpected"] += 1
        raise
    try:
        assert not expect_error, "expected a clear error, got an output"
        if n_rows is not None:
            _check_output(out, n_rows)
    except AssertionError:
        STATS[name]["unexpected"] += 1
        raise
    STATS[name]["finite outputs"] += 1
    return out


@pytest.fixture(autouse=True)
def tally(request):
    """The cases a test recorded in `STATS`, checked as it ends (where the test itself failed,
    its own failure says more): each case ended in a finite output or a clear error, none in
    anything else (an exception `outcome` did not catch leaves a case without an ending), and
    the class the test is parametrized with had at least one case."""
    before = {name: collections.Counter(counts) for name, counts in STATS.items()}
    failed = request.session.testsfailed
    yield
    if request.session.testsfailed > failed or not hasattr(request.node, "callspec"):
        return
    added = {name: counts - before.get(name, collections.Counter()) for name, counts in STATS.items()}
    for name, counts in added.items():
        ended = counts["finite outputs"] + counts["clear errors"]
        assert counts["unexpected"] == 0 and counts["cases"] == ended, (name, dict(counts))
    name = request.node.callspec.params["cls"].__name__
    assert added.get(name, collections.Counter())["cases"] > 0, f"{request.node.name}: no case of {name}"


# ----------------------------------------------------------------------------------------------
# data and shared fitted models
# ----------------------------------------------------------------------------------------------

def _head_data(cls, n: int = 16, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n) if _is_regressor(cls) else np.array([0, 1] * (n // 2))
    form = _form(cls)
    if form == "text":
        return (SENTENCES * 2)[:n], y
    if form == "pooled":  # a head of counts or weights (NBSVM's) reads them non-negative
        X = rng.normal(size=(n, 5))
        return (np.abs(X) if cls().__sklearn_tags__().input_tags.positive_only else X), y
    lengths = rng.integers(0, 7, size=n)  # empty rows included
    values = rng.normal(size=(n, 6, 5)) * (np.arange(6)[None, :, None] < lengths[:, None, None])
    return Sequences(values, lengths), y


@pytest.fixture(scope="module")
def fitted():
    """One fitted instance per representation (and output form) and per head, for the module."""
    cache = {}

    def get(cls, output=None):
        if (cls, output) not in cache:
            if cls in REPRESENTATIONS:
                cache[cls, output] = _make(cls, output=output).fit(SENTENCES)
            else:
                cache[cls, output] = _make(cls).fit(*_head_data(cls))
        return cache[cls, output]

    return get


REP_OUTPUTS = [(c, o) for c in REPRESENTATIONS for o in c._outputs]
REP_OUTPUT_IDS = [f"{c.__name__}-{o}" for c, o in REP_OUTPUTS]
HEAD_IDS = [c.__name__ for c in HEADS]
TEXT_HEADS = [c for c in HEADS if _form(c) == "text"]


# ----------------------------------------------------------------------------------------------
# property-based text through representations (and heads that read text)
# ----------------------------------------------------------------------------------------------

@pytest.mark.timeout(600)
@pytest.mark.parametrize("cls,output", REP_OUTPUTS, ids=REP_OUTPUT_IDS)
@HYPOTHESIS
@given(docs=DOCUMENTS)
@example(docs=ODD)
@example(docs=ODD_VALID)
@example(docs=[])
def test_transform_arbitrary_text(cls, output, fitted, docs):
    est = fitted(cls, output)
    out = outcome(est, lambda: est.transform(docs), len(docs))
    if any(not d.isascii() and not _encodes(d) for d in docs):
        assert out is None, "a lone surrogate must be refused, naming the row"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("cls", REPRESENTATIONS, ids=[c.__name__ for c in REPRESENTATIONS])
@settings(HYPOTHESIS, max_examples=6)
@given(docs=st.lists(DOCUMENT, min_size=1, max_size=6))
@example(docs=["", " ", "\x00"])
@example(docs=[HUGE, "😀🎉", "日本語"])
def test_fit_on_arbitrary_text(cls, docs):
    est = _make(cls)
    out = outcome(est, lambda: est.fit_transform(docs), len(docs))
    if out is not None:
        outcome(est, lambda: est.transform(docs[::-1]), len(docs))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("cls", TEXT_HEADS, ids=[c.__name__ for c in TEXT_HEADS])
@settings(HYPOTHESIS, max_examples=8)
@given(docs=DOCUMENTS)
@example(docs=ODD)
@example(docs=ODD_VALID)
def test_text_heads_predict_arbitrary_text(cls, fitted, docs):
    est = fitted(cls)
    outcome(est, lambda: est.predict(docs), len(docs))


# ----------------------------------------------------------------------------------------------
# property-based numbers through the heads
# ----------------------------------------------------------------------------------------------

FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.sampled_from([0.0, 1e-300, 1e30, -1e30, 3.4e38, np.nan, np.inf]))
NUMERIC_HEADS = [c for c in HEADS if _form(c) != "text"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("cls", NUMERIC_HEADS, ids=[c.__name__ for c in NUMERIC_HEADS])
@settings(HYPOTHESIS, max_examples=8)
@given(values=hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 5),
                                               st.integers(1, 4)), elements=FLOATS),
       seed=st.integers(0, 3))
def test_heads_on_arbitrary_numbers(cls, fitted, values, seed):
    """Fit on arbitrary values, and predict arbitrary values with an already fitted head."""
    n, width, _ = values.shape
    lengths = np.random.default_rng(seed).integers(0, width + 1, size=n)
    real = np.arange(width)[None, :, None] < lengths[:, None, None]
    with np.errstate(invalid="ignore", over="ignore"):  # NaN * 0, and 1e300 cast to float32
        five = np.where(real, np.resize(values, (n, width, 5)), 0.0)  # the fitted heads' width
        if _form(cls) == "pooled":
            X, X_five = values.reshape(n, -1), five[:, 0, :]
        else:
            X = Sequences(np.where(real, values, 0.0), lengths)
            X_five = Sequences(five, lengths)
    y = np.arange(n) % 2 if not _is_regressor(cls) else np.linspace(0, 1, n)
    est = _make(cls)
    outcome(est, lambda: est.fit(X, y).predict(X), n)
    head = fitted(cls)
    outcome(head, lambda: head.predict(X_five), n)


# ----------------------------------------------------------------------------------------------
# empty input, bad targets, prediction before fit
# ----------------------------------------------------------------------------------------------

def _empty_like(cls):
    form = _form(cls)
    if form == "text":
        return []
    if form == "pooled":
        return np.zeros((0, 5))
    return Sequences(np.zeros((0, 1, 5)), np.zeros(0, np.int64))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("cls", HEADS, ids=HEAD_IDS)
def test_heads_on_empty_and_bad_targets(cls, fitted):
    head = fitted(cls)
    X, y = _head_data(cls)
    empty = _empty_like(cls)
    # predicting no rows gives no predictions; fitting on no rows is a clear error
    pred = outcome(head, lambda: head.predict(empty), 0)
    assert pred is not None and pred.shape[0] == 0
    if hasattr(head, "predict_proba"):
        assert outcome(head, lambda: head.predict_proba(empty), 0).shape == (0, 2)
    outcome(cls, lambda: _make(cls).fit(empty, []), expect_error=True)
    outcome(cls, lambda: _make(cls).fit(X, y[:-3]), expect_error=True)  # wrong-length y
    outcome(cls, lambda: _make(cls).predict(X), expect_error=True)  # before fit
    with pytest.raises(NotFittedError):
        _make(cls).predict(X)
    # missing labels name their rows
    for missing in (None, float("nan")):
        labels = np.array(y, dtype=object)
        labels[[1, 4]] = missing
        if not _is_regressor(cls):
            labels = np.where(np.arange(len(labels)) % 2, "sport", "food").astype(object)
            labels[[1, 4]] = missing
        with pytest.raises(ValueError, match=r"missing label\(s\) \(None or NaN\) at positions 1, 4"):
            _make(cls).fit(X, labels)
        STATS[cls.__name__]["cases"] += 1
        STATS[cls.__name__]["clear errors"] += 1
    if not _is_regressor(cls):  # one class
        with pytest.raises(ValueError, match="only one class"):
            _make(cls).fit(X, np.zeros(len(y), int))
        STATS[cls.__name__]["cases"] += 1
        STATS[cls.__name__]["clear errors"] += 1


@pytest.mark.timeout(300)
@pytest.mark.parametrize("cls", REPRESENTATIONS, ids=[c.__name__ for c in REPRESENTATIONS])
def test_representations_before_fit_and_on_empty(cls):
    outcome(cls, lambda: _make(cls).transform(SENTENCES[:2]), expect_error=True)
    with pytest.raises(NotFittedError):
        _make(cls).transform(SENTENCES[:2])
    est = _make(cls)
    if outcome(est, lambda: est.fit([])) is not None:  # a pretrained model needs no documents
        outcome(est, lambda: est.transform(SENTENCES[:2]), 2)


# ----------------------------------------------------------------------------------------------
# every parameter at the edges of its table entry
# ----------------------------------------------------------------------------------------------

#: where NeuralHead's template-only parameters (below) are taken to their edges: one pooled and
#: one sequence head, the cheapest of each
TEMPLATE_HEADS = ("MLPClassifier", "AttentionClassifier")


def _reads(cls, name: str) -> bool:
    """Whether the code of ``cls``'s own module (its whole folder for a subpackage such as
    ``heads/finetune``) reads ``self.<name>``."""
    path = Path(inspect.getsourcefile(cls))
    files = path.parent.glob("*.py") if path.parent.name != "heads" else [path]
    return any(re.search(rf"self\.{name}\b", f.read_text()) for f in files)


def _template_only(cls, name: str, entry) -> bool:
    """A parameter of NeuralHead's table that only its one ``fit`` template reads (no head
    overrides ``fit``: test_heads_base): its edges take the same path on every head, so they run
    on `TEMPLATE_HEADS` only. ``batch_size`` stays on every head (a batch of one meets each
    architecture's own layers), and so does a parameter a head's own code reads (the fine-tuning
    head's ``self.lr`` in its optimizer groups)."""
    return (issubclass(cls, NeuralHead) and name != "batch_size"
            and NeuralHead._parameter_constraints.get(name) is entry and not _reads(cls, name))


def _edge_cases():
    """(class, parameter, value) for each edge value of each entry, once per table: classes that
    share one table (a classifier and its regressor) share the edges, tested on the first."""
    seen, out = set(), []
    for cls in ESTIMATORS:
        table = cls._parameter_constraints
        if id(table) in seen:
            continue
        seen.add(id(table))
        out += [(cls, name, value) for name, entry in table.items() for value in edge_values(entry)
                if cls.__name__ in TEMPLATE_HEADS or not _template_only(cls, name, entry)]
    return out


EDGES = _edge_cases()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("cls, name, value", EDGES,
                         ids=[f"{c.__name__}-{n}={v!r}" for c, n, v in EDGES])
def test_parameter_at_its_edge(cls, name, value):
    est = _make(cls, **{name: value})
    if cls in REPRESENTATIONS:
        docs = SENTENCES[:5] + ["", "zzqx unseen"]
        out = outcome(est, lambda: est.fit(SENTENCES))
        if out is not None:
            outcome(est, lambda: est.transform(docs), len(docs))
        return
    X, y = _head_data(cls)
    if outcome(est, lambda: est.fit(X, y)) is not None:
        outcome(est, lambda: est.predict(X), len(y))


def test_every_exported_estimator_is_exercised():
    """Each class of the packages' ``__all__`` is a parameter of the tests of this file (and `tally`
    checks that each of those tests recorded its cases)."""
    exercised = ({c for c, _ in REP_OUTPUTS} | set(TEXT_HEADS) | set(NUMERIC_HEADS)
                 | {c for c, _, _ in EDGES})
    assert exercised == set(ESTIMATORS) and len(REPRESENTATIONS) > 5 and len(HEADS) > 10
