"""Several targets in one run (issue 61.3): `embedkit tune` with --label-column repeated and
`Tuner` on a DataFrame of targets, one search per target through one cache, one model folder
(`embedkit.TargetSet`) that predicts every target, `predict` writing a column set per target."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import embedkit
from embedkit import TargetSet, TfidfEmbedder, Tuner
from embedkit.cli import app


@pytest.fixture(scope="module")
def posts() -> pd.DataFrame:
    """500 real tweets with their sentiment score, its sign as a class, and a channel."""
    tweets = embedkit.load_dataset("vader-tweet-scores").sample(560, random_state=0)
    rng = np.random.default_rng(0)
    return pd.DataFrame({"text": tweets["text"].to_numpy(),
                         "channel": rng.choice(["app", "web"], len(tweets)),
                         "mood": np.where(tweets["label"] > 0, "up", "down"),
                         "score": tweets["label"].to_numpy()})


def test_tune_learns_a_class_and_a_number_in_one_run_and_predict_writes_both(posts, tmp_path):
    fit, new = posts.iloc[:500], posts.iloc[500:]
    fit.to_csv(tmp_path / "posts.csv", index=False)
    new[["text", "channel"]].to_csv(tmp_path / "new.csv", index=False)
    runner = CliRunner()
    done = runner.invoke(app, ["tune", "-f", str(tmp_path / "posts.csv"), "--column", "channel",
                               "--label-column", "mood", "--label-column", "score", "-r", "tfidf",
                               "-H", "logreg", "--finetune", "no", "--budget", "25s",
                               "-o", str(tmp_path / "out"), "--no-progress"])
    assert done.exit_code == 0, done.output
    out = tmp_path / "out"
    summary = pd.read_csv(out / "leaderboard.csv").set_index("target")
    assert list(summary.index) == ["mood", "score"]
    assert list(summary["task"]) == ["classification", "regression"]
    assert list(summary["scoring"]) == ["accuracy", "r2"]
    for target in ("mood", "score"):  # each target's own leaderboard, with its baselines
        board = pd.read_csv(out / "targets" / target / "leaderboard.csv")
        assert board["pick"].sum() == 1 and (board["kind"] == "baseline").any()
        assert "columns: text text; categorical channel" in (
            out / "targets" / target / "leaderboard.md").read_text()
    model = embedkit.load(out / "model")
    assert isinstance(model, TargetSet) and model.targets_ == ["mood", "score"]
    predicted = model.predict(new[["channel", "text"]])
    assert list(predicted.columns) == ["mood", "score"]
    assert set(predicted["mood"]) <= {"up", "down"} and predicted["score"].dtype.kind == "f"
    assert (predicted["mood"] == new["mood"].to_numpy()).mean() > 0.7  # better than a coin
    wrote = runner.invoke(app, ["predict", str(out / "model"), str(tmp_path / "new.csv"),
                                "-o", str(tmp_path / "p.csv"), "--no-progress"])
    assert wrote.exit_code == 0, wrote.output
    p = pd.read_csv(tmp_path / "p.csv")
    assert list(p.columns) == ["mood", "mood_proba_down", "mood_proba_up", "score"]
    np.testing.assert_allclose(p[["mood_proba_down", "mood_proba_up"]].sum(axis=1), 1, rtol=1e-6)
    np.testing.assert_allclose(p["score"], predicted["score"], rtol=1e-5)
    assert (p["mood"] == predicted["mood"]).all()
    # predict knows its own file of several targets by its columns: replaced without --overwrite
    again = runner.invoke(app, ["predict", str(out / "model"), str(tmp_path / "new.csv"),
                                "-o", str(tmp_path / "p.csv"), "--no-progress"])
    assert again.exit_code == 0, again.output
    assert pd.read_csv(tmp_path / "p.csv").equals(p)
    refused = runner.invoke(app, ["tune", "-d", "trec", "--label-column", "a", "--label-column",
                                  "b", "--budget", "30s", "-o", str(tmp_path / "o2")])
    assert refused.exit_code == 2 and "several --label-column need --file" in refused.output


def test_the_targets_searches_share_one_encoder_pass(posts):
    """The second search finds every document encoded by the first (one memory cache); each
    target is of its own kind, and the pick predicts a DataFrame with a column per target."""
    from embedkit.cache import get_cache

    get_cache("memory").clear()  # nothing encoded before: the first search encodes every one
    lines = []
    y = posts[["mood", "score"]].iloc[:300]
    tuner = Tuner(budget="60s", pairs=[("minilm", "logreg")], finetune=False,
                  progress=lines.append).fit(posts["text"].iloc[:300], y)
    passes = [line for line in lines if "documents encoded once in" in line]
    assert [p.split("]")[0] for p in passes] == ["[mood", "[score"]
    assert all(": minilm: 300 documents encoded once in" in p for p in passes)
    assert passes[1].split("encoded once in ")[1].startswith("0 s")  # read from the cache
    assert get_cache("memory").info()["entries"] == 300  # one vector a document, not two
    assert tuner.task_ == {"mood": "classification", "score": "regression"}
    assert set(tuner.leaderboard_["target"]) == {"mood", "score"}
    assert tuner.leaderboard_.columns[0] == "target" and list(tuner.targets_) == ["mood", "score"]
    assert list(tuner.predict(posts["text"].iloc[300:305]).columns) == ["mood", "score"]
    with pytest.raises(ValueError, match=r"several targets \(mood, score\); ask each one's own: "
                                         r"tuner.targets_\[name\].score"):
        tuner.score(posts["text"].iloc[:5], y.iloc[:5])
    assert tuner.targets_["mood"].predict_proba(posts["text"].iloc[:2]).shape == (2, 2)


def test_ctrl_c_in_one_target_ends_the_run_with_a_model_for_every_target(posts):
    """Ctrl-C (raised here from the progress callback, where a user's key would land) while the
    first target is tuned: its search keeps its best model so far; the targets after it get what
    the least budget buys, their plain TF-IDF baseline, not their share of the budget."""
    lines = []

    def progress(line):
        lines.append(line)
        if line.startswith("[mood]") and "sparse + linear:" in line:
            raise KeyboardInterrupt

    cols = ["mood", "score", "channel"]
    tuner = Tuner(budget="5m", pairs=[("tfidf", "logreg"), ("bow", "logreg")], finetune=False,
                  progress=progress).fit(posts["text"].iloc[:400], posts[cols].iloc[:400])
    assert tuner.interrupted_ and tuner.targets_["mood"].interrupted_
    assert any("interrupted while tuning mood: score, channel get what the least budget buys"
               in line for line in lines)
    for name in ("score", "channel"):
        rest = tuner.targets_[name]
        assert rest.budget_ < 10 and not rest.interrupted_
        board = rest.leaderboard_.set_index("pipeline")
        assert board.loc[board.index.str.startswith("plain TF-IDF"), "status"].tolist() == ["scored"]
    assert tuner.budget_used_ < 60  # not the 5 minutes
    predicted = tuner.predict(posts["text"].iloc[400:410])
    assert list(predicted.columns) == cols and predicted.notna().all().all()


def test_a_target_set_fits_predicts_label_sets_by_name_and_round_trips(tmp_path):
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline

    from embedkit.heads import LogisticRegressionHead

    docs = ["a good film", "a bad film", "a great plot", "an awful plot", "good music",
            "bad music", "great music", "awful film"] * 3
    y = pd.DataFrame({"liked": ["yes", "no"] * 12, "stars": np.arange(24, dtype=float),
                      "tags": [["film"], ["film"], ["plot"], ["plot"], ["music"], ["music"],
                               ["music"], ["film", "plot"]] * 3})
    model = TargetSet([("liked", make_pipeline(TfidfEmbedder(), LogisticRegression())),
                       ("stars", make_pipeline(TfidfEmbedder(), Ridge())),
                       ("tags", make_pipeline(TfidfEmbedder(), LogisticRegressionHead(cv=2)))])
    model.fit(docs, y)
    predicted = model.predict(docs[:4])
    assert list(predicted.columns) == ["liked", "stars", "tags"]
    assert all(isinstance(tags, list) and set(tags) <= {"film", "music", "plot"}
               for tags in predicted["tags"])
    back = embedkit.load(embedkit.save(model, tmp_path / "model"))
    pd.testing.assert_frame_equal(back.predict(docs[:4]), predicted)
    with pytest.raises(ValueError, match="y has no column 'stars'"):
        TargetSet([("stars", Ridge())]).fit(docs, y[["liked"]])
    with pytest.raises(ValueError, match="name two targets alike"):
        Tuner(budget="30s").fit(docs, y[["liked", "stars"]].set_axis(["a b", "a/b"], axis=1))
    with pytest.raises(embedkit.tuning.BudgetError, match=r"a budget of \d s cannot score 2 "
                                                          r"targets: a search each .* give at least"):
        Tuner(budget=1, progress=False).fit(docs, y[["liked", "stars"]])


def test_a_later_run_of_one_target_leaves_no_targets_folder_of_an_earlier_one(tmp_path):
    """The mark records ``targets/`` (its files' checksums), so the next publish drops it
    rather than keeping it as a folder of the user's; a file the user changed there is kept."""
    from embedkit.storage.outputs import publish_folder

    def several(folder):
        (folder / "leaderboard.md").write_text("# two targets")
        (folder / "targets" / "mood").mkdir(parents=True)
        (folder / "targets" / "mood" / "leaderboard.md").write_text("# mood")

    out = tmp_path / "out"
    publish_folder(out, several)
    publish_folder(out, lambda folder: (folder / "leaderboard.md").write_text("# one target"))
    assert sorted(p.name for p in out.iterdir()) == ["embedkit-tune.json", "leaderboard.md"]
    publish_folder(out, several)
    (out / "targets" / "mood" / "leaderboard.md").write_text("# my notes")  # the user's now
    with pytest.raises(ValueError, match="holds targets, written by an earlier tune and changed"):
        publish_folder(out, lambda folder: (folder / "leaderboard.md").write_text("# one"))
