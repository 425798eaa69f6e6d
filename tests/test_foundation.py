"""Behaviour of the foundation: inputs, containers, TF-IDF, the MLP head, datasets, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing

from embedkit import MLPClassifier, MLPRegressor, TfidfEmbedder
from embedkit.documents import Tokenizer, validate_documents
from embedkit.sequences import Sequences, TokenIds, masked_pool


# ---------------------------------------------------------------- documents
def test_validate_documents_forms():
    assert validate_documents(np.array(["a", "b"])) == ["a", "b"]
    assert validate_documents(pd.Series(["x", "y"], index=[5, 2])) == ["x", "y"]
    assert validate_documents(pd.DataFrame({"t": ["x"]})) == ["x"]
    assert validate_documents(iter(["g"])) == ["g"]
    assert type(validate_documents(np.array(["a"]))[0]) is str


def test_validate_documents_names_many_rows():
    docs = ["ok"] + [None] * 7
    with pytest.raises(ValueError, match=r"7 row\(s\).*1 \(None\).*and 2 more.*fillna"):
        validate_documents(docs)
    with pytest.raises(ValueError, match="one text column"):
        validate_documents(pd.DataFrame({"a": ["x"], "b": ["y"]}))
    with pytest.raises(ValueError, match="1-D array"):
        validate_documents(np.array([["a", "b"], ["c", "d"]]))


def test_tokenizer():
    tok = Tokenizer()
    assert tok("Don't panic, it's E-mail!") == ["don't", "panic", ",", "it's", "e-mail", "!"]
    assert Tokenizer(lowercase=False)("New York") == ["New", "York"]
    assert tok.tokenize_all(["a b", ""]) == [["a", "b"], []]
    import pickle

    assert pickle.loads(pickle.dumps(tok))("A B") == ["a", "b"]


# ---------------------------------------------------------------- sequences
def _seq():
    values = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2) + 1
    lengths = np.array([3, 1, 0, 2])
    values[np.arange(3)[None, :] >= lengths[:, None]] = 0
    return Sequences(values, lengths, tokens=[["a", "b", "c"], ["d"], [], ["e", "f"]])


def test_sequences_indexing_and_mask():
    s = _seq()
    assert len(s) == 4 and s.shape == (4, 3, 2)
    assert s.mask.tolist()[1] == [True, False, False]
    one = s[3]
    assert one.shape == (1, 2, 2) and one.tokens[0] == ["e", "f"]  # trimmed to its length
    assert s[1:3].lengths.tolist() == [1, 0]
    assert s[np.array([True, False, False, True])].lengths.tolist() == [3, 2]
    assert s[[3, 0]].lengths.tolist() == [2, 3]
    picked = _safe_indexing(s, np.array([2, 0]))  # how scikit-learn's CV splits it
    assert isinstance(picked, Sequences) and picked.lengths.tolist() == [0, 3]
    with pytest.raises(IndexError):
        s[4]
    with pytest.raises(ValueError, match="lengths must lie"):
        Sequences(np.zeros((1, 2, 1)), [3])


def test_masked_pool_values_numpy_and_torch():
    import torch
    s = _seq()
    mean = s.pool("mean")
    np.testing.assert_allclose(mean[0], s.values[0].mean(axis=0))
    np.testing.assert_allclose(mean[1], s.values[1, 0])
    np.testing.assert_array_equal(mean[2], 0)  # empty row -> zeros, not NaN
    mx = s.pool("max")
    np.testing.assert_allclose(mx[3], s.values[3, :2].max(axis=0))
    np.testing.assert_array_equal(mx[2], 0)
    np.testing.assert_allclose(s.pool("sum")[0], s.values[0].sum(axis=0))
    for how in ("mean", "max", "sum"):
        t = masked_pool(torch.from_numpy(s.values), torch.from_numpy(s.mask), how).numpy()
        np.testing.assert_allclose(t, s.pool(how), rtol=1e-6)
    with pytest.raises(ValueError, match="pooling='median'"):
        s.pool("median")


def test_token_ids_container():
    t = TokenIds([[2, 3, 0], [4, 0, 0]], lengths=[2, 1], vocabulary=["<pad>", "<unk>", "a", "b", "c"],
                 vectors=np.ones((5, 3)))
    assert t[1].ids.tolist() == [[4]] and t[1].vectors.shape == (5, 3)
    with pytest.raises(ValueError, match="ids must lie"):
        TokenIds([[9]], [1], ["<pad>", "<unk>"])
    with pytest.raises(ValueError, match="vectors has 2 rows"):
        TokenIds([[1]], [1], ["<pad>", "<unk>", "a"], vectors=np.ones((2, 3)))


# ---------------------------------------------------------------- TF-IDF
def test_tfidf_matches_scikit_learn(sentences):
    ours = TfidfEmbedder().fit(sentences)
    ref = TfidfVectorizer(token_pattern=None, tokenizer=Tokenizer(lowercase=False)).fit(sentences)
    got = ours.transform(sentences[:6])
    assert sp.issparse(got) and got.dtype == np.float32
    np.testing.assert_allclose(got.toarray(), ref.transform(sentences[:6]).toarray(), rtol=1e-5)
    assert list(ours.get_feature_names_out()) == list(ref.get_feature_names_out())


def test_tfidf_weightings_chars_and_lsa(sentences):
    counts = TfidfEmbedder(weighting="count").fit(sentences).transform(["the the cat"])
    binary = TfidfEmbedder(weighting="binary").fit(sentences).transform(["the the cat"])
    assert counts.max() == 2 and binary.max() == 1
    words = TfidfEmbedder().fit(sentences)
    both = TfidfEmbedder(char_ngram_range=(2, 3)).fit(sentences)
    assert both.dim_ > words.dim_
    lsa = TfidfEmbedder(n_components=5).fit(sentences)
    out = lsa.transform(sentences[:3] + [""])
    assert isinstance(out, np.ndarray) and out.shape == (4, 5)
    np.testing.assert_allclose(np.linalg.norm(out[:3], axis=1), 1, rtol=1e-5)
    np.testing.assert_array_equal(out[3], 0)  # empty document: zero vector, finite
    frame = TfidfEmbedder(n_components=5).set_output(transform="pandas").fit_transform(sentences)
    assert list(frame.columns)[:2] == ["lsa0", "lsa1"]


def test_tfidf_errors(sentences):
    with pytest.raises(ValueError, match="found no terms.*min_df"):
        TfidfEmbedder().fit(["", "  "])
    with pytest.raises(ValueError, match="n_components=500 must lie"):
        TfidfEmbedder(n_components=500).fit(sentences)
    with pytest.raises(ValueError, match="weighting='bm25'"):
        TfidfEmbedder(weighting="bm25").fit(sentences)
    with pytest.raises(ValueError, match="output='sequence'.*no sequence form"):
        TfidfEmbedder(output="sequence").fit(sentences)


# ---------------------------------------------------------------- MLP head
def _blobs(n=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)).astype(np.float32) + y[:, None] * 1.5
    return X, y


def test_mlp_deterministic_and_sparse_equals_dense():
    X, y = _blobs()
    a = MLPClassifier(epochs=5, standardize=False).fit(X, y).predict_proba(X)
    b = MLPClassifier(epochs=5, standardize=False).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    c = MLPClassifier(epochs=5).fit(sp.csr_matrix(X), y).predict_proba(sp.csr_matrix(X))
    np.testing.assert_allclose(a, c, atol=1e-6)  # sparse input is never standardized
    d = MLPClassifier(epochs=5, random_state=1, standardize=False).fit(X, y).predict_proba(X)
    assert not np.allclose(a, d)


def test_mlp_standardizes_dense_input_with_training_statistics():
    X, y = _blobs()
    a = MLPClassifier(epochs=5).fit(X, y)
    # a per-feature affine change of the input is undone by the stored mean and scale
    shifted = X * np.array([100, 0.01, 1, 5, 2, 3], dtype=np.float32) + 7
    b = MLPClassifier(epochs=5).fit(shifted, y)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(shifted), atol=1e-4)
    module = a.net_.module_
    np.testing.assert_allclose(module.mean.numpy(), X.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(module.scale.numpy(), X.std(0), rtol=1e-5)
    # without standardizing, the same change alters the fit
    c = MLPClassifier(epochs=5, standardize=False).fit(shifted, y)
    assert not np.allclose(a.predict_proba(X), c.predict_proba(shifted), atol=1e-2)


def test_sparse_batches_densify_only_the_batch():
    from embedkit.base import HeadInput
    from embedkit.heads._torch import HeadDataset, collate

    X = sp.random(50, 1000, density=0.01, format="csr", random_state=0, dtype=np.float32)
    data = HeadDataset(HeadInput("sparse", X, 1000))
    assert sp.issparse(data[0][0])
    batch, _ = collate([data[i] for i in (3, 7)])
    assert batch["x"].shape == (2, 1000)
    np.testing.assert_allclose(batch["x"].numpy(), X[[3, 7]].toarray())


def test_mlp_labels_history_class_weight_and_errors():
    X, y = _blobs()
    labels = np.array(["ant", "bee", "cat"])[y]
    clf = MLPClassifier(epochs=30, class_weight="balanced").fit(X, labels)
    assert set(clf.predict(X)) <= set(labels) and list(clf.classes_) == ["ant", "bee", "cat"]
    assert (clf.predict(X) == labels).mean() > 0.85
    assert len(clf.history_) == 30 and clf.history_[-1]["train_loss"] < clf.history_[0]["train_loss"]
    with pytest.raises(ValueError, match="only one class"):
        MLPClassifier().fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="optimizer='lbfgs'"):
        MLPClassifier(optimizer="lbfgs").fit(X, y)
    with pytest.raises(ValueError, match="received raw text.*TfidfEmbedder"):
        MLPClassifier().fit(["some text"] * 4, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="class_weight names classes"):
        MLPClassifier(class_weight={"zebra": 2.0}).fit(X, labels)


def test_mlp_early_stopping_restores_best():
    X, y = _blobs(n=300)
    clf = MLPClassifier(epochs=200, early_stopping=True, patience=2, lr=1e-2).fit(X, y)
    assert clf.n_epochs_ < 200
    assert "valid_loss" in clf.history_[0]


def test_mlp_on_sequences_and_ids_pools_with_mask():
    s = _seq()
    y = np.array([0, 1, 0, 1])
    clf = MLPClassifier(epochs=3).fit(s, y)
    padded = Sequences(np.concatenate([s.values, np.zeros((4, 5, 2), np.float32)], axis=1), s.lengths)
    np.testing.assert_allclose(clf.predict_proba(padded), clf.predict_proba(s), atol=1e-6)
    with pytest.raises(ValueError, match="dimension 2"):
        clf.predict(Sequences(np.zeros((1, 2, 3)), [1]))
    ids = TokenIds([[2, 3], [4, 0], [3, 3], [2, 0]], [2, 1, 2, 1], ["<pad>", "<unk>", "a", "b", "c"])
    dan = MLPClassifier(epochs=3, embedding_dim=8).fit(ids, y)
    assert dan.net_.module_.sequence.embedding.weight.shape == (5, 8)
    frozen = TokenIds(ids.ids, ids.lengths, ids.vocabulary, vectors=np.eye(5, 4))
    fz = MLPClassifier(epochs=3, freeze=True).fit(frozen, y)
    np.testing.assert_array_equal(fz.net_.module_.sequence.embedding.weight.detach().numpy(), np.eye(5, 4))


def test_mlp_regressor_single_and_multi_output():
    X, y = _blobs()
    target = X[:, 0] * 2.0 - X[:, 1]
    reg = MLPRegressor(epochs=60, lr=1e-2).fit(X, target)
    pred = reg.predict(X)
    assert pred.shape == (len(X),) and pred.dtype == np.float64
    assert reg.score(X, target) > 0.8
    two = MLPRegressor(epochs=5).fit(X, np.c_[target, -target]).predict(X)
    assert two.shape == (len(X), 2)


# ---------------------------------------------------------------- pipelines
def test_grid_search_tfidf_mlp_n_jobs_2(bbc):
    small = bbc.groupby("label").head(24)
    pipe = Pipeline([("features", TfidfEmbedder(min_df=2)), ("head", MLPClassifier(epochs=10, lr=1e-2))])
    search = GridSearchCV(pipe, {"head__hidden_layer_sizes": [(), (32,)]}, cv=2, n_jobs=2)
    search.fit(pd.Series(small.text.to_numpy(), index=np.arange(len(small)) * 7 + 3), small.label)
    assert search.best_score_ > 0.6
    assert search.cv_results_["mean_test_score"].shape == (2,)


@pytest.mark.slow
def test_tfidf_mlp_reaches_95_percent_on_bbc_news(bbc_split):
    train, test = bbc_split
    pipe = Pipeline([("features", TfidfEmbedder(sublinear_tf=True, min_df=2)),
                     ("head", MLPClassifier(epochs=10))])
    pipe.fit(train.text, train.label)
    acc = (pipe.predict(test.text) == test.label.to_numpy()).mean()
    assert acc >= 0.95, acc


# ---------------------------------------------------------------- datasets
def test_builtin_datasets(bbc):
    from embedkit.datasets import list_datasets, load_dataset

    assert bbc.shape == (2225, 2)
    assert bbc.label.value_counts().to_dict() == {"sports": 511, "business": 510, "politics": 417,
                                                  "tech": 401, "entertainment": 386}
    trec = load_dataset("trec")
    assert trec.split.value_counts().to_dict() == {"train": 5452, "test": 500}
    assert trec.query("split == 'test'").label.value_counts()["ABBR"] == 9
    assert trec.text[0] == "How did serfdom develop in and then leave Russia ?" and trec.label[0] == "DESC"
    spam = load_dataset("sms-spam")
    assert len(spam) == 4837 and set(spam.label) == {"ham", "spam"}
    assert set(list_datasets().name) >= {"bbc-news", "trec", "sms-spam"}  # + tests/test_datasets.py
    quick = load_dataset("trec", quick=True)
    assert quick.split.value_counts().to_dict() == {"train": 300, "test": 300}
    with pytest.raises(ValueError, match="unknown dataset 'imdb'.*load_texts"):
        load_dataset("imdb")


def test_load_texts_formats(tmp_path):
    from embedkit.datasets import load_texts

    df = pd.DataFrame({"review": ["good", "bad", None], "stars": [5, 1, 3]})
    df.to_csv(tmp_path / "a.csv", index=False)
    df.to_parquet(tmp_path / "a.parquet")
    df.to_json(tmp_path / "a.jsonl", orient="records", lines=True)
    for name in ("a.csv", "a.parquet", "a.jsonl"):
        got = load_texts(tmp_path / name, "review", "stars")
        assert got.text.tolist() == ["good", "bad", ""] and got.label.tolist() == [5, 1, 3]
    for label, texts in {"pos": ["great", "fine"], "neg": ["awful"]}.items():
        (tmp_path / "imdb" / label).mkdir(parents=True)
        for i, t in enumerate(texts):
            (tmp_path / "imdb" / label / f"{i}.txt").write_text(t)
    folder = load_texts(tmp_path / "imdb")
    assert sorted(zip(folder.label, folder.text)) == [("neg", "awful"), ("pos", "fine"), ("pos", "great")]
    with pytest.raises(ValueError, match="no column 'text'.*'review', 'stars'"):
        load_texts(tmp_path / "a.csv")
    with pytest.raises(FileNotFoundError, match="nope.csv does not exist"):
        load_texts(tmp_path / "nope.csv")


def test_unknown_resource_lists_known():
    from embedkit.resources import ResourceNotFound, resource_path

    with pytest.raises(ResourceNotFound, match="unknown resource 'glove-xl'.*glove-6b-50d"):
        resource_path("glove-xl")


# ---------------------------------------------------------------- CLI
def test_cli_compare_quick_end_to_end(tmp_path):
    from typer.testing import CliRunner

    from embedkit.cli import app

    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["compare", "--quick", "-r", "tfidf", "-h", "logreg", "-h", "linear",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "results.csv")
    assert set(table["head"]) == {"logreg", "linear"}
    assert (table.accuracy_mean > 0.85).all()
    assert "± " in (out / "results.md").read_text()
    assert (out / "results.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "results_time.png").read_bytes()[:4] == b"\x89PNG"
    assert (table.peak_mb >= 0).all() and (table.transform_seconds > 0).all()
    assert (table.fit_seconds > table.transform_seconds).all()
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 2
    # a second run resumes from runs.jsonl instead of refitting
    again = CliRunner().invoke(app, ["compare", "--quick", "-r", "tfidf", "-h", "logreg", "-h", "linear",
                                     "-o", str(out)])
    assert again.exit_code == 0 and len((out / "runs.jsonl").read_text().splitlines()) == 2
    bad = CliRunner().invoke(app, ["compare", "--quick", "-r", "word3vec", "-o", str(out)])
    assert bad.exit_code == 2 and "unknown representation" in bad.output


def test_compare_shares_the_fit_and_scores_like_the_pipeline(tmp_path, monkeypatch):
    from sklearn.model_selection import StratifiedKFold, cross_validate

    from embedkit.datasets import _stratified_sample, load_dataset
    from pipelines import grids
    from pipelines.compare import run_compare

    got = run_compare("bbc-news", ["tfidf"], ["logreg", "linear"], quick=True, output=tmp_path,
                      progress=False)
    sample = _stratified_sample(load_dataset("bbc-news"), 300, 0).reset_index(drop=True)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    for head in ("logreg", "linear"):
        want = cross_validate(grids.make_pipeline("tfidf", head), sample.text.to_numpy(object),
                              sample.label, cv=cv)["test_score"]
        row = got.set_index("head").loc[head]
        assert row.accuracy_mean == pytest.approx(want.mean(), abs=1e-12)
        assert row.accuracy_std == pytest.approx(want.std(), abs=1e-12)
    # interrupted after two of three folds: the rerun fits only the third, same table
    import pipelines.compare as compare_module

    (tmp_path / "runs.jsonl").unlink()
    lines = (tmp_path / "folds.jsonl").read_text().splitlines()
    assert len(lines) == 6  # 3 folds x 2 heads
    (tmp_path / "folds.jsonl").write_text("\n".join(lines[:4]) + "\n")
    calls = []
    real = compare_module._score_fold

    def counting(rep, heads, *data):
        calls.append(sorted(heads))
        return real(rep, heads, *data)

    monkeypatch.setattr(compare_module, "_score_fold", counting)
    again = run_compare("bbc-news", ["tfidf"], ["logreg", "linear"], quick=True, output=tmp_path,
                        progress=False)
    assert calls == [["linear", "logreg"]]
    pd.testing.assert_frame_equal(again.drop(columns=["fit_seconds", "transform_seconds",
                                                      "predict_seconds", "peak_mb"]),
                                  got.drop(columns=["fit_seconds", "transform_seconds",
                                                    "predict_seconds", "peak_mb"]))


def test_compare_holdout_split():
    from pipelines.compare import _splits

    df = pd.DataFrame({"text": [f"t{i}" for i in range(100)], "label": ["a"] * 80 + ["b"] * 20})
    [(train, test)], protocol = _splits(df, 5, 0, holdout=0.2)
    assert protocol == "stratified 20% holdout" and len(test) == 20 and len(train) == 80
    assert not set(train) & set(test) and (df.label[test] == "b").sum() == 4
    with pytest.raises(ValueError, match="holdout=1.5.*between 0 and 1"):
        _splits(df, 5, 0, holdout=1.5)
    official = df.assign(split=["train"] * 90 + ["test"] * 10)
    assert _splits(official, 5, 0, holdout=0.2)[1] == "official test split"


def test_named_experiments():
    from pipelines import experiments, grids

    assert {"course_comparison", "representations_only"} <= set(experiments.available())
    course = grids.pairs(experiment="course_comparison")
    assert len(course) == 12 and all(grids.compatible(r, h) for r, h in course)
    assert ("passthrough", "finetune") in course and ("learned", "mlp") in course
    only = grids.pairs(experiment="representations_only")
    assert {h for _, h in only} == {"logreg"}
    assert {r for r, _ in only} == {n for n, e in grids.REPRESENTATIONS.items() if "pooled" in e.forms}
    with pytest.raises(ValueError, match="unknown experiment 'nope'.*course_comparison"):
        grids.pairs(experiment="nope")
    with pytest.raises(ValueError, match="either an experiment or"):
        grids.pairs(["tfidf"], experiment="course_comparison")


def test_cli_lists():
    from typer.testing import CliRunner

    from embedkit.cli import app

    result = CliRunner().invoke(app, ["datasets"])
    assert result.exit_code == 0 and "bbc-news" in result.output and "trec" in result.output
    listed = CliRunner().invoke(app, ["compare", "--list"])
    assert "tfidf" in listed.output and "logreg" in listed.output
    assert "course_comparison" in listed.output and "representations_only" in listed.output


def test_cli_word_vector_commands():
    from typer.testing import CliRunner

    from embedkit.cli import app

    result = CliRunner().invoke(app, ["analogy", "man", "king", "woman", "--topn", "3"])
    assert result.exit_code == 0 and result.output.split()[0] == "queen"
    near = CliRunner().invoke(app, ["neighbors", "football", "--topn", "5"])
    assert near.exit_code == 0 and "soccer" in near.output.split()
    bad = CliRunner().invoke(app, ["neighbors", "zzqxv"])
    assert bad.exit_code == 2 and "not in the vocabulary" in bad.output


def test_import_embedkit_is_light():
    import subprocess
    import sys

    code = "import sys, embedkit; embedkit.TfidfEmbedder; print(sorted(m for m in ('torch','gensim','transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
