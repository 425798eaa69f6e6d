"""The tuning benchmark's paired comparison of two runs (pipelines/benchmarks/tune_budget.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pipelines.benchmarks import tune_budget as bench


def _run(bits: str, **more) -> dict:
    return {"dataset": "trec", "budget_s": 600.0, "held_out_right": bits, **more}


def test_two_runs_are_compared_by_the_rows_only_one_of_them_got_right():
    same = bench.paired(_run("1101"), _run("1011"))  # one row each way: no difference
    assert (same["only_new"], same["only_old"], same["points"], same["p"]) == (1, 1, 0.0, 1.0)
    assert same["se_points"] == pytest.approx(100 * np.sqrt(0.5 / 4))
    # ten rows more right, none fewer: 10 points, a standard error of 3, p = 2 / 2**10
    better = bench.paired(_run("1" * 90 + "0" * 10), _run("1" * 80 + "0" * 20))
    assert (better["only_new"], better["only_old"]) == (10, 0)
    assert better["points"] == pytest.approx(10.0) and better["se_points"] == pytest.approx(3.0)
    assert better["p"] == pytest.approx(2 / 2 ** 10)
    table = bench.paired_table(pd.DataFrame([better, same]))
    assert list(table["verdict (p < 0.05)"]) == ["better", "no difference shown"]
    with pytest.raises(ValueError, match="same split"):
        bench.paired(_run("101"), _run("1011"))


def test_the_spread_over_seeds_is_the_mean_and_standard_deviation_of_each_sets_runs(tmp_path):
    """Three seeds of a set (the split fixed) give its mean held-out accuracy and the standard
    deviation over them beside the per-run rows; a set run once has no spread; a run's seed
    pairs it with the other run of the same seed."""
    def run(dataset, seed, acc, used=0.9):
        return {"dataset": dataset, "seed": seed, "budget_s": 600.0, "wall_s": 600 * used,
                "used_share": used, "pick": "p", "pick_tier": "t", "refit": True, "seeds": 1,
                "fitted_rows": 80, "n_train": 100, "pick_acc": acc, "tfidf_acc": 0.80,
                "minilm_acc": 0.82, "vs_better_points": 100 * (acc - 0.82), "tiers": ["baselines"],
                "left_out": [], "peak_mb": 1024.0, "held_out_right": "1" * int(100 * acc)
                + "0" * (100 - int(100 * acc))}

    rows = [run("trec", 0, 0.90), run("trec", 1, 0.92), run("trec", 2, 0.94, used=0.97),
            run("bbc-news", 0, 0.98)]
    over = bench.spread(rows)
    trec = over.set_index("dataset").loc["trec"]
    assert (trec["runs"], trec["seeds"], trec["set"]) == (3, "0, 1, 2", "decides")
    assert trec["pick held out (mean)"] == pytest.approx(0.92)
    assert trec["standard deviation"] == pytest.approx(np.std([0.90, 0.92, 0.94], ddof=1))
    assert (trec["lowest"], trec["highest"], trec["most budget used"]) == (0.90, 0.94, 0.97)
    assert trec["vs better baseline (mean points)"] == pytest.approx(10.0)
    assert np.isnan(over.set_index("dataset").loc["bbc-news", "standard deviation"])
    shown = bench.spread_table(over)
    assert list(shown["standard deviation"]) == ["2.0 points", ""]
    table = bench.table(rows)
    assert list(table["seed"]) == [0, 1, 2, 0] and list(table["set"])[:1] == ["decides"]
    page = bench.write(rows, tmp_path, "python pipelines/benchmarks/tune_budget.py --seeds 0 1 2")
    text = (tmp_path / "results.md").read_text()
    assert "## Over seeds: the mean and the spread" in text and "## Each run" in text
    assert len(page) == 4 and (tmp_path / "spread.csv").exists()
    (tmp_path / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    paired = bench.compare_runs([run("trec", 1, 0.93)], tmp_path / "runs.jsonl")
    assert list(paired["old"]) == [0.92]  # seed 1 against seed 1


def test_a_run_from_before_the_rows_were_kept_answers_with_its_saved_model(tmp_path):
    """An older run's pick predicts the same held-out side again from its saved model, checked
    against the accuracy the run recorded."""
    from sklearn.pipeline import Pipeline

    import embedkit
    from embedkit.storage.persist import save

    train, test, _, _ = bench.sides("trec", quick=True)
    model = Pipeline([("features", embedkit.TfidfEmbedder()),
                      ("head", embedkit.LogisticRegressionHead())]).fit(train["text"], train["label"])
    right = np.asarray(model.predict(test["text"])) == test["label"].to_numpy()
    save(model, tmp_path / "trec-10m" / "model")
    old = {"dataset": "trec", "budget_s": 600.0, "n_test": len(test), "pick_acc": right.mean()}
    (tmp_path / "runs.jsonl").write_text(json.dumps(old) + "\n")
    new = _run("1" * len(test))
    pairs = bench.compare_runs([new], tmp_path, quick=True)
    assert len(pairs) == 1 and pairs.loc[0, "only_old"] == 0
    assert pairs.loc[0, "only_new"] == (~right).sum() > 0
    assert pairs.loc[0, "old"] == pytest.approx(right.mean())
    # a run at another budget pairs with the set's only run (20 minutes against 10)
    longer = bench.compare_runs([{**new, "budget_s": 1200.0}], tmp_path, quick=True)
    assert list(longer["other_budget"]) == [600.0] and list(longer["only_new"]) == [(~right).sum()]
    assert bench.compare_runs([{**new, "dataset": "bbc-news"}], tmp_path, quick=True).empty
    # a 300-row slice's run of the set (folder trec-300-10m) is not this run's
    other = tmp_path / "other"
    other.mkdir()
    (tmp_path / "trec-10m").rename(other / "trec-300-10m")
    (other / "runs.jsonl").write_text(json.dumps(old) + "\n")
    with pytest.raises(FileNotFoundError, match="its saved model"):
        bench.compare_runs([new], other, quick=True)
    old["pick_acc"] += 0.01  # not that run's pick
    (other / "trec-300-10m").rename(tmp_path / "trec-10m")
    (tmp_path / "runs.jsonl").write_text(json.dumps(old) + "\n")
    with pytest.raises(ValueError, match="not that run's pick"):
        bench.compare_runs([new], tmp_path, quick=True)


def test_the_numbers_benchmark_says_how_far_below_the_baseline_the_picks_rmse_is():
    from pipelines.benchmarks import tune_numbers

    rng = np.random.default_rng(0)
    y = rng.normal(size=4000)
    base = y + rng.normal(scale=1.0, size=y.size)      # RMSE about 1.0
    pick = y + rng.normal(scale=0.8, size=y.size)      # RMSE about 0.8: 20% below
    share, se = tune_numbers.versus(y, pick, base)
    rmse = lambda p: np.sqrt(np.mean((p - y) ** 2))  # noqa: E731
    assert share == pytest.approx(1 - rmse(pick) / rmse(base)) and 0.15 < share < 0.25
    assert 0 < se < 0.02  # 4,000 paired rows: about a point
    same, se_same = tune_numbers.versus(y, base, base)
    assert same == 0 and se_same == 0
    scores = tune_numbers._scores(y, np.full(y.size, y.mean()))
    assert scores["r2"] == pytest.approx(0.0) and scores["rmse"] == pytest.approx(y.std())


def test_the_tables_benchmark_reports_each_kind_beside_its_baselines():
    """The label-set row names the best baseline (a tuned threshold counts) and the paired
    difference; a table's row puts the table pick beside the text-only pick of the same rows."""
    from pipelines.benchmarks.tune_tables import report

    sets = {"dataset": "movie-genres", "variant": "label sets", "budget_s": 600.0, "wall_s": 590.0,
            "pick": "minilm + mlp", "threshold": 0.3, "pick_f1_micro": 0.56, "pick_f1_macro": 0.41,
            "tfidf_f1_micro": 0.42, "tfidf_f1_macro": 0.23, "minilm_f1_micro": 0.41,
            "minilm_f1_macro": 0.26, "tfidf_tuned_f1_micro": 0.54, "tfidf_tuned_f1_macro": 0.38,
            "minilm_tuned_f1_micro": 0.55, "minilm_tuned_f1_macro": 0.40, "peak_mb": 4096.0,
            "better_baseline": "minilm_tuned", "vs_better": 0.01, "vs_better_se": 0.004}
    table = {"dataset": "movie-ratings-table", "variant": "table", "budget_s": 600.0,
             "wall_s": 580.0, "pick": "ensemble of 3 models", "rmse": 0.9, "tfidf": 1.4,
             "minilm": 1.45, "vs_text": 35.7, "vs_text_se": 1.1,
             "roles": "columns: text title; numeric votes (inferred; name them ...)"}
    text = {"dataset": "movie-ratings-table", "variant": "text only", "budget_s": 600.0,
            "wall_s": 585.0, "pick": "tfidf + logreg-cv", "rmse": 1.4}
    page = report([sets, table, text], "python pipelines/benchmarks/tune_tables.py --budget 10m")
    assert "| movie-genres" in page and "+1.0 ± 0.4 (minilm_tuned)" in page
    assert "0.550 / 0.400" in page  # the tuned MiniLM baseline's micro / macro-F1
    row = next(line for line in page.splitlines() if line.startswith("| movie-ratings-table"))
    assert "0.900" in row and "1.400" in row and "+35.7% ± 1.1 RMSE below" in row
    assert "columns: text title; numeric votes |" in row  # the roles, without the hint


def test_the_large_file_benchmark_grows_its_file_reads_the_kernels_word_and_tables_each_run(tmp_path):
    """pipelines/benchmarks/tune_large.py's parts: the training rows written again (the header
    once) to the size asked, and kept once made; a memory cgroup's peak and OOM kills as v1 and
    v2 write them; a run's row in the table, a baseline or none."""
    from pipelines.benchmarks import tune_large

    train = tmp_path / "train.csv"
    train.write_text("text,label\na good film,pos\na dull one,neg\n")
    big = tune_large.grown(train, "1KB")
    lines = big.read_text().splitlines()
    assert big.stat().st_size >= 1024 and lines[0] == "text,label" and lines.count("text,label") == 1
    assert set(lines[1:]) == {"a good film,pos", "a dull one,neg"} and len(lines) % 2 == 1
    assert tune_large.grown(train, "1KB") == big
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "memory.max_usage_in_bytes").write_text(str(3 * 2**30))
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert tune_large.group_said(v1) == {"group_peak_gb": 3.0, "oom_kills": 2}
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.peak").write_text(str(2**30))
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 0\n")
    assert tune_large.group_said(v2) == {"group_peak_gb": 1.0, "oom_kills": 0}
    run = {"file": "big.csv", "rows": 55_000_000, "bytes": 5.41e9, "budget": "20m", "memory": None,
           "cgroup": "4GB", "seed": 0, "tune_code": 0, "oom_kills": 0, "tune_wall_s": 1166.7,
           "tune_peak_gb": 3.856, "pick": "ensemble of 3 models", "pick_acc": 0.9597}
    text = tune_large.table([run, {**run, "cgroup": None, "oom_kills": None, "tfidf_acc": 0.932,
                                   "vs_tfidf_points": 2.8}])
    first, second = text.splitlines()[2:4]
    assert "big.csv (55,000,000 rows, 5.41 GB)" in first and "| 4GB " in first and "| 3.86 " in first
    assert "| 0.960 " in first and "not fitted" in first and "| 1167 " in first
    assert "| 0.932 " in second and "+2.8" in second


def test_the_held_out_calibration_predicts_once_and_scores_each_form_as_its_own_model_would():
    """The pick as saved, as fitted and with its temperature alone are scored from one pass of
    the fitted model over the held-out rows: the same numbers as each form's own
    ``predict_proba``, with no second pass of the model."""
    import copy
    import types

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    import embedkit
    from embedkit import TemperatureScaled
    from embedkit.data.targets import expected_calibration_error, log_loss

    df = embedkit.load_dataset("trec")
    X, y = df["text"].to_numpy(object)[:4000], df["label"].to_numpy()[:4000]
    fitted = Pipeline([("features", TfidfVectorizer()), ("head", LogisticRegression(C=1000, max_iter=500))])
    fitted.fit(X[:2500], y[:2500])  # overconfident: a temperature above 1 mends it
    scaled = TemperatureScaled(fitted["head"], top_label=True).fit(fitted["features"].transform(X[2500:3200]),
                                                                  y[2500:3200])
    assert scaled.temperature_ > 1.2 and scaled.top_ is not None
    alone = copy.copy(scaled)
    alone.top_ = None
    forms = {"pick": scaled, "raw": fitted["head"], "temperature_only": alone}
    passes = []
    counted = Pipeline([("features", fitted["features"]), ("calibrated", scaled)])
    head = scaled.estimator
    own = type(head).predict_proba
    head.predict_proba = lambda Z: passes.append(1) or own(head, Z)
    tuner = types.SimpleNamespace(best_estimator_=counted, classes_=fitted.classes_,
                                  calibration_={"temperature": scaled.temperature_, "applied": True,
                                                "top_label": True})
    out = bench.held_out_calibration(tuner, X[3200:], y[3200:])
    assert len(passes) == 1 and (out["temperature"], out["top_label"]) == (scaled.temperature_, True)
    del head.predict_proba
    Z, classes = fitted["features"].transform(X[3200:]), fitted.classes_
    for key, form in forms.items():
        proba = form.predict_proba(Z)
        assert out[f"{key}_log_loss"] == pytest.approx(log_loss(y[3200:], proba, classes))
        assert out[f"{key}_ece"] == pytest.approx(expected_calibration_error(y[3200:], proba, classes))
    assert out["pick_log_loss"] < out["raw_log_loss"]
