"""embedkit.Tuner (`embedkit.tuning`, over `embedkit._halving`): budget parsing, the registry's
search spaces, a real budgeted search on a TREC slice (the pick beats a dummy on held-out
questions, the baselines sit on the leaderboard), the estimator's API, and budgets too small for
any candidate."""

from __future__ import annotations

import html
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.dummy import DummyClassifier
from sklearn.metrics import accuracy_score
from sklearn.pipeline import Pipeline

import embedkit
from embedkit._halving import BudgetedHalvingSearchCV, candidates
from embedkit.registry import HEADS, REPRESENTATIONS
from embedkit.tuning import (
    MINILM_BASELINE,
    TFIDF_BASELINE,
    BudgetError,
    Tuner,
    _score_baselines,
    baseline_pipelines,
    parse_budget,
    tune,
)

PAIRS = [("tfidf", "logreg"), ("bow", "logreg")]


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("15m", 900), ("1h", 3600),
                                           ("1h30m", 5400), (" 2m30s ", 150), ("45", 45),
                                           (12.5, 12.5), ("10min", 600)])
def test_budget_strings_parse(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("bad", ["15 minutes", "", "m", "0s", "-5", "1d", "abc", 0, float("nan")])
def test_bad_budgets_are_refused_with_the_accepted_forms(bad):
    with pytest.raises(ValueError, match=r"budget=.*90s, 15m, 1h"):
        parse_budget(bad)


def test_budget_of_a_wrong_type_is_refused():
    with pytest.raises(TypeError, match=r"budget=True"):
        parse_budget(True)
    with pytest.raises(TypeError, match=r"budget=\[60\] \(list\)"):
        parse_budget([60])


def test_every_space_is_valid_and_holds_the_default():
    for registry in (REPRESENTATIONS, HEADS):
        for name, entry in registry.items():
            assert entry.cost >= 0, name
            if not entry.space:
                continue
            step = entry.factory()
            params = step.get_params()
            for key, values in entry.space.items():
                assert key in params, (name, key)
                assert params[key] in values, (name, key, params[key])  # defaults stay reachable
                for value in values:
                    step.set_params(**{key: value})


def test_candidates_start_from_the_defaults_and_run_cheap_first():
    cands = candidates([("minilm", "logreg-cv"), ("tfidf", "logreg-cv"),
                        ("passthrough", "finetune")], per_pair=3)
    names = [(c["representation"], c["head"]) for c in cands]
    assert names[0] == ("tfidf", "logreg-cv") and names[-1] == ("passthrough", "finetune")
    assert [c["cost"] for c in cands] == sorted(c["cost"] for c in cands)
    tfidf = [c for c in cands if c["representation"] == "tfidf"]
    assert tfidf[0]["params"] == {} and len(tfidf) == 3
    space = REPRESENTATIONS["tfidf"].space
    for c in tfidf[1:]:
        assert c["params"] and all(v in space[k.split("__")[1]] for k, v in c["params"].items())
    assert sum(c["head"] == "finetune" for c in cands) == 1  # costly pairs: their default only
    # the embedding cache is on for every representation that takes one
    minilm = next(c for c in cands if c["representation"] == "minilm")
    assert minilm["grid"]["features"][0].cache == "memory"


@pytest.fixture(scope="session")
def trec_slice():
    from sklearn.model_selection import train_test_split

    df = embedkit.load_dataset("trec")
    train = df[df["split"] == "train"]
    test = df[df["split"] == "test"]
    train, _ = train_test_split(train, train_size=300, stratify=train["label"], random_state=0)
    return train.reset_index(drop=True), test.reset_index(drop=True)


@pytest.fixture(scope="session")
def tuned(trec_slice):
    train, _ = trec_slice
    lines = []
    search = embedkit.tune(train["text"], train["label"], budget="60s", pairs=PAIRS, per_pair=2,
                           progress=lines.append)
    return search, lines


def test_tune_returns_a_refit_pipeline_that_beats_a_dummy(tuned, trec_slice):
    search, lines = tuned
    train, test = trec_slice
    assert isinstance(search, Tuner) and isinstance(search.search_, BudgetedHalvingSearchCV)
    assert isinstance(search.best_estimator_, Pipeline)
    assert list(search.classes_) == sorted(train["label"].unique())
    np.testing.assert_allclose(search.predict_proba(test["text"][:20]),
                               search.best_estimator_.predict_proba(test["text"][:20]))
    pred = search.predict(test["text"])
    assert search.score(test["text"], test["label"]) == accuracy_score(test["label"], pred)
    assert 0 < search.budget_used_ < 120 and search.budget_ == 60
    dummy = DummyClassifier(strategy="most_frequent").fit(train["text"], train["label"])
    acc, floor = accuracy_score(test["label"], pred), accuracy_score(test["label"],
                                                                    dummy.predict(test["text"]))
    assert acc > floor + 0.2, (acc, floor)
    assert search.best_estimator_.named_steps["head"].n_features_in_ > 0  # refit on the data
    assert any("round 1" in line for line in lines) and any("baseline" in line for line in lines)


def test_leaderboard_holds_the_candidates_and_both_baselines(tuned, trec_slice):
    search, _ = tuned
    board = search.leaderboard_
    assert set(board.loc[board["kind"] == "baseline", "pipeline"]) == {TFIDF_BASELINE,
                                                                       MINILM_BASELINE}
    base = board[board["kind"] == "baseline"]
    assert base["all_data"].all() and (base["documents"] == 300).all()
    assert base["accuracy"].between(0.3, 1.0).all()
    cands = board[board["kind"] == "candidate"]
    assert len(cands) == len(search.candidates_) - len({s["label"] for s in search.search_.skipped_
                                                        if s["round"] == 0})
    assert board["pick"].sum() == 1
    pick = board[board["pick"]].iloc[0]
    # the best candidate of the last round reached (scikit-learn's halving rule), unless a
    # baseline out-scores it on the same documents of the same folds
    last = cands[cands["round"] == cands["round"].max()]
    best = last.loc[last["accuracy"].idxmax()]
    as_best = {k: np.mean(v["scores_as_best"]) for k, v in search.baselines_.items()}
    if max(as_best.values()) > best["accuracy"]:
        assert pick["kind"] == "baseline" and pick["pipeline"] == max(as_best, key=as_best.get)
    else:
        assert pick["pipeline"] == best["pipeline"] and pick["pipeline"].split(" (")[0] in {
            f"{r} + {h}" for r, h in PAIRS}
    assert search.pick_ == pick["pipeline"]
    assert np.isfinite(board["accuracy"]).all() and list(board["rank"]) == list(
        range(1, len(board) + 1))
    # the baselines are scored on the search's folds: re-scoring one on them gives its numbers
    from sklearn.model_selection import cross_val_score

    train, _ = trec_slice
    again = cross_val_score(baseline_pipelines()[TFIDF_BASELINE], train["text"], train["label"],
                            cv=search.search_.cv)
    np.testing.assert_allclose(search.baselines_[TFIDF_BASELINE]["scores"], again)


def test_a_baseline_that_beats_every_candidate_is_the_pick(trec_slice):
    # GloVe means trail TF-IDF by 20 points on TREC questions: the plain baseline must win
    train, test = trec_slice
    search = tune(train["text"], train["label"], budget="2m", pairs=[("glove", "logreg")],
                  per_pair=1, progress=False)
    board = search.leaderboard_
    pick = board[board["pick"]].iloc[0]
    assert pick["kind"] == "baseline" and search.pick_ == pick["pipeline"]
    assert pick["accuracy"] > board.loc[board["kind"] == "candidate", "accuracy"].max()
    expected = baseline_pipelines()[pick["pipeline"]].fit(train["text"], train["label"])
    assert list(search.predict(test["text"][:50])) == list(expected.predict(test["text"][:50]))


def test_a_best_scored_on_a_subsample_meets_the_baselines_on_that_subsample(trec_slice):
    """A budget can end the halving search before its last round; the best candidate's score on
    a subsample is then compared with the baselines' on the same documents, not on all."""
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.model_selection._search_successive_halving import _SubsampleMetaSplitter

    train, test = trec_slice
    X, y = train["text"], train["label"].to_numpy()
    cands = candidates([("glove", "logreg")], per_pair=1)  # GloVe means trail TF-IDF on TREC
    first = cands[0]["grid"]
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    search = BudgetedHalvingSearchCV(
        Pipeline([("features", first["features"][0]), ("head", first["head"][0])]),
        [c["grid"] for c in cands], cv=folds, min_resources=150, max_resources=150, refit=False,
        random_state=0).fit(X, y)
    tuner = Tuner()
    tuner.search_ = search
    assert search.cv_results_["n_resources"][search.best_index_] == 150 < len(X)
    lines = []
    tuner.baselines_ = _score_baselines(search, X, y, "memory", lines.append)
    # the documents the search scored its best on: re-scoring it on this splitter gives its scores
    half = list(_SubsampleMetaSplitter(base_cv=folds, fraction=0.5, subsample_test=True,
                                       random_state=0).split(X, y))
    again = cross_val_score(clone(search.estimator).set_params(**search.best_params_), X, y,
                            cv=half)
    np.testing.assert_allclose(
        [search.cv_results_[f"split{i}_test_score"][search.best_index_] for i in range(3)], again)
    for name, pipe in baseline_pipelines().items():
        info = tuner.baselines_[name]
        np.testing.assert_allclose(info["scores_as_best"], cross_val_score(pipe, X, y, cv=half))
        np.testing.assert_allclose(info["scores"], cross_val_score(pipe, X, y, cv=folds))
    assert any("on the best candidate's 150 documents" in line for line in lines)

    tuner._refit_the_pick(X, y, lines.append)
    as_best = {k: np.mean(v["scores_as_best"]) for k, v in tuner.baselines_.items()}
    assert tuner.pick_ == max(as_best, key=as_best.get)  # GloVe loses to a baseline
    assert "same documents" in lines[-1]
    expected = baseline_pipelines()[tuner.pick_].fit(X, y)  # refit on all 300 documents
    assert list(tuner.predict(test["text"][:50])) == list(expected.predict(test["text"][:50]))


def test_leaderboard_files_report_and_the_model_folder(tuned, trec_slice, tmp_path):
    from embedkit.persist import load, save
    from embedkit.report import write_leaderboard
    from embedkit.tuning import pipelines

    search, _ = tuned
    train, _ = trec_slice
    paths = write_leaderboard(search.leaderboard_, tmp_path, title="TREC slice",
                              dataset=train,
                              pipelines=pipelines(search))
    assert [p.name for p in paths] == ["leaderboard.csv", "leaderboard.md", "leaderboard.png",
                                       "report.html"]
    back = pd.read_csv(paths[0])
    assert list(back["pipeline"]) == list(search.leaderboard_["pipeline"])
    text = paths[1].read_text()
    assert "# TREC slice" in text and TFIDF_BASELINE in text and "**pick**" in text
    assert paths[2].stat().st_size > 5000
    page = paths[3].read_text()
    # every row with its settings, the pick marked, the dataset summary, each pipeline's params
    board = search.leaderboard_
    assert page.count('<details id="params-') == len(board)
    for label in board["pipeline"]:
        assert html.escape(label) in page
    assert "[pick]" in page and "300 documents" in page and "ngram_range" in page
    assert "parameters not given" not in page
    path = save(search.best_estimator_, tmp_path / "model")
    docs = ["What is the capital of France ?", "Who wrote Hamlet ?"]
    assert list(load(path).predict(docs)) == list(search.best_estimator_.predict(docs))
    assert sorted(p.name for p in tmp_path.iterdir()
                  if p.name.startswith(".model")) == []  # no staging folder left


def test_the_command_tunes_saves_and_predicts_in_a_fresh_process(trec_slice, tmp_path):
    """`embedkit tune` on a CSV, then `embedkit predict` on its model in another process."""
    from typer.testing import CliRunner

    from embedkit.cli import app
    from embedkit.persist import load

    train, test = trec_slice
    data = tmp_path / "questions.csv"
    train.rename(columns={"text": "question", "label": "kind"}).to_csv(data, index=False)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "tune", "-f", str(data), "--text-column", "question", "--label-column", "kind",
        "-r", "tfidf", "-r", "bow", "-H", "logreg", "--budget", "40s", "-o", str(out),
        "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "plain TF-IDF + LR" in result.output and "saved the model to" in result.output
    assert {p.name for p in out.iterdir()} == {"leaderboard.csv", "leaderboard.md",
                                                "leaderboard.png", "report.html", "model"}
    new = tmp_path / "new.csv"
    test.head(200).to_csv(new, index=False)
    preds = tmp_path / "predictions.csv"
    done = subprocess.run([sys.executable, "-m", "embedkit.cli", "predict", str(out / "model"),
                           str(new), "-o", str(preds)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    got = pd.read_csv(preds)
    model = load(out / "model")
    assert list(got["label"]) == list(model.predict(test.head(200)["text"]))
    dummy = DummyClassifier(strategy="most_frequent").fit(train["text"], train["label"])
    floor = accuracy_score(test.head(200)["label"], dummy.predict(test.head(200)["text"]))
    assert accuracy_score(test.head(200)["label"], got["label"]) > floor + 0.2


def test_the_command_names_a_missing_data_source():
    from typer.testing import CliRunner

    from embedkit.cli import app

    result = CliRunner().invoke(app, ["tune", "--budget", "1m"])
    assert result.exit_code == 2 and "give either --file PATH" in result.output


def test_a_budget_too_small_for_any_pair_is_a_clear_error(trec_slice):
    train, _ = trec_slice
    with pytest.raises(BudgetError, match=r"budget of 0.001 s is too small.*cheapest.*Give at"):
        tune(train["text"], train["label"], budget=0.001, pairs=PAIRS, progress=False)


def test_a_search_that_scores_nothing_is_a_clear_error(trec_slice):
    # the plan let the pair in, but the budget runs out before the first candidate can run
    train, _ = trec_slice
    cands = candidates(PAIRS, per_pair=1)
    first = cands[0]["grid"]
    search = BudgetedHalvingSearchCV(
        Pipeline([("features", first["features"][0]), ("head", first["head"][0])]),
        [c["grid"] for c in cands], budget=1e-6, cv=3,
        info=[{"label": "tfidf + logreg", "cost": 1.5}, {"label": "bow + logreg", "cost": 1.5}])
    with pytest.raises(BudgetError, match=r"ran out before any candidate was scored.*cheapest"):
        search.fit(train["text"], train["label"])


def test_bad_input_gets_clear_errors(trec_slice):
    train, _ = trec_slice
    X, y = train["text"], train["label"]
    with pytest.raises(ValueError, match=r"one label per document"):
        tune(X, y[:10], budget="1m", pairs=PAIRS)
    with pytest.raises(ValueError, match=r"fewer than cv=3"):
        tune(X[:5], ["a", "a", "a", "a", "b"], budget="1m", pairs=PAIRS)
    with pytest.raises(ValueError, match=r"finetune='yes'"):
        tune(X, y, budget="1m", finetune="yes")
    with pytest.raises(ValueError, match=r"unknown head"):
        tune(X, y, budget="1m", pairs=[("tfidf", "nope")])
    lists = [[label] for label in y]
    with pytest.raises(ValueError, match=r"y is multi-label .* run `embedkit compare`"):
        tune(X, lists, budget="1m", pairs=PAIRS)
    with pytest.raises(ValueError, match=r"y is multi-label"):
        tune(X, np.eye(2, dtype=int)[np.arange(len(X)) % 2], budget="1m", pairs=PAIRS)


def test_the_command_refuses_a_bad_budget_before_loading_data(tmp_path):
    from typer.testing import CliRunner

    from embedkit.cli import app

    result = CliRunner().invoke(app, ["tune", "-f", str(tmp_path / "missing.csv"),
                                      "--budget", "15 minutes"])
    assert result.exit_code == 2 and "--budget '15 minutes' is not a duration" in result.output


def test_tune_is_a_function_and_tuner_an_estimator_after_importing_the_module():
    import embedkit.tuning  # noqa: F401  (a submodule import must not shadow the function)

    assert embedkit.tune is tune and embedkit.Tuner is Tuner
    with pytest.raises(ValueError, match=r"budget="):
        embedkit.tune(["a"], ["x"], budget="soon")
    from sklearn.base import clone

    tuner = Tuner("2m", pairs=[("tfidf", "logreg")], cv=4)
    assert clone(tuner).get_params() == tuner.get_params()
    with pytest.raises(ValueError, match=r"Tuner\(cv=1\)"):
        Tuner(cv=1).fit(["a", "b"], ["x", "y"])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        tuner.predict(["a"])
