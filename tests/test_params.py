"""The parameter table (`embedkit._params`): the validator's messages, the defects of the
reliability issue that the table now stops before any work, and the Pipeline-wide check that
reports a later step's bad parameter before the first step encodes anything."""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import FeatureUnion, Pipeline

from embedkit import (
    Doc2VecEmbedder,
    EnsembleClassifier,
    FastTextEmbedder,
    GloveEmbedder,
    MLPClassifier,
    MLPRegressor,
    RNNClassifier,
    SelfAttentionClassifier,
    TfidfEmbedder,
    TokenIndexer,
    TransformerClassifier,
    TransformerEmbedder,
    Word2VecEmbedder,
)
from embedkit._params import InvalidParameterError, invalid_values, validate_params
from embedkit.base import Representation, store_params
from embedkit.representations._neural import NeuralEncoder
from embedkit.sequences import Sequences

DOCS = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 4
Y = [0, 1, 0] * 4


def _fit(est):
    """Fit ``est`` on data of the kind it takes (documents, or dense features for a head)."""
    if isinstance(est, Representation):
        return est.fit(DOCS)
    if "text" in est._accepts:
        return est.fit(DOCS, Y)
    if "pooled" in est._accepts:
        return est.fit(np.random.default_rng(0).normal(size=(12, 3)), Y)
    return est.fit(Sequences(np.ones((12, 4, 3)), [4, 3, 2, 1] * 3), Y)


# ----------------------------------------------------------------------------------------------
# the validator
# ----------------------------------------------------------------------------------------------

def test_message_names_estimator_parameter_value_and_what_is_allowed():
    with pytest.raises(InvalidParameterError) as err:
        Word2VecEmbedder(window=0).fit(DOCS)
    assert str(err.value) == ("Word2VecEmbedder(window=0): window must be an int in the range "
                              "[1, inf).")
    assert isinstance(err.value, ValueError) and isinstance(err.value, TypeError)
    with pytest.raises(ValueError, match=r"pooling='maen'\): pooling must be one of 'max', 'mean', "
                                         r"'sif', 'sum', 'tfidf'\. Did you mean 'mean'\?"):
        GloveEmbedder(pooling="maen").fit(DOCS)


def test_bools_are_not_counts_and_floats_are_not_ints():
    for bad in (True, 2.0):
        with pytest.raises(ValueError, match=rf"epochs={bad!r}\): epochs must be an int"):
            MLPClassifier(epochs=bad).fit(np.ones((4, 2)), [0, 1] * 2)
    validate_params(MLPClassifier(epochs=np.int64(3), lr=np.float32(0.01)))  # numpy scalars pass


def test_rules_name_both_parameters():
    with pytest.raises(ValueError, match=r"FastTextEmbedder\(min_n=5, max_n=3\): min_n must be "
                                         "<= max_n"):
        FastTextEmbedder(min_n=5, max_n=3).fit(DOCS)
    with pytest.raises(ValueError, match=r"Word2VecEmbedder\(hs=0, negative=0\).*nothing is trained"):
        Word2VecEmbedder(negative=0).fit(DOCS)
    assert Word2VecEmbedder(negative=0, hs=1, vector_size=4, epochs=1).fit(DOCS).dim_ == 4


def test_a_parameter_without_an_entry_is_a_bug_in_the_class():
    class Sloppy(TfidfEmbedder):
        def __init__(self, weighting="tfidf", new_knob=3):
            store_params(self, locals())

    with pytest.raises(TypeError, match=r"Sloppy has no _parameter_constraints entry for "
                                        r"\['new_knob'\]"):
        Sloppy().fit(DOCS)


def test_generated_values_are_refused_by_their_entry():
    entry = MLPClassifier._parameter_constraints["validation_fraction"]
    assert invalid_values(entry)[:2] == [0, 1]  # an open interval: its bounds are outside
    assert invalid_values(Word2VecEmbedder._parameter_constraints["sg"]) == [2, -1]
    assert "memroy" in invalid_values(TfidfEmbedder._parameter_constraints["cache"])


# ----------------------------------------------------------------------------------------------
# the reliability issue's parameter defects: each now stops at the start of fit
# ----------------------------------------------------------------------------------------------

ISSUE_EXAMPLES = [
    # hung forever (a gensim worker thread died on window <= 0)
    (Word2VecEmbedder, {"window": 0}), (Word2VecEmbedder, {"window": -1}),
    (FastTextEmbedder, {"window": 0}),
    # trained silently wrong
    (MLPClassifier, {"gradient_clip": -1.0}), (Word2VecEmbedder, {"workers": 0}),
    (Word2VecEmbedder, {"negative": -1}), (Word2VecEmbedder, {"epochs": 0}),
    (MLPClassifier, {"epochs": 0}), (Word2VecEmbedder, {"vector_size": 0}),
    (MLPClassifier, {"hidden_layer_sizes": (0,)}), (TfidfEmbedder, {"cache": "memroy"}),
    # accepted without a check
    (Word2VecEmbedder, {"sg": 5}), (GloveEmbedder, {"train": True, "learning_rate": -1}),
    (GloveEmbedder, {"train": True, "alpha": -2}), (GloveEmbedder, {"train": True, "x_max": 0}),
    (Doc2VecEmbedder, {"sample": -1}), (TfidfEmbedder, {"char_ngram_range": (0, 0)}),
    (SelfAttentionClassifier, {"dim_feedforward": 0}), (MLPClassifier, {"lr": 1e6}),
    # negative sizes that reached gensim / torch
    (Word2VecEmbedder, {"vector_size": -3}), (RNNClassifier, {"hidden_size": -1}),
    (TokenIndexer, {"max_length": -2}),
    # misleading messages
    (TfidfEmbedder, {"max_features": -5}), (MLPClassifier, {"validation_fraction": 0.0}),
    (MLPClassifier, {"validation_fraction": 1.5}), (FastTextEmbedder, {"bucket": 0}),
    (TransformerClassifier, {"validation_fraction": 1.5}),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("cls, params", ISSUE_EXAMPLES,
                         ids=[f"{c.__name__}-{'-'.join(map(str, p.values()))}" for c, p in ISSUE_EXAMPLES])
def test_issue_examples_fail_at_the_start_of_fit(cls, params):
    est = cls(**params)
    name, value = list(params.items())[-1]
    with pytest.raises(InvalidParameterError) as err:
        _fit(est)
    message = str(err.value)
    assert f"{name}={value!r}" in message and (" must " in message or "Did you mean" in message)
    for misleading in ("found no terms", " cv", "test_size", "oov="):
        assert misleading not in message
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]  # nothing fitted


def test_an_int_is_one_hidden_layer_as_in_scikit_learn():
    X = np.random.default_rng(0).normal(size=(12, 3))
    head = MLPClassifier(hidden_layer_sizes=32, epochs=1).fit(X, Y)
    widths = [m.out_features for m in head.net_.module_.body if hasattr(m, "out_features")]
    assert widths == [32, 2]
    assert MLPRegressor(hidden_layer_sizes=[8, 4], epochs=1).fit(X, np.arange(12.0)).predict(X).shape == (12,)


def test_cuda_without_cuda_is_reported_before_training():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU, so device='cuda' is valid here")
    head = MLPClassifier(device="cuda")
    with pytest.raises(ValueError, match=r"device='cuda' but torch sees no CUDA GPU here; use "
                                         r"device='auto'"):
        head.fit(np.ones((4, 2)), [0, 1] * 2)
    assert not hasattr(head, "net_")


def test_a_diverging_run_is_reported_with_the_fix():
    """Within the allowed range a learning rate can still be too large for the data: plain SGD at
    lr=1 on features of scale 1e4 overflows; the head says so instead of returning NaN."""
    X = np.random.default_rng(0).normal(size=(40, 5)).astype(np.float32) * 1e4
    head = MLPClassifier(lr=1.0, optimizer="sgd", standardize=False, epochs=5,
                         hidden_layer_sizes=(64, 64))
    with pytest.raises(ValueError, match=r"training diverged: the train loss became nan at epoch "
                                         r"\d \(lr=1.0\)\. Lower lr \(e\.g\. lr=0\.1\)"):
        head.fit(X, [0, 1] * 20)


# ----------------------------------------------------------------------------------------------
# fail before the expensive part: embedkit's pipelines check every step first
# ----------------------------------------------------------------------------------------------

@pytest.fixture()
def counts():
    NeuralEncoder.forward_counts = c = collections.Counter()
    yield c
    NeuralEncoder.forward_counts = None


def test_embedkits_pipelines_report_a_heads_bad_parameter_before_encoding(bbc, counts):
    """Where embedkit builds the pipeline (make_pipeline, compare, tune) every step is checked
    before the first one loads its model or encodes a document; in a Pipeline of the user's own,
    the head checks its parameter at its own fit, with the same message."""
    from embedkit.configure import make_pipeline

    docs, y = bbc.text[:40].tolist(), bbc.label[:40].tolist()
    with pytest.raises(ValueError, match=r"mlp: MLPClassifier\(lr=-1\): lr must be"):
        make_pipeline("minilm", "mlp", ["head.lr=-1"])
    assert not counts  # nothing was loaded or encoded
    own = Pipeline([("features", TfidfEmbedder()), ("head", MLPClassifier(lr=-1))])
    with pytest.raises(InvalidParameterError, match=r"MLPClassifier\(lr=-1\): lr must be"):
        own.fit(docs, y)
    union = Pipeline([("features", FeatureUnion([("a", TfidfEmbedder()), ("b", TfidfEmbedder())])),
                      ("head", MLPClassifier(dropout=1.0))])
    sklearn_head = Pipeline([("features", TfidfEmbedder()), ("head", LogisticRegression(C=-1))])
    for model, match in ((own, "lr=-1"), (union, "dropout=1.0"), (sklearn_head, "'C' parameter")):
        with pytest.raises(InvalidParameterError, match=match):
            cross_val_score(model, docs[:20], y[:20], cv=2, error_score="raise")


def test_no_parameter_check_reads_the_call_stack():
    """A step is never told which pipeline fits it, and embedkit does not look for it there."""
    import embedkit._params as params

    source = Path(params.__file__).read_text()
    assert "_getframe" not in source and "f_back" not in source and "inspect.stack" not in source


def test_an_ensemble_checks_every_member_before_the_first_trains(counts):
    """EnsembleClassifier fits its members one after another (cv + 1 times each for stacking):
    a bad parameter in the last member is reported before the first member encodes anything."""
    members = (("minilm", Pipeline([("features", TransformerEmbedder()),
                                    ("head", LogisticRegression())])),
               ("tfidf", Pipeline([("features", TfidfEmbedder()), ("head", MLPClassifier(lr=-1))])))
    ens = EnsembleClassifier(members=members, cv=2)
    outer = Pipeline([("features", "passthrough"), ("head", ens)])
    for model in (ens, outer):
        with pytest.raises(InvalidParameterError, match=r"MLPClassifier\(lr=-1\): lr must be"):
            model.fit(["a good film", "a bad film"] * 4, [1, 0] * 4)
    assert not counts  # MiniLM encoded nothing
    with pytest.raises(InvalidParameterError, match=r"EnsembleClassifier\(cv=1\): cv must be"):
        outer.set_params(head__cv=1).fit(["a good film", "a bad film"] * 4, [1, 0] * 4)


def test_a_valid_pipeline_still_encodes_and_fits(counts):
    pipe = Pipeline([("features", TransformerEmbedder(max_length=32)),
                     ("head", MLPClassifier(epochs=2))]).fit(DOCS, Y)
    assert set(counts) == set(DOCS)  # each distinct document through the network once
    assert pipe.predict(DOCS[:2]).shape == (2,)
