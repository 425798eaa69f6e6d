"""`embedkit.compare`: scores equal the corresponding Pipeline's, runs resume fold by fold,
parallel jobs give the scores of one job, metrics are scikit-learn scorers, and the splits
follow the dataset's protocol."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

import embedkit.compare as compare_module
from embedkit.compare import _splits, run_compare


@pytest.fixture(scope="module")
def sms_slice():
    """120 SMS messages, 100 ham and 20 spam (seed 0): small, imbalanced, short."""
    from embedkit.data.datasets import load_dataset

    df = load_dataset("sms-spam")
    parts = [df[df.label == "ham"].sample(100, random_state=0),
             df[df.label == "spam"].sample(20, random_state=0)]
    return pd.concat(parts).reset_index(drop=True)[["text", "label"]]


def test_compare_shares_the_fit_and_scores_like_the_pipeline(sms_slice, tmp_path, monkeypatch):
    from sklearn.model_selection import StratifiedKFold, cross_validate

    from embedkit.configure import make_pipeline

    fast = ["linear.epochs=5"]
    kwargs = {"representations": ["tfidf"], "heads": ["logreg", "linear"], "folds": 3,
              "output": tmp_path, "progress": False, "baselines": False, "n_jobs": 1}
    got = run_compare(sms_slice, params=fast, **kwargs)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    for head in ("logreg", "linear"):
        want = cross_validate(make_pipeline("tfidf", head, fast if head == "linear" else ()),
                              sms_slice.text.to_numpy(object), sms_slice.label,
                              cv=cv)["test_score"]
        row = got.set_index("head").loc[head]
        assert row.accuracy_mean == pytest.approx(want.mean(), abs=1e-12)
        assert row.accuracy_std == pytest.approx(want.std(), abs=1e-12)
    # interrupted after two of three folds: the rerun fits only the third, same table
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
    again = run_compare(sms_slice, params=fast, **kwargs)
    assert calls == [["linear", "logreg"]]
    timings = ["fit_seconds", "transform_seconds", "predict_seconds", "peak_mb"]
    pd.testing.assert_frame_equal(again.drop(columns=timings), got.drop(columns=timings))
    # another setting is another result, never one recorded for the old setting
    calls.clear()
    run_compare(sms_slice, params=["linear.epochs=4"], **kwargs)
    assert calls == [["linear"]] * 3


def test_compare_holdout_split():
    df = pd.DataFrame({"text": [f"t{i}" for i in range(100)], "label": ["a"] * 80 + ["b"] * 20})
    [(train, test)], protocol = _splits(df, 5, 0, holdout=0.2)
    assert protocol == "stratified 20% holdout" and len(test) == 20 and len(train) == 80
    assert not set(train) & set(test) and (df.label[test] == "b").sum() == 4
    with pytest.raises(ValueError, match="holdout=1.5.*between 0 and 1"):
        _splits(df, 5, 0, holdout=1.5)
    official = df.assign(split=["train"] * 90 + ["test"] * 10)
    assert _splits(official, 5, 0, holdout=0.2)[1] == "official test split"


def test_compare_in_parallel_equals_one_job(sms_slice, tmp_path):
    from embedkit.machine import process_threads

    scores = ["accuracy_mean", "accuracy_std", "f1_macro_mean", "f1_macro_std"]
    kwargs = {"representations": ["tfidf", "minilm"], "heads": ["logreg"], "folds": 3,
              "baselines": False, "progress": False}
    serial = run_compare(sms_slice, output=tmp_path / "one", n_jobs=1, **kwargs)
    parallel = run_compare(sms_slice, output=tmp_path / "two", n_jobs=2, **kwargs)
    pd.testing.assert_frame_equal(parallel[["representation", "head", *scores]],
                                  serial[["representation", "head", *scores]])
    assert parallel.attrs["n_jobs"] == 2 and serial.attrs["n_jobs"] == 1
    assert parallel.attrs["threads_per_job"] == max(1, process_threads() // 2)
    assert serial.attrs["threads_per_job"] == process_threads()
    # MiniLM's vectors do not depend on the fold: encoded once into a run cache the workers
    # read, charged to the folds by their share, then removed
    assert not (tmp_path / "two" / "embedding-cache").exists()
    minilm = parallel.set_index("representation").loc["minilm"]
    assert minilm.fit_seconds > 0 and minilm.transform_seconds > 0
    assert "2 jobs at a time" in (tmp_path / "two" / "results.md").read_text()


def test_fold_independence_is_read_from_the_cache_fingerprint(sms_slice):
    from embedkit.cache import MemoryCache
    from embedkit.registry import REPRESENTATIONS

    X = sms_slice.text.to_numpy(object)
    store = MemoryCache()
    assert compare_module._fold_independent(REPRESENTATIONS["minilm"].factory(), X, store)
    # GloVe's vectors are pretrained, but its unknown-word vector is learned from the fit corpus
    assert not compare_module._fold_independent(REPRESENTATIONS["glove"].factory(), X, store)
    assert not compare_module._fold_independent(REPRESENTATIONS["tfidf"].factory(), X, store)
    assert not compare_module._fold_independent(REPRESENTATIONS["doc2vec"].factory(), X, store)
    assert not compare_module._fold_independent("passthrough", X, store)


def test_scorers_names_positive_class_and_errors():
    from embedkit.data.targets import scorers

    y = ["ham"] * 8 + ["spam"] * 2
    found, positive = scorers(["f1", "accuracy", "roc_auc"], y)
    assert positive == "spam" and list(found) == ["f1", "accuracy", "roc_auc"]
    assert found["f1"]._kwargs["pos_label"] == "spam"
    assert scorers(["f1"], y, pos_label="ham")[1] == "ham"
    assert scorers(["accuracy"], y)[1] is None  # no positive class needed
    assert scorers(["f1"], [0] * 5 + [1] * 5)[1] == 1  # a tie: the greater label, as sklearn
    with pytest.raises(ValueError, match="unknown metric 'acuracy'. Did you mean 'accuracy'"):
        scorers(["acuracy"])
    with pytest.raises(ValueError, match="name each metric once"):
        scorers(["accuracy", "accuracy"])
    with pytest.raises(ValueError, match="--pos-label 'spma' is not a class.*Did you mean 'spam'"):
        scorers(["f1"], y, pos_label="spma")
    with pytest.raises(ValueError, match="--metric f1 scores one positive class.*3 classes. "
                                         "Use f1_macro, f1_weighted or f1_micro"):
        scorers(["f1"], ["a", "b", "c"])
    with pytest.raises(ValueError, match="--metric roc_auc .* Use roc_auc_ovr"):
        scorers(["roc_auc"], ["a", "b", "c"])


class _ThreadProbe(ClassifierMixin, BaseEstimator):
    """A head that writes, at fit, the thread pools of the process fitting it (into ``log``)
    and predicts the first class."""

    def __init__(self, log=None):
        self.log = log

    def fit(self, X, y):
        import json
        import os
        from pathlib import Path

        import torch
        from threadpoolctl import threadpool_info

        blas = sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})
        Path(self.log, f"{os.getpid()}-{len(os.listdir(self.log))}.json").write_text(json.dumps(
            {"pid": os.getpid(), "torch": torch.get_num_threads(), "blas": blas}))
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.classes_[0])


def test_compare_runs_its_folds_in_workers_started_under_the_thread_plan(tmp_path):
    import json
    import os

    from embedkit.machine import ThreadPlan, available_cores, plan_threads

    jobs, plan = compare_module._jobs(2, n_tasks=4)
    assert jobs == 2 and plan == plan_threads(workers=2)
    assert compare_module._jobs(None, n_tasks=1) == (1, plan_threads(workers=1))
    # a plan whose numbers joblib alone would not give a worker (it gives cores // 2 of each)
    threads = min(2, available_cores())
    plan = ThreadPlan(workers=2, threads=threads, cores=2 * threads, blas=1)
    X, y = np.arange(40.0).reshape(20, 2), np.array([0, 1] * 10)
    tasks = [("passthrough", 0, "passthrough", ["probe"])] * 4
    scores = {}
    compare_module._run_tasks(
        tasks, jobs, plan,
        lambda t: ("passthrough", {"probe": _ThreadProbe(str(tmp_path))}, X, y, X, y, None, plan),
        lambda n, sc: scores.setdefault(n, sc), progress=False)
    assert sorted(scores) == [0, 1, 2, 3] and scores[0]["probe"]["accuracy"] == 0.5
    seen = [json.loads(f.read_text()) for f in tmp_path.glob("*.json")]
    assert len(seen) == 4 and all(s["pid"] != os.getpid() for s in seen)
    assert {s["torch"] for s in seen} == {threads} and {tuple(s["blas"]) for s in seen} == {(1,)}
