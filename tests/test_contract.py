"""The shared contract suite: every representation, every head and every table step in the package.

Representations and heads are discovered from the packages' ``__all__``, so a new component
is checked as soon as it is exported. Text-input representations get scikit-learn's data-free
checks by name plus the input contract; heads that take numeric 2-D input get scikit-learn's
full `parametrize_with_checks`, sequence-only heads the data-free checks plus the checks of
`check_estimator` that matter, run on `Sequences` input. Every constructor parameter has an entry
in its class's parameter table, and every value just past an entry's edges (generated from the
table, so a new parameter is covered as soon as it is declared) fails at the start of ``fit``.
"""

from __future__ import annotations

import pickle
import re
import traceback

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
    parametrize_with_checks,
)

import embedkit.heads
import embedkit.representations
import embedkit.representations.table
from embedkit._params import InvalidParameterError, invalid_values, validate_params
from embedkit.base import Representation, is_ready, needs_classes, takes_cache, with_cache
from embedkit.sequences import Sequences, TokenIds

REPRESENTATIONS = [getattr(embedkit.representations, n) for n in embedkit.representations.__all__]
HEADS = [getattr(embedkit.heads, n) for n in embedkit.heads.__all__]
#: steps that read a table (a DataFrame of text, categorical and numeric columns)
TABLES = [obj for n in embedkit.representations.table.__all__
          if isinstance(obj := getattr(embedkit.representations.table, n), type) and hasattr(obj, "fit")]
assert TABLES, "no table step found"

#: constructor arguments that keep a component cheap in these checks (defaults otherwise)
FAST_PARAMS: dict[str, dict] = {
    # its first 2,100 token ids: seconds, where the whole vocabulary takes minutes (once)
    "DistilledEmbedder": {"max_vocabulary": 2100, "pca_dims": 32},
    # two values of C on two folds: the same inner search as the default nine on three, fewer fits
    "LogisticRegressionHead": {"Cs": (0.1, 10.0), "cv": 2},
    "NBLogisticRegression": {"Cs": (0.1, 10.0), "cv": 2},
}
#: small training budgets for heads
HEAD_PARAMS = {"epochs": 12, "batch_size": 16}


def _make(cls, **extra):
    params = {**FAST_PARAMS.get(cls.__name__, {}), **extra}
    if cls in HEADS:
        names = cls().get_params()
        params = {**{k: v for k, v in HEAD_PARAMS.items() if k in names}, **params}
    return cls(**params)


def _as_array(out):
    if isinstance(out, Sequences):
        return out.values, out.lengths
    if isinstance(out, TokenIds):
        return out.ids, out.lengths
    if sp.issparse(out):
        return out.toarray(), None
    return np.asarray(out), None


def _outputs(cls):
    return list(cls._outputs)


rep_ids = [c.__name__ for c in REPRESENTATIONS]
rep_outputs = [(c, o) for c in REPRESENTATIONS for o in _outputs(c)]
rep_output_ids = [f"{c.__name__}-{o}" for c, o in rep_outputs]


@pytest.fixture(scope="module")
def fitted(sentences):
    """One fitted instance per (representation, output form), shared by the module."""
    cache = {}

    def get(cls, output):
        if (cls, output) not in cache:
            cache[cls, output] = _make(cls, output=output).fit(sentences)
        return cache[cls, output]

    return get


def _data_free_checks(cls, est) -> str:
    """scikit-learn's checks that need no data; returns the class name."""
    name = cls.__name__
    check_parameters_default_constructible(name, est)
    check_no_attributes_set_in_init(name, est)
    check_get_params_invariance(name, est)
    check_set_params(name, est)
    return name


@pytest.mark.parametrize("cls", REPRESENTATIONS, ids=rep_ids)
def test_representation_data_free_checks(cls):
    est = _make(cls)
    name = _data_free_checks(cls, est)
    assert repr(est).startswith(name)
    assert clone(est).get_params() == est.get_params()
    assert "output" in est.get_params() and "cache" in est.get_params()
    # what the search reads of a step, declared on the base with its defaults
    assert takes_cache(est) and needs_classes(est) is False and isinstance(is_ready(est), bool)


def test_what_the_search_reads_of_a_step_is_declared_not_probed():
    """`needs_classes`, `takes_cache` / `with_cache` and `is_ready` answer for a representation
    from what it declares, and give their defaults for any other step."""
    from sklearn.decomposition import TruncatedSVD

    from embedkit.representations import TfidfEmbedder

    plain, ratios = TfidfEmbedder(), TfidfEmbedder(log_count_ratio=True)
    assert (needs_classes(plain), needs_classes(ratios)) == (False, True)
    assert with_cache(plain, None) is plain and plain.cache is None
    assert with_cache(clone(plain), "memory").get_params()["cache"] == "memory"
    svd = TruncatedSVD(n_components=2)
    for other in (svd, "passthrough"):
        assert not needs_classes(other) and not takes_cache(other) and is_ready(other)
        assert with_cache(other, "memory") is other
    assert "cache" not in svd.get_params()


@pytest.mark.parametrize("cls,output", rep_outputs, ids=rep_output_ids)
def test_representation_fit_transform_pickle(cls, output, fitted, sentences):
    est = fitted(cls, output)
    docs = sentences[:5] + ["", "   ", "zzqx unseenword"]
    out = est.transform(docs)
    values, lengths = _as_array(out)
    assert values.shape[0] == len(docs)
    if values.dtype.kind == "f":
        assert np.isfinite(values).all()
        assert values.dtype == np.float32
    if output == "pooled":
        assert values.shape == (len(docs), est.dim_)
        names = est.get_feature_names_out()
        assert len(names) == est.dim_
    else:
        assert lengths is not None and lengths.shape == (len(docs),)
        # empty and whitespace-only documents are the same (no word tokens; a Transformer keeps
        # its special tokens) and never longer than a real sentence
        assert lengths[5] == lengths[6] <= lengths[0]
        np.testing.assert_array_equal(values[5], values[6])
    again = pickle.loads(pickle.dumps(est))
    values2, _ = _as_array(again.transform(docs))
    np.testing.assert_allclose(values2, values, rtol=1e-6, atol=1e-6)
    # clone is unfitted and cheap: same params, no fitted state
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(clone(est)))


@pytest.mark.parametrize("cls", REPRESENTATIONS, ids=rep_ids)
def test_representation_refit_resets_the_cache_identity(cls, sentences):
    """The base class owns fit / transform / fit_transform (no representation overrides them),
    and each fit resets what the cache key knows of the fitted state: after a refit on other
    documents, through fit or fit_transform, a cached transform equals a fresh fit's."""
    for method in ("fit", "transform", "fit_transform"):
        assert getattr(cls, method) is getattr(Representation, method), method
    first, second = sentences[:20], sentences[20:]
    queries = sentences[18:22] + ["zzqx unseenword"]
    est = _make(cls, cache="memory").fit(first)
    est.transform(queries)  # cached under the first fit
    for refit, docs in (("fit", second), ("fit_transform", first)):
        getattr(est, refit)(docs)
        got, _ = _as_array(est.transform(queries))
        want, _ = _as_array(_make(cls).fit(docs).transform(queries))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=refit)


@pytest.mark.parametrize("cls", REPRESENTATIONS, ids=rep_ids)
def test_representation_bad_input(cls, fitted, sentences):
    est = fitted(cls, _outputs(cls)[0])
    with pytest.raises(ValueError, match="single str"):
        est.transform("a single document")
    with pytest.raises(ValueError, match=r"positions 1 \(None\), 3 \(NaN\)"):
        est.transform(["ok", None, "fine", float("nan")])
    with pytest.raises(ValueError, match=r"0 \(bytes\), 2 \(int\)"):
        est.transform([b"bytes", "text", 3])
    with pytest.raises(ValueError, match="2 columns"):
        est.transform(pd.DataFrame({"a": ["x"], "b": ["y"]}))
    # a lone surrogate is not Unicode text: refused by validation, naming the row
    with pytest.raises(ValueError, match=r"not valid Unicode .* at positions 1\. "):
        est.transform(["fine", "lone \ud800 here"])
    with pytest.raises(ValueError, match=r"at positions 0\. "):
        clone(est).fit(["lone \udfff here"] + sentences)


@pytest.mark.parametrize("cls,output", rep_outputs, ids=rep_output_ids)
def test_representation_empty_input(cls, output, fitted):
    """No documents in, no rows out, in the same form and width as any other transform."""
    est = fitted(cls, output)
    out = est.transform([])
    values, lengths = _as_array(out)
    assert values.shape[0] == 0 and type(out) is type(est.transform(["a cat"]))
    if output == "pooled":
        assert values.shape == (0, est.dim_)
    else:
        assert lengths.shape == (0,)


@pytest.mark.parametrize("cls", REPRESENTATIONS, ids=rep_ids)
def test_representation_accepts_containers(cls, fitted, sentences):
    est = fitted(cls, _outputs(cls)[0])
    docs = sentences[:4]
    ref, _ = _as_array(est.transform(docs))
    series = pd.Series(docs, index=[10, 3, 7, 99])  # non-default index: positions matter
    for variant in (tuple(docs), np.array(docs, dtype=object), series, series.to_frame("text"),
                    pd.Series(docs, dtype="string")):
        got, _ = _as_array(est.transform(variant))
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cls", REPRESENTATIONS, ids=rep_ids)
def test_representation_unavailable_output_named(cls, sentences):
    missing = [o for o in ("pooled", "sequence", "ids") if o not in cls._outputs]
    allowed = ", ".join(repr(o) for o in sorted(cls._outputs))
    for output in missing:
        with pytest.raises(ValueError, match=rf"output='{output}'\): output must be one of "
                                             rf"{allowed}\. {re.escape(cls._outputs_note[:20])}"):
            _make(cls, output=output).fit(sentences)
    with pytest.raises(ValueError, match="output='nonsense'"):
        _make(cls, output="nonsense").fit(sentences)
    # the table's entry for output lists exactly the forms the class declares
    assert cls._parameter_constraints["output"][0].options == set(cls._outputs)


# ---------------------------------------------------------------- the parameter table
ESTIMATORS = REPRESENTATIONS + HEADS + TABLES


@pytest.mark.parametrize("cls", ESTIMATORS, ids=[c.__name__ for c in ESTIMATORS])
def test_every_parameter_has_one_table_entry(cls):
    """The table lists exactly the constructor's parameters, and the defaults satisfy it."""
    params = cls().get_params(deep=False)
    assert set(cls._parameter_constraints) == set(params)
    for rule in getattr(cls, "_parameter_rules", ()):  # optional
        assert set(rule.names) <= set(params) and rule.bad
    validate_params(cls())


def _bad_values(cls):
    """(parameter overrides, name, value): every value just past an entry's edges, and each
    rule's counterexample."""
    out = []
    for name, entry in cls._parameter_constraints.items():
        out += [({name: value}, name, value) for value in invalid_values(entry)]
    for rule in getattr(cls, "_parameter_rules", ()):  # optional
        out.append((dict(rule.bad), rule.names[0], rule.bad[rule.names[0]]))
    return out


BAD = [(cls, params, name, value) for cls in ESTIMATORS for params, name, value in _bad_values(cls)]


def _fit_data(cls):
    """Small data of the kind ``cls`` fits on."""
    docs = ["the cat sat on the mat", "the dog sat on the log"] * 3
    if cls in REPRESENTATIONS:
        return (docs,)
    if cls in TABLES:
        return (_table(docs),)
    y = [0, 1] * 3
    if "text" in cls._accepts:
        return docs, y
    if "pooled" in cls._accepts:
        return np.ones((6, 3)), y
    return _toy_sequences(n=6)[0], y


@pytest.mark.parametrize("cls, params, name, value", BAD,
                         ids=[f"{c.__name__}-{n}={v!r}" for c, _, n, v in BAD])
def test_a_value_past_the_edge_fails_before_any_fitting(cls, params, name, value):
    est = cls(**params)
    with pytest.raises(InvalidParameterError) as err:
        est.fit(*_fit_data(cls))
    message = str(err.value)
    assert message.startswith(f"{cls.__name__}(") and f"{name}={value!r}" in message
    assert any(word in message for word in (" must ", " use ", "Did you mean"))  # what is allowed
    # raised by the table check itself, the first thing fit does: nothing was fitted
    assert traceback.extract_tb(err.value.__traceback__)[-1].filename.endswith("_params.py")
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]


def _table(docs):
    return pd.DataFrame({"text": docs, "kind": ["a", "b", None] * (len(docs) // 3),
                         "size": np.arange(len(docs), dtype=float)})


@pytest.mark.parametrize("cls", TABLES, ids=[c.__name__ for c in TABLES])
def test_table_step_data_free_checks_fit_transform_pickle(cls, sentences):
    """A table step: scikit-learn's data-free checks, and one float32 matrix of finite values,
    one row per row and one name per column, that a pickle and an unfitted clone keep."""
    est = _make(cls)
    _data_free_checks(cls, est)
    table = _table(sentences[:30])
    out = est.fit(table).transform(table)
    values, _ = _as_array(out)
    assert values.shape == (30, len(est.get_feature_names_out())) and values.dtype == np.float32
    assert np.isfinite(values).all()
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(_as_array(again.transform(table))[0], values)
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(clone(est)))


# ---------------------------------------------------------------------------- heads
DENSE_HEADS = [c for c in HEADS if "pooled" in c._accepts]
SEQUENCE_HEADS = [c for c in HEADS if "pooled" not in c._accepts and "sequence" in c._accepts]
TEXT_HEADS = [c for c in HEADS if "text" in c._accepts]


@parametrize_with_checks([_make(c) for c in DENSE_HEADS])
def test_heads_sklearn_checks(estimator, check):
    check(estimator)


def _toy_sequences(n=60, T=7, d=5, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, T + 1, size=n)
    values = rng.normal(size=(n, T, d)).astype(np.float32)
    values[np.arange(T)[None, :] >= lengths[:, None]] = 0
    y = (values.sum(axis=(1, 2)) > 0).astype(int)
    return Sequences(values, lengths), y


@pytest.mark.parametrize("cls", HEADS, ids=[c.__name__ for c in HEADS])
def test_head_data_free_and_sequence_pickle(cls):
    est = _make(cls)
    _data_free_checks(cls, est)
    if "sequence" not in cls._accepts:
        return
    X, y = _toy_sequences()
    if getattr(est, "_estimator_type", "") == "regressor":
        y = y.astype(float)
    est.fit(X, y)
    pred = est.predict(X)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), pred)
    if hasattr(est, "predict_proba"):
        np.testing.assert_allclose(again.predict_proba(X), est.predict_proba(X), atol=1e-6)
        assert np.isfinite(est.predict_proba(X)).all()


def _predictions(est, X):
    return est.predict_proba(X) if hasattr(est, "predict_proba") else est.predict(X)


@pytest.mark.parametrize("cls", SEQUENCE_HEADS, ids=[c.__name__ for c in SEQUENCE_HEADS])
def test_sequence_head_sklearn_checks_on_sequences(cls, tmp_path):
    """The checks of `check_estimator` that matter, on the input these heads take (`Sequences`;
    they refuse 2-D arrays by design): fit idempotence, subset and sample-order invariance,
    read-only memory-mapped input, float32 / float64 / int input, ``n_features_in_``, no
    parameter overwritten by fit, no public attribute set without a trailing underscore."""
    X, y = _toy_sequences(n=40, T=6, d=4)
    if getattr(cls(), "_estimator_type", "") == "regressor":
        y = y.astype(float) + X.values.mean(axis=(1, 2))
    est = _make(cls, epochs=3)
    before = est.get_params(deep=False)
    public = {k for k in vars(est) if not k.startswith("_")}
    est.fit(X, y)
    ref = _predictions(est, X)
    assert np.isfinite(ref).all()
    # no parameter overwritten, no public attribute without a trailing "_"
    after = est.get_params(deep=False)
    assert all(after[k] is v or after[k] == v for k, v in before.items())
    assert not [k for k in vars(est) if not k.startswith("_") and not k.endswith("_")
                and k not in public]
    assert est.n_features_in_ == 4
    # idempotent: a second fit gives the same model
    np.testing.assert_array_equal(_predictions(est.fit(X, y), X), ref)
    # subset and sample-order invariance
    np.testing.assert_allclose(_predictions(est, X[:7]), ref[:7], rtol=1e-6, atol=1e-6)
    order = np.random.default_rng(1).permutation(len(X))
    np.testing.assert_allclose(_predictions(est, X[order]), ref[order], rtol=1e-6, atol=1e-6)
    # float64 and integer vectors are accepted (as float32)
    as64 = Sequences(X.values.astype(np.float64), X.lengths)
    np.testing.assert_array_equal(_predictions(clone(est).fit(as64, y), as64), ref)
    ints = Sequences(np.rint(X.values * 3).astype(np.int64), X.lengths)
    assert np.isfinite(_predictions(clone(est).fit(ints, y), ints)).all()
    # read-only memory-mapped input: fit and predict never write into it
    path = tmp_path / "values.npy"
    np.save(path, X.values)
    mapped = Sequences(np.load(path, mmap_mode="r"), X.lengths)
    assert not mapped.values.flags.writeable
    np.testing.assert_array_equal(_predictions(clone(est).fit(mapped, y), mapped), ref)
    # pickling keeps the predictions
    np.testing.assert_array_equal(_predictions(pickle.loads(pickle.dumps(est)), X), ref)


@pytest.mark.parametrize("cls", SEQUENCE_HEADS, ids=[c.__name__ for c in SEQUENCE_HEADS])
def test_sequence_head_rejects_pooled_input(cls):
    with pytest.raises(ValueError, match="output='sequence'"):
        _make(cls).fit(np.ones((10, 4)), [0, 1] * 5)


@pytest.mark.parametrize("cls", TEXT_HEADS, ids=[c.__name__ for c in TEXT_HEADS])
def test_text_heads_reject_features(cls):
    """Heads that read raw text name the fix when handed feature vectors."""
    with pytest.raises(ValueError, match="passthrough"):
        _make(cls).fit(np.ones((10, 4)), [0, 1] * 5)


# -- the package: heavy libraries load where they are used, not on `import embedkit` ---------------


def test_import_embedkit_is_light():
    import subprocess
    import sys

    code = ("import sys, embedkit; embedkit.TfidfEmbedder; "
            "print(sorted(m for m in ('torch','gensim','transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
