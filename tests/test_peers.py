"""The AutoML peers' benchmark (pipelines/benchmarks/peers.py) and its environment (`./run.sh
peers`), without the peers: CI never builds `.venv-peers`.

The split is the tuning benchmark's own (`tune_budget.sides`), the pairing is its `paired` with
`tune` as the new side, the table is read off given run lines, the sweep runs against a stand-in
peers' interpreter that answers like `run_peers.py` (majority label), and run.sh's set-up runs
against a stand-in interpreter as in test_run_sh.py. The real peers are a hand-run smoke:
`./run.sh peers --quick`.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipelines.benchmarks import peers as bench
from pipelines.benchmarks import tune_budget

ROOT = Path(__file__).parents[1]
RUN = ROOT / "run.sh"


def _peer(bits: str, peer="flaml", dataset="trec", budget_s=600.0, **more) -> dict:
    hits = np.frombuffer(bits.encode(), dtype=np.uint8) == ord("1")
    return {"peer": peer, "dataset": dataset, "budget_s": budget_s, "seed": 0, "quick": False,
            "accuracy": float(hits.mean()), "held_out_right": bits, "wall_s": 300.0,
            "peak_mb": 2048.0, "pick": "lgbm", **more}


def _tune(bits: str, dataset="trec", budget_s=600.0) -> dict:
    return {"dataset": dataset, "budget_s": budget_s, "held_out_right": bits,
            "pick": "ensemble of 3 models", "tfidf_acc": 0.7, "minilm_acc": 0.75}


# -- the split ----------------------------------------------------------------------------------
def test_the_exported_split_is_the_tuning_benchmarks_split_row_for_row(tmp_path):
    meta = bench.export("trec", tmp_path / "trec", quick=True)
    train, test, protocol, label = tune_budget.sides("trec", quick=True)
    for side, frame in (("train", train), ("test", test)):
        written = pd.read_parquet(tmp_path / "trec" / f"{side}.parquet")
        assert list(written.columns) == ["text", "label"]
        pd.testing.assert_frame_equal(written, frame[["text", "label"]].reset_index(drop=True))
    assert meta == {"dataset": label, "protocol": protocol, "n_train": len(train),
                    "n_test": len(test)}
    assert (meta["n_train"], meta["n_test"]) == (300, 150)  # the suite's quick slices of trec


def test_the_runners_hits_are_encoded_as_the_tuning_benchmark_encodes_them():
    runner = bench.runner_module()
    hits = np.array([True, False, False, True, True])
    assert runner.bits(hits) == tune_budget._bits(hits) == "10011"
    assert runner.bits([]) == ""


def test_the_runner_reads_a_split_and_names_what_is_missing(tmp_path):
    runner = bench.runner_module()
    with pytest.raises(FileNotFoundError, match="export the split"):
        runner.read_split(tmp_path)
    pd.DataFrame({"text": ["a", "b"], "label": [1, 0], "extra": [0, 0]}).to_parquet(
        tmp_path / "train.parquet")
    pd.DataFrame({"sentence": ["a"], "label": [1]}).to_parquet(tmp_path / "test.parquet")
    with pytest.raises(ValueError, match=r"missing: \['text'\]"):
        runner.read_split(tmp_path)
    with pytest.raises(ValueError, match="pass --model FOLDER"):
        runner.run("setfit", tmp_path, 60)
    with pytest.raises(ValueError, match="unknown peer 'autosklearn'"):
        runner.run("autosklearn", tmp_path, 60)


# -- pairing and the table ----------------------------------------------------------------------
def test_tune_is_paired_with_each_peer_row_by_row_as_tune_minus_peer():
    tune = _tune("1" * 90 + "0" * 10)
    ahead = _peer("1" * 80 + "0" * 20)  # tune right on 10 rows more, the peer on none
    behind = _peer("1111", dataset="bbc-news")  # the peer right on one row tune missed
    rows = bench.pair_with_tune([ahead, behind], [tune, _tune("1011", dataset="bbc-news")])
    assert (rows[0]["only_tune"], rows[0]["only_peer"]) == (10, 0)
    assert rows[0]["points"] == pytest.approx(10.0) and rows[0]["se_points"] == pytest.approx(3.0)
    assert rows[0]["p"] == pytest.approx(2 / 2 ** 10)
    assert rows[0]["tune"] == pytest.approx(0.9)
    # one discordant row the peer's way: -25 points, SE sqrt((1/4 - 1/16) / 4), p = 1
    assert (rows[1]["only_tune"], rows[1]["only_peer"]) == (0, 1)
    assert rows[1]["points"] == pytest.approx(-25.0)
    assert rows[1]["se_points"] == pytest.approx(100 * np.sqrt((0.25 - 0.0625) / 4))
    assert rows[1]["p"] == pytest.approx(1.0)


def test_a_peer_pairs_only_with_a_tune_run_of_the_same_set_budget_and_rows():
    kept = [_tune("1" * 10), _tune("1" * 10, budget_s=1200.0), _tune("1" * 5, dataset="bbc-news")]
    rows = bench.pair_with_tune([_peer("0" * 10, budget_s=120.0),  # no 2-minute tune run
                                 _peer("0" * 10, dataset="bbc-news"),  # another split's length
                                 _peer("0" * 10, budget_s=1200.0),
                                 {"peer": "flaml", "dataset": "trec", "budget_s": 600.0,
                                  "error": "exit status 1"}], kept)
    assert rows[0]["tune"] is None and rows[1]["tune"] is None
    assert rows[2]["tune"] == 1.0 and rows[2]["points"] == pytest.approx(100.0)
    assert "points" not in rows[3]


def test_the_table_reads_each_run_line_and_the_best_peer_of_each_set():
    kept = [_tune("1" * 90 + "0" * 10)]
    rows = bench.pair_with_tune([
        _peer("1" * 80 + "0" * 20, peer="flaml", wall_s=630.0, peak_mb=1536.0, pick="sgd"),
        _peer("1" * 85 + "0" * 15, peer="autogluon-tabular", pick="WeightedEnsemble_L3"),
        {"peer": "setfit", "dataset": "trec", "budget_s": 600.0, "seed": 0,
         "error": "exit status 1"},
        _peer("1" * 9 + "0", dataset="vader-tweets", budget_s=120.0)], kept)
    table = bench.table(rows)
    assert list(table["peer"]) == ["flaml", "autogluon-tabular", "setfit", "flaml"]
    flaml = table.iloc[0]
    assert (flaml["set"], flaml["budget"], flaml["tune held out"], flaml["peer held out"]) == (
        "trec", "10.0 min", "0.900", "0.800")
    assert (flaml["plain TF-IDF + LR"], flaml["plain MiniLM + LR"]) == ("0.700", "0.750")
    assert (flaml["wall s (share)"], flaml["peak memory"], flaml["pick"]) == (
        "630 (105%)", "1.5 GB", "sgd")
    assert (flaml["tune − peer (points)"], flaml["standard error (points)"],
            flaml["McNemar p"], flaml["verdict (p < 0.05)"]) == ("+10.0", "3.0", "0.00", "tune better")
    assert table.iloc[1]["tune − peer (points)"] == "+5.0"
    assert table.iloc[2]["peer held out"] == "failed: exit status 1"
    assert table.iloc[2]["wall s (share)"] == "" and table.iloc[2]["tune held out"] == ""
    unpaired = table.iloc[3]
    assert unpaired["tune held out"] == "" and unpaired["McNemar p"] == ""
    assert unpaired["plain TF-IDF + LR"] == "" and table.iloc[2]["plain MiniLM + LR"] == ""
    assert unpaired["peer held out"] == "0.900" and unpaired["budget"] == "2.0 min"
    best = bench.best_peers(rows)  # the paired sets only: trec's best peer is AutoGluon
    assert list(best["peer"]) == ["autogluon-tabular"] and list(best["set"]) == ["trec"]


def test_a_rerun_line_replaces_the_failed_one_and_the_command_hides_this_machines_paths():
    failed = {**_peer("0"), "error": "timed out after 900 s"}
    other = _peer("1", peer="autogluon-tabular")
    again = _peer("1")
    assert bench.latest([failed, other, again]) == [again, other]
    assert bench.shown_arguments(["--quick", "--python", "/root/x/bin/python", "--peers", "flaml",
                                  "--python=/y"]) == ["--quick", "--peers", "flaml"]


def test_no_peer_joins_embedkits_own_dependencies():
    from importlib.metadata import requires

    names = {re.match(r"[\w.-]+", r).group().lower() for r in requires("embedkit")}
    assert {"scikit-learn", "sentence-transformers"} <= names  # every extra's too
    assert not names & {"autogluon", "autogluon.tabular", "autogluon.multimodal", "flaml", "setfit"}
    pinned = (ROOT / "pipelines" / "peers" / "requirements.txt").read_text()
    for peer in ("autogluon.tabular[lightgbm,catboost,xgboost]==1.6.3", "flaml==2.7.0",
                 "setfit==1.2.0", "torch==2.14.1", "torchvision==0.29.1"):
        assert f"\n{peer}\n" in pinned
    assert "autogluon.multimodal==1.6.3" in (
        ROOT / "pipelines" / "peers" / "requirements-no-deps.txt").read_text()


# -- the sweep, against a stand-in peers' interpreter --------------------------------------------
#: answers as run_peers.py does, predicting the training side's majority label; fails for
#: FAIL_PEER; records its hash seed
_STAND_IN_PEERS = """\
#!{python}
import json, os, sys
import pandas as pd
from sklearn.metrics import f1_score
args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
if args["--peer"] == os.environ.get("FAIL_PEER"):
    print("Traceback: the peer broke", file=sys.stderr)
    sys.exit(1)
train = pd.read_parquet(args["--split"] + "/train.parquet")
test = pd.read_parquet(args["--split"] + "/test.parquet")
pred = [train["label"].mode()[0]] * len(test)
hits = test["label"] == pred
row = {{"peer": args["--peer"], "dataset": args["--set"], "budget_s": float(args["--budget"]),
       "seed": int(args["--seed"]), "quick": "--quick" in sys.argv, "n_train": len(train),
       "n_test": len(test), "accuracy": float(hits.mean()),
       "f1_macro": float(f1_score(test["label"], pred, average="macro")),
       "held_out_right": "".join("1" if h else "0" for h in hits), "wall_s": 3.0, "import_s": 1.0,
       "predict_s": 0.1, "peak_mb": 100.0, "pick": "majority", "details": {{"model": args.get("--model")}},
       "hash_seed": os.environ["PYTHONHASHSEED"], "threads": os.environ.get("OMP_NUM_THREADS")}}
with open(args["--result"], "a") as fh:
    fh.write(json.dumps(row) + "\\n")
print(f"threads={{os.environ.get('OMP_NUM_THREADS')}}")
"""


def _stand_in_peers(tmp_path) -> Path:
    python = tmp_path / "peers-python"
    python.write_text(_STAND_IN_PEERS.format(python=sys.executable))
    python.chmod(0o755)
    return python


def test_the_sweep_runs_each_peer_once_keeps_failures_and_pairs_with_tune(tmp_path, monkeypatch,
                                                                           capsys):
    python = _stand_in_peers(tmp_path)
    _, test, _, _ = tune_budget.sides("trec", quick=True)
    majority = tune_budget.sides("trec", quick=True)[0]["label"].mode()[0]
    hits = test["label"].to_numpy() == majority
    kept = tmp_path / "tune_runs.jsonl"  # a kept tune run on the same 150 rows, all right
    kept.write_text(json.dumps(_tune("1" * len(test), budget_s=30.0)) + "\n")
    out = tmp_path / "out"
    monkeypatch.setenv("FAIL_PEER", "flaml")
    argv = ["--quick", "--budget", "30s", "--peers", "autogluon-tabular", "flaml", "--output",
            str(out), "--python", str(python), "--tune-runs", str(kept), "--seed", "3"]
    bench.main(argv)
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert [r["peer"] for r in rows] == ["autogluon-tabular", "flaml"]
    ran, failed = rows
    assert ran["held_out_right"] == tune_budget._bits(hits) and ran["hash_seed"] == "3"
    assert ran["protocol"] == tune_budget.sides("trec", quick=True)[2]
    assert failed["error"] == "exit status 1"
    assert "the peer broke" in "\n".join(failed["output_tail"])
    assert Path(failed["log"]).exists()
    results = (out / "results.md").read_text()
    assert str(python) not in results and "--peers autogluon-tabular flaml" in results
    points = f"{100 * (1 - hits.mean()):+.1f}"  # tune got every row right
    assert f"| {points} " in results and "failed: exit status 1" in results
    assert "best peer of each set" in results
    # the peer that failed runs again, and its new line replaces the failed one in the table
    monkeypatch.delenv("FAIL_PEER")
    bench.main(argv)
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert [r["peer"] for r in rows][2:] == ["autogluon-tabular", "flaml"]  # --quick reruns all
    assert "failed" not in (out / "results.md").read_text()
    capsys.readouterr()


def test_the_sweep_without_a_peers_environment_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"\./run\.sh peers"):
        bench.peers_python(tmp_path / "nowhere" / "python")


# -- the few-label benchmark: embedkit's SetFit against SetFit itself ----------------------------
def test_setfit_itself_fits_the_draw_embedkits_setfit_fits_with_the_same_threads(tmp_path,
                                                                                 monkeypatch):
    from pipelines.benchmarks import few_labels

    python = _stand_in_peers(tmp_path)
    threads_before = os.environ.get("OMP_NUM_THREADS")
    [row] = few_labels.run_library("sms-spam", 8, 1, 60, 120.0, tmp_path, python=python)
    split = tmp_path / "library" / "splits" / "sms-spam-8-seed1"
    train, test = few_labels.data("sms-spam", 60)
    drawn = few_labels.labelled(train, 8, 1)
    pd.testing.assert_frame_equal(pd.read_parquet(split / "train.parquet"), drawn[["text", "label"]])
    pd.testing.assert_frame_equal(pd.read_parquet(split / "test.parquet"), test[["text", "label"]])
    majority = drawn["label"].mode()[0]  # the stand-in's answer: 8 a class, the smaller label
    assert row["method"] == few_labels.LIBRARY and (row["n_train"], row["n_test"]) == (16, 60)
    assert row["accuracy"] == pytest.approx((test["label"] == majority).mean())
    assert 0 < row["f1_macro"] < row["accuracy"]  # one class never predicted
    assert row["fit_seconds"] == 2.0 and row["stopped_by_budget"] is False  # import left out
    import torch

    log = tmp_path / "library" / "logs" / "sms-spam-8-seed1-setfit-120s-seed1.log"
    assert log.read_text().splitlines() == [f"threads={torch.get_num_threads()}"]
    assert os.environ.get("OMP_NUM_THREADS") == threads_before  # told the runner, not set here
    monkeypatch.setenv("FAIL_PEER", "setfit")
    with pytest.raises(RuntimeError, match=r"sms-spam, 8 per class, seed 1: exit status 1"):
        few_labels.run_library("sms-spam", 8, 1, 60, 120.0, tmp_path, python=python)


def test_the_few_label_baselines_include_tfidf_and_lr_and_setfit_is_judged_against_it():
    """A draw whose MiniLM baselines ran but not TF-IDF + LR and frozen mpnet + LR gets its
    baselines' job again, for those two only; the table's margin is SetFit's over the best of
    every peer, TF-IDF + LR among them."""
    from pipelines.benchmarks import few_labels as fl

    done = {("sms-spam", 8, 0, m) for m in (fl.FROZEN, fl.FROZEN_CV, fl.SETFIT)}
    assert fl.jobs(["sms-spam"], [8], 1, 0, done, [fl.SETFIT]) == [
        (0, "frozen", "sms-spam", [(8, 0, (fl.TFIDF, fl.FROZEN_MPNET))])]  # MiniLM's not again
    done |= {("sms-spam", 8, 0, m) for m in (fl.TFIDF, fl.FROZEN_MPNET)}
    assert fl.jobs(["sms-spam"], [8], 1, 0, done, [fl.SETFIT]) == []
    runs = pd.DataFrame([{"dataset": "sms-spam", "n_per_class": 8, "seed": 0, "method": m,
                          "accuracy": acc, "f1_macro": acc}
                         for m, acc in ((fl.SETFIT, 0.80), (fl.TFIDF, 0.85), (fl.FROZEN, 0.70))])
    table = fl.summary(fl.paired(runs))
    assert table.loc[("sms-spam", 8), "setfit - best peer"] == pytest.approx(-0.05)
    assert "| TF-IDF + LR |" in fl._markdown(table).splitlines()[0].replace("| setfit | ", "| ")


def test_embedkits_setfit_is_paired_with_setfit_itself_draw_by_draw(tmp_path):
    from pipelines.benchmarks import few_labels

    ours, lib, frozen = few_labels.OURS, few_labels.LIBRARY, few_labels.FROZEN

    def line(method, seed, acc, f1, n=8, dataset="sms-spam", **more):
        ran = {"settings": few_labels.settings(ours)} if method == ours else {}
        return {"dataset": dataset, "n_per_class": n, "seed": seed, "method": method,
                "accuracy": acc, "f1_macro": f1, "fit_seconds": 10.0 * (seed + 1), "n_test": 60,
                **ran, **more}

    old = line(ours, 0, 0.99, 0.99)
    del old["settings"]  # written before records kept their settings: SetFit's 20 rounds then
    versions = {"setfit": "1.2.0", "torch": "2.13.0+cpu"}  # what a SetFit run now records
    runs = [old, line(ours, 0, 0.80, 0.70),
            line(lib, 0, 0.70, 0.60, stopped_by_budget=False, versions=versions),
            line(ours, 1, 0.90, 0.80), line(lib, 1, 0.70, 0.60, stopped_by_budget=True),
            line(ours, 2, 0.50, 0.50),  # SetFit itself failed on this draw: left out
            line(ours, 0, 0.60, 0.60, n=64, fit_seconds=30.0), line(lib, 0, 0.75, 0.75, n=64),
            line(frozen, 0, 0.65, 0.65), line(frozen, 0, 0.70, 0.70, n=64)]
    assert few_labels.settings(ours)["num_iterations"] is None  # SetFit's own pairs
    assert old not in few_labels.current(runs) and len(few_labels.current(runs)) == len(runs) - 1
    # a parameter added since (max_seconds) ran as its default: still current; a default changed
    # since (the length) is not
    before = line(ours, 3, 0.9, 0.9)
    before["settings"] = {k: v for k, v in before["settings"].items() if k != "max_seconds"}
    changed = line(ours, 4, 0.9, 0.9)
    changed["settings"] = {**changed["settings"], "max_length": 7}
    assert few_labels.current([before, changed]) == [before]
    done = {(r["dataset"], r["n_per_class"], r["seed"], r["method"])
            for r in few_labels.current([old])}
    assert (8, ours, "sms-spam", (8, 0)) in few_labels.jobs(["sms-spam"], [8], 1, 0, done, [ours])
    runs = few_labels.current(runs)
    table = few_labels.against_library(pd.DataFrame(runs))
    eight, sixty_four = table.loc[("sms-spam", 8)], table.loc[("sms-spam", 64)]
    assert eight["accuracy ours"] == pytest.approx(0.85)
    assert eight["accuracy library"] == pytest.approx(0.70)
    assert eight["accuracy diff"] == pytest.approx(0.15)
    assert eight["accuracy se"] == pytest.approx(np.std([0.1, 0.2], ddof=1) / np.sqrt(2))
    assert eight["f1_macro diff"] == pytest.approx(0.15)
    assert (eight["draws"], eight["stopped"], eight["fit s ours"], eight["fit ratio"]) == (2, 1, 15.0, 1.0)
    assert sixty_four["accuracy diff"] == pytest.approx(-0.15) and sixty_four["fit ratio"] == 3.0
    assert np.isnan(sixty_four["accuracy se"]) and sixty_four["draws"] == 1
    verdict = few_labels.library_verdict(table)
    assert "* 8 per class: embedkit's SetFit behind SetFit's by more than one standard error on " \
           "0 of 1 datasets of several draws (none); fit time within 1.25x of SetFit's on 1 of 1 " \
           "(over it: none)." in verdict
    # one draw has no standard error: its gap is said, not counted as within the noise
    assert "* 64 per class: embedkit's SetFit behind SetFit's by more than one standard error on " \
           "0 of 0 datasets of several draws (none); one draw only, no standard error: sms-spam " \
           "-15.0 points; fit time within 1.25x of SetFit's on 0 of 1 (over it: sms-spam)." in verdict
    # the report: its own section; the frozen baselines' table never counts these runs' draws
    (tmp_path / few_labels.RUNS).write_text("".join(json.dumps(r) + "\n" for r in [old, *runs]))
    few_labels.report(tmp_path)
    text = (tmp_path / "few_labels.md").read_text()
    assert "| sms-spam | 8 | 85.0 | 70.0 | +15.0 ± 5.0 | 75.0 | 60.0 | +15.0 ± 5.0 | 15 | 15 | 1.00x " \
           "| 2 | 1 |" in text  # the record of the earlier settings (0.99) is left out, and said
    assert "1 of the 10 records in `few_labels_runs.jsonl` are runs redone since" in text
    assert "| sms-spam | 64 | 60.0 | 75.0 | -15.0 |" in text and "| 30 | 10 | 3.00x |" in text
    assert "setfit-mpnet" not in text.split("## embedkit's SetFit")[0]
    assert "SetFit's side ran with: setfit 1.2.0, torch 2.13.0+cpu (2 earlier runs recorded none)." \
        in text and "versions" not in (tmp_path / "few_labels.csv").read_text()
    section = text.split("## embedkit's SetFit")[1]
    assert f"Command: `{few_labels.LIBRARY_COMMAND}`." in section
    assert "the same test documents (sms-spam 60 test documents, its `--test-size`)" in section
    assert "Not measured yet" not in section  # both of the command's sizes ran
    # a set with only 8 per class: the section names the size still to run
    (tmp_path / few_labels.RUNS).write_text("".join(
        json.dumps(r) + "\n" for r in runs + [line(ours, 0, 0.8, 0.8, dataset="trec"),
                                              line(lib, 0, 0.7, 0.7, dataset="trec")]))
    few_labels.report(tmp_path)
    assert "Not measured yet: trec at 64 per class (the command above adds them" \
        in (tmp_path / "few_labels.md").read_text()


# -- ./run.sh peers: its own environment, one line per step --------------------------------------
#: a stand-in interpreter: creates a stand-in venv, fails `import torch`, answers pip like a
#: real install (with noise), fails the pip call naming FAIL_ON, and records any other call
_PYTHON = """\
#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; chmod +x "$3/bin/python"; exit 0
fi
if [ "$1" = "-c" ]; then
  case "$2" in *torch*) exit 1 ;; *) exit 0 ;; esac
fi
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  echo "WARNING: Location 'file:///opt/pypi-more/simple/six/' is ignored" >&2
  echo "Successfully installed $*"
  if [ -n "$FAIL_ON" ]; then
    case "$*" in *"$FAIL_ON"*) echo "ERROR: no matching distribution" >&2; exit 1 ;; esac
  fi
  exit 0
fi
echo "cwd=$PWD"; echo "ran $*"
"""


@pytest.fixture
def stand_in(tmp_path):
    python = tmp_path / "python"
    python.write_text(_PYTHON)
    python.chmod(0o755)
    venv, peers = tmp_path / "venv", tmp_path / "venv-peers"

    def run(*args, fail_on=""):
        env = {**os.environ, "PYTHON": str(python), "EMBEDKIT_VENV": str(venv),
               "EMBEDKIT_PEERS_VENV": str(peers), "FAIL_ON": fail_on}
        return subprocess.run([str(RUN), *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=60)

    return run, venv, peers


def test_peers_set_up_their_own_environment_once_then_run_the_benchmark(stand_in, tmp_path):
    run, venv, peers = stand_in
    done = run("peers", "--quick", "--peers", "flaml")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert all(line.startswith("[setup] ") for line in lines), lines
    own = lines[lines.index(next(x for x in lines if "the peers' own environment" in x)):]
    assert [line.split()[1] for line in own] == ["creating", "upgrading", "installing",
                                                 "installing", "installing", "done"]
    assert "torch==2.14.1 torchvision==0.29.1" in own[2]
    assert "without its torch pins" in own[4]
    log = (peers / "setup.log").read_text()
    assert "is ignored" in log and "--no-deps -r pipelines/peers/requirements-no-deps.txt" in log
    assert "-r pipelines/peers/requirements.txt" in log
    assert not (venv / "setup.log").read_text().count("requirements.txt")  # never in embedkit's
    # the benchmark runs in embedkit's environment, in the caller's folder, told the peers' python
    assert done.stdout.splitlines() == [
        f"cwd={tmp_path}", f"ran {ROOT}/pipelines/benchmarks/peers.py --python {peers}/bin/python "
        "--quick --peers flaml"]
    again = run("peers", "--report-only")
    assert again.returncode == 0 and again.stderr == ""


def test_a_failing_peers_step_shows_its_log_and_is_tried_again(stand_in):
    run, _, peers = stand_in
    done = run("peers", fail_on="requirements-no-deps.txt")
    assert done.returncode == 1 and "ran " not in done.stdout
    assert "[setup] failed: installing AutoGluon MultiModal" in done.stderr
    assert "ERROR: no matching distribution" in done.stderr
    assert not (peers / ".peers-setup").exists()
    assert run("peers").returncode == 0


def test_the_peers_environment_is_ignored_by_git():
    ignored = subprocess.run(["git", "check-ignore", "-q", ".venv-peers/bin/python"], cwd=ROOT)
    assert ignored.returncode == 0


def test_tune_on_few_labels_is_judged_against_the_better_yardstick_of_each_draw(tmp_path,
                                                                                monkeypatch):
    """few_labels_tune's table: per set and commit of tune, tune minus the better of frozen
    MiniLM + LR and SetFit on the same draw, averaged over the draws; a draw lacking a
    yardstick is left out of the pairing."""
    from pipelines.benchmarks import few_labels as fl
    from pipelines.benchmarks import few_labels_tune as flt

    def line(method, seed, acc, **more):
        return {"dataset": "sms-spam", "n_per_class": 16, "seed": seed, "method": method,
                "accuracy": acc, "f1_macro": acc, "fit_seconds": 100.0 + seed, **more}

    ours = [line(flt.TUNE, s, acc, commit=at, pick=f"model {s}", budget_s=300.0)
            for at, accs in (("aaa", (0.90, 0.80)), ("bbb", (0.70, 0.60)))
            for s, acc in enumerate(accs)]
    ours += [line(flt.TUNE, 2, 0.99, commit="aaa", pick="x", budget_s=300.0),  # no yardsticks
             line(fl.FROZEN, 0, 0.85), line(fl.SETFIT, 0, 0.80),
             line(fl.FROZEN, 1, 0.70), line(fl.SETFIT, 1, 0.75), line(fl.TFIDF, 0, 0.60),
             line(fl.TFIDF, 1, 0.50)]
    (tmp_path / flt.RUNS).write_text("".join(json.dumps(r) + "\n" for r in ours))
    monkeypatch.setattr(flt, "RESULTS", tmp_path / "none")  # few_labels.py's records: none here
    table = flt.table(flt.records(tmp_path)).set_index("commit")
    assert table.loc["aaa", "draws"] == 2 and table.loc["aaa", "tune"] == pytest.approx(85.0)
    assert table.loc["aaa", "tune − better"] == pytest.approx(100 * (0.05 + 0.05) / 2)
    assert table.loc["bbb", "tune − better"] == pytest.approx(100 * (-0.15 - 0.15) / 2)
    assert table.loc["bbb", "± se"] == pytest.approx(0.0)
    assert table.loc["aaa", "picks"] == "model 0; model 1"
    assert table.loc["aaa", fl.TFIDF] == pytest.approx(55.0)  # the plain baseline, same draws
    (tmp_path / flt.RUNS).write_text("".join(json.dumps(r) + "\n" for r in ours[:-1]))
    assert math.isnan(flt.table(flt.records(tmp_path)).set_index("commit").loc["aaa", fl.TFIDF])
    (tmp_path / flt.RUNS).write_text("".join(json.dumps(r) + "\n" for r in ours))
    text = flt.report(tmp_path)
    assert "`Tuner(budget=300)`" in text and "* sms-spam 16/class at aaa: model 0; model 1" in text
    overall = [line.split("|") for line in text.splitlines() if line.startswith("| aaa ")]
    assert [cell.strip() for cell in overall[0][1:5]] == ["aaa", "2", "85.0", "5.0"]  # all draws
    assert (tmp_path / "few_labels_tune.md").read_text() == text
