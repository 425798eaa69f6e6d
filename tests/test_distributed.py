"""Dask integration on a real LocalCluster (2 worker processes, started inside the tests):
distributed extraction equals local extraction, the model reaches each worker once, parquet
output survives a worker killed mid-task, and grid search under the Dask joblib backend equals
n_jobs=1. Streaming on one machine (no Dask) is tested in test_streaming.py."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import cloudpickle
import dask
import dask.bag as db
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster, get_task_stream

from embedkit import GloveEmbedder, TfidfEmbedder, TransformerEmbedder, load_dataset
from embedkit.distributed import dask_backend, extract_features, write_parquet

# classes defined here travel to the worker processes by value, whatever their sys.path
cloudpickle.register_pickle_by_value(sys.modules[__name__])

N_DOCS = 1200

# Representations for which distributed extraction must equal local extraction, and how many of
# the questions each extracts (MiniLM's forward passes, three times over, are the dear part: 300
# still fill every partition)
REPRESENTATIONS = [
    pytest.param(lambda docs: TfidfEmbedder(n_components=32).fit(docs), N_DOCS, id="tfidf-lsa"),
    pytest.param(lambda docs: GloveEmbedder().fit(docs), N_DOCS, id="glove"),
    pytest.param(lambda docs: TransformerEmbedder(max_length=32).fit(docs[:200]), 300, id="minilm"),
]


@pytest.fixture(scope="session")
def cluster():
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                      dashboard_address=None) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def client(cluster):
    # not the default client, so that other test files keep dask's local schedulers
    with Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2)
        yield client


@pytest.fixture(scope="session")
def trec():
    df = load_dataset("trec")
    df = df[df.split == "train"].iloc[:N_DOCS].reset_index(drop=True)
    df.insert(0, "id", np.arange(len(df), dtype=np.int64) * 7 + 3)  # ids unlike positions
    return df


@pytest.fixture(scope="session")
def lsa(trec):
    return TfidfEmbedder(n_components=32).fit(trec.text)


# ---------------------------------------------------------------------------------------
# extraction
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("make, n_docs", REPRESENTATIONS)
def test_distributed_extraction_equals_local(make, n_docs, trec, client):
    trec = trec.iloc[:n_docs]
    rep = make(trec.text.tolist())
    local = np.asarray(rep.transform(trec.text), dtype=np.float32)
    names = list(rep.get_feature_names_out())

    ddf = dd.from_pandas(trec, npartitions=5)
    feats = extract_features(rep, ddf, "text", keep=["id", "label"], client=client)
    assert list(feats.columns) == ["id", "label", *names]
    assert (feats.dtypes[names] == np.float32).all()
    out = client.compute(feats).result()
    assert out["id"].tolist() == trec["id"].tolist()
    assert out["label"].tolist() == trec["label"].tolist()
    np.testing.assert_allclose(out[names].to_numpy(), local, rtol=1e-5, atol=1e-6)

    bag = db.from_sequence(trec.text.tolist(), npartitions=4)
    arr = extract_features(rep, bag, client=client, as_array=True)
    assert arr.shape == local.shape and arr.dtype == np.float32
    np.testing.assert_allclose(client.compute(arr).result(), local, rtol=1e-5, atol=1e-6)


def test_local_schedulers_and_series_input(lsa, trec):
    """Without a cluster the model is one delayed key; threaded scheduler, dask Series in."""
    series = dd.from_pandas(trec.set_index("id")["text"], npartitions=3)
    feats = extract_features(lsa, series)
    with dask.config.set(scheduler="threads"):
        out = feats.compute()
    assert out.index.tolist() == trec["id"].tolist()  # rows keep the input's index
    np.testing.assert_allclose(out.to_numpy(), lsa.transform(trec.text), rtol=1e-5, atol=1e-6)
    graph = dict(feats.__dask_graph__())
    model_keys = [k for k in graph if "embedkit-model-" in str(k)]
    assert len(model_keys) == 1  # one key holds the model, whatever the partition count


class CountingTfidf(TfidfEmbedder):
    """Writes one line (its pid) to ``log_path`` each time an instance is unpickled."""

    log_path = None

    def __setstate__(self, state):
        super().__setstate__(state)
        if self.log_path:
            with open(self.log_path, "a") as f:
                f.write(f"{os.getpid()}\n")


def test_model_reaches_each_worker_once(trec, client, tmp_path):
    rep = CountingTfidf(n_components=16).fit(trec.text)
    rep.log_path = str(tmp_path / "loads.txt")
    ddf = dd.from_pandas(trec, npartitions=12)
    # Dask's active memory manager drops a replica that no task on its worker waits for (every
    # 2 s by default), and the worker fetches the model again when its tasks start; on a slow
    # machine the gap between scatter and compute is long enough for that (a CI run saw one
    # worker load it twice). Stop the manager so that this checks the broadcast alone.
    client.amm.stop()
    try:
        out = client.compute(extract_features(rep, ddf, keep="id", client=client)).result()
    finally:
        client.amm.start()
    assert len(out) == len(trec)
    loads = Path(rep.log_path).read_text().split()
    workers = {str(pid) for pid in client.run(os.getpid).values()}
    # broadcast: one copy per worker process, not one per partition (12 here)
    assert sorted(loads) == sorted(workers)


def test_sparse_output_needs_densify_or_lsa(trec, client):
    tfidf = TfidfEmbedder(min_df=3).fit(trec.text)
    ddf = dd.from_pandas(trec, npartitions=3)
    with pytest.raises(ValueError, match=r"n_components=300.*densify=True"):
        extract_features(tfidf, ddf)
    feats = extract_features(tfidf, ddf, keep="id", densify=True, client=client)
    out = client.compute(feats).result()
    np.testing.assert_allclose(out.drop(columns="id").to_numpy(),
                               tfidf.transform(trec.text).toarray(), rtol=1e-6)


def test_extraction_errors(lsa, trec):
    ddf = dd.from_pandas(trec, npartitions=2)
    with pytest.raises(ValueError, match="not fitted"):
        extract_features(TfidfEmbedder(n_components=8), ddf)
    with pytest.raises(ValueError, match="no column 'body'.*columns are"):
        extract_features(lsa, ddf, column="body")
    with pytest.raises(ValueError, match="keep= lists the text column"):
        extract_features(lsa, ddf, keep=["id", "text"])
    with pytest.raises(ValueError, match="expected a dask DataFrame"):
        extract_features(lsa, trec)
    bad = trec.assign(text=trec.text.astype(object))
    bad.loc[700, "text"] = None
    feats = extract_features(lsa, dd.from_pandas(bad, npartitions=2))
    with pytest.raises(ValueError, match=r"partition 1: .*row"):
        feats.compute(scheduler="sync")


# ---------------------------------------------------------------------------------------
# grid search on the cluster
# ---------------------------------------------------------------------------------------


def test_grid_search_dask_backend_equals_serial(trec, cluster):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    from embedkit import MLPClassifier

    docs, labels = trec.text.iloc[:300].tolist(), trec.label.iloc[:300].to_numpy()
    pipe = Pipeline([("features", TfidfEmbedder(n_components=20)),
                     ("head", MLPClassifier(hidden_layer_sizes=(16,), epochs=3,
                                            early_stopping=False, random_state=0))])
    grid = [{"head__lr": [1e-3, 3e-2]},
            {"features": [TfidfEmbedder()], "head": [LogisticRegression(C=10, max_iter=300)]}]

    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as on the workers (Dask sets OMP_NUM_THREADS=1 there)
    try:
        serial = GridSearchCV(pipe, grid, cv=2, n_jobs=1).fit(docs, labels)
    finally:
        torch.set_num_threads(threads)
    # connect by address, as `--scheduler tcp://...` does
    with dask_backend(cluster.scheduler_address) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        with get_task_stream(client) as stream:
            parallel = GridSearchCV(pipe, grid, cv=2, n_jobs=-1).fit(docs, labels)
    # the fits ran as tasks on both worker processes
    assert len({t["worker"] for t in stream.data}) == 2

    assert repr(parallel.best_params_) == repr(serial.best_params_)
    np.testing.assert_allclose(parallel.cv_results_["mean_test_score"],
                               serial.cv_results_["mean_test_score"], atol=1e-9)
    assert serial.cv_results_["mean_test_score"].max() > 0.4  # it learned something (6 classes)


def test_tune_on_the_cluster_fits_the_local_candidates_on_both_workers(trec, cluster, monkeypatch):
    """Tuner(backend="dask") fits the sparse tier on the cluster's workers, as many at once as
    they have threads, and spreads the frozen encoder's pass over them (the vectors cached in
    this process for the frozen tier's models); with every variant within reach (so that
    neither run's choices depend on the order results arrive in), its candidates and their
    scores are the local run's."""
    from embedkit import Tuner
    from embedkit.tuning._schedule import Schedule

    monkeypatch.setattr(Schedule, "reach", lambda self, pair: 1.0)
    docs, labels = trec.text.iloc[:300], trec.label.iloc[:300]
    pairs = [("tfidf", "logreg"), ("bow", "logreg"), ("minilm", "logreg")]
    local = Tuner(budget="10m", pairs=pairs, progress=False, validation=0.2).fit(docs, labels)
    lines = []
    with dask_backend(cluster.scheduler_address) as client, get_task_stream(client) as stream:
        remote = Tuner(budget="10m", pairs=pairs, progress=lines.append, validation=0.2,
                       backend="dask").fit(docs, labels)

    def scores(tuner):
        return {c.label: c.score for c in tuner.search_.board.candidates if c.kind == "candidate"}

    assert len(scores(local)) == 1 + 11 + 1 + 1 + 1  # every setting of the three pairs
    assert scores(remote).keys() == scores(local).keys()
    for label, score in scores(local).items():
        assert scores(remote)[label] == pytest.approx(score, abs=1e-9), label
    # the frozen encoder's pass ran as tasks on both workers, its vectors cached here
    assert any("minilm: 300 documents encoded once" in line for line in lines)
    encoded = [t for t in stream.data if str(t["key"]).startswith("_transform")]
    assert len({t["worker"] for t in encoded}) == 2
    baseline = next(c for c in remote.search_.board.candidates if c.name == "plain MiniLM + LR")
    assert baseline.score == pytest.approx(
        next(c for c in local.search_.board.candidates if c.name == baseline.name).score, abs=1e-9)
    fitted = [c for c in remote.search_.board.candidates
              if c.kind == "candidate" and c.representation != "minilm"]
    assert {c.lane for c in fitted} == {"cluster"} and len({c.where for c in fitted}) == 2
    overlap = [(a, b) for a in fitted for b in fitted if a is not b
               and a.started <= b.started < a.started + a.fit_seconds + a.predict_seconds]
    assert overlap  # two at once, never two on one single-thread worker
    assert all(a.where != b.where for a, b in overlap)
    with pytest.raises(ValueError, match=r"backend='dask'\) needs a running Dask client"):
        Tuner(budget="1m", pairs=pairs, backend="dask").fit(docs, labels)


def test_dask_backend_argument_errors(client):
    with pytest.raises(ValueError, match="n_workers=0"):
        with dask_backend(n_workers=0):
            pass
    with pytest.raises(ValueError, match="cannot resize"):
        with dask_backend("tcp://127.0.0.1:1", n_workers=2):
            pass
    with pytest.raises(ValueError, match="n_workers only applies"):
        with dask_backend(client, n_workers=2):
            pass
    with pytest.raises(ValueError, match="scheduler is a int"):
        with dask_backend(8786):
            pass


# ---------------------------------------------------------------------------------------
# a worker killed mid-task (kept last: it restarts one of the shared cluster's workers)
# ---------------------------------------------------------------------------------------


class SlowTfidf(TfidfEmbedder):
    """TF-IDF that takes ``delay`` seconds per partition and logs which process started it."""

    delay = 0.0
    log_path = None

    def _transform(self, docs):
        if self.log_path:
            digest = hashlib.sha1("\n".join(docs).encode()).hexdigest()[:12]
            with open(self.log_path, "a") as f:
                f.write(f"{os.getpid()} {digest}\n")
        time.sleep(self.delay)
        return super()._transform(docs)


def test_worker_killed_mid_write_loses_and_duplicates_no_rows(trec, client, tmp_path):
    rep = SlowTfidf(n_components=16).fit(trec.text)
    rep.delay, rep.log_path = 0.6, str(tmp_path / "started.txt")
    out_dir = tmp_path / "features"
    (out_dir).mkdir()
    (out_dir / ".part.00003.parquet.0123abcd.tmp").write_bytes(b"PAR1 partial")  # a dead run's
    ddf = dd.from_pandas(trec, npartitions=10)
    job = client.compute(write_parquet(extract_features(rep, ddf, keep="id", client=client),
                                       out_dir, compute=False))

    # wait until a worker is busy with a partition, then kill it with the cluster's own API
    deadline = time.monotonic() + 30
    victim = None
    while victim is None and time.monotonic() < deadline:
        pids = {w: str(pid) for w, pid in client.run(os.getpid).items()}
        log = Path(rep.log_path)
        started = {line.split()[0] for line in log.read_text().splitlines()} if log.exists() else set()
        busy = [w for w, tasks in client.processing().items() if tasks and pids.get(w) in started]
        if busy:
            victim = busy[0]
        else:
            time.sleep(0.05)
    assert victim is not None, "no partition was in flight"
    victim_pid = pids[victim]
    # a restarted worker imports torch & co. again: on a loaded machine that took over the
    # default 120 s (a fresh-clone run at load 10 timed out here), so allow it time
    client.restart_workers([victim], timeout=600)
    summary = job.result(timeout=600)

    assert summary["partitions"] == 10 and sum(summary["rows"]) == len(trec)
    files = sorted(os.listdir(out_dir))
    assert files == ["_SUCCESS.json"] + [f"part.{i:05d}.parquet" for i in range(10)]
    written = pd.read_parquet(out_dir)
    assert len(written) == len(trec)
    assert written["id"].tolist() == trec["id"].tolist()  # each row exactly once, in order
    np.testing.assert_allclose(written.drop(columns="id").to_numpy(), rep.transform(trec.text),
                               rtol=1e-5, atol=1e-6)
    # the kill really hit a running partition: one started on the victim was started again
    started = [line.split() for line in Path(rep.log_path).read_text().splitlines()]
    on_victim = {d for pid, d in started if pid == str(victim_pid)}
    rerun = {d for pid, d in started if pid != str(victim_pid)} & on_victim
    assert rerun, "no partition was retried after the kill"
    client.wait_for_workers(2)


def test_cli_compare_on_the_cluster_equals_local(cluster, tmp_path):
    """`embedkit compare --scheduler ADDRESS` runs the folds on Dask and scores as locally."""
    from typer.testing import CliRunner

    from embedkit.cli import app

    args = ["compare", "--quick", "-r", "tfidf", "-H", "logreg", "--no-baselines"]
    local = CliRunner().invoke(app, args + ["-o", str(tmp_path / "local")])
    remote = CliRunner().invoke(app, args + ["-o", str(tmp_path / "dask"),
                                             "--scheduler", cluster.scheduler_address])
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    a = pd.read_csv(tmp_path / "local" / "results.csv")
    b = pd.read_csv(tmp_path / "dask" / "results.csv")
    np.testing.assert_allclose(a.accuracy_mean, b.accuracy_mean)
    np.testing.assert_allclose(a.f1_macro_mean, b.f1_macro_mean)


def test_cli_tune_on_the_cluster(cluster, trec, tmp_path):
    """`embedkit tune --scheduler ADDRESS` fits the sparse tier on the cluster and saves a model
    that predicts as the leaderboard says."""
    from typer.testing import CliRunner

    from embedkit import load
    from embedkit.cli import app

    data = tmp_path / "questions.csv"
    trec.iloc[:300][["text", "label"]].to_csv(data, index=False)
    out = tmp_path / "tuned"
    result = CliRunner().invoke(app, ["tune", "-f", str(data), "-r", "bow", "-H", "logreg",
                                      "--budget", "5m", "-o", str(out), "--no-progress",
                                      "--scheduler", cluster.scheduler_address])
    assert result.exit_code == 0, result.output
    board = pd.read_csv(out / "leaderboard.csv")
    assert board.set_index("pipeline").loc["bow + logreg", "status"] == "scored"
    assert load(out / "model").predict(["What is the capital of France ?"]).shape == (1,)
