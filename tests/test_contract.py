"""The shared contract suite: every representation and every head in the package.

Representations and heads are discovered from the packages' ``__all__``, so a new component
is checked as soon as it is exported. Text-input representations get scikit-learn's data-free
checks by name plus the input contract; heads that take numeric 2-D input get scikit-learn's
full `parametrize_with_checks`, sequence-only heads the data-free checks plus their own inputs.
"""

from __future__ import annotations

import pickle

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
from embedkit.base import Representation
from embedkit.sequences import Sequences, TokenIds

REPRESENTATIONS = [getattr(embedkit.representations, n) for n in embedkit.representations.__all__]
HEADS = [getattr(embedkit.heads, n) for n in embedkit.heads.__all__]

#: constructor arguments that keep a component cheap in these checks (defaults otherwise)
FAST_PARAMS: dict[str, dict] = {}
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
    for output in missing:
        with pytest.raises(ValueError, match=rf"output='{output}'.*supports"):
            _make(cls, output=output).fit(sentences)
    with pytest.raises(ValueError, match="output='nonsense'"):
        _make(cls, output="nonsense").fit(sentences)


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
    name = _data_free_checks(cls, est)
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


@pytest.mark.parametrize("cls", SEQUENCE_HEADS, ids=[c.__name__ for c in SEQUENCE_HEADS])
def test_sequence_head_rejects_pooled_input(cls):
    with pytest.raises(ValueError, match="output='sequence'"):
        _make(cls).fit(np.ones((10, 4)), [0, 1] * 5)


@pytest.mark.parametrize("cls", TEXT_HEADS, ids=[c.__name__ for c in TEXT_HEADS])
def test_text_heads_reject_features(cls):
    """Heads that read raw text name the fix when handed feature vectors."""
    with pytest.raises(ValueError, match="passthrough"):
        _make(cls).fit(np.ones((10, 4)), [0, 1] * 5)
