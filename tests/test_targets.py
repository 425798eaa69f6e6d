"""Targets of every kind (issue 48): the kind read from the values or named, checked before any
work; heads as their regressors; `compare` on a number, from the API and the command line."""

import numpy as np
import pandas as pd
import pytest
from _boards import scored_baselines
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LogisticRegression, Ridge, RidgeCV
from typer.testing import CliRunner

from embedkit import MLPClassifier, MLPRegressor, load, save
from embedkit.cli import app
from embedkit.compare import run_compare
from embedkit.data.datasets import load_dataset
from embedkit.data.targets import infer_task, numeric_target, split_label_sets
from embedkit.heads.linear import LogisticRegressionHead
from embedkit.registry import for_task


@pytest.mark.parametrize("labels, kind", [
    ([0.5, -1.25, 3.0, 0.5], "regression"),           # fractions: a number
    (["0.5", "-1.25", "3"], "regression"),              # numbers written as text
    (list(range(30)), "regression"),                    # many integer values
    ([1, 2, 5, 4, 1], "classification"),                # a star rating: five classes
    (["pos", "neg", "pos"], "classification"),
    (["drama|comedy", "drama", "comedy|action"], "multilabel"),
    ([["drama", "comedy"], ["drama"]], "multilabel"),
    (["a|b", "c|d", "e|f"], "classification"),          # '|' in free text: no recombined labels
])
def test_the_kind_of_target_is_read_from_its_values(labels, kind):
    assert infer_task(labels) == kind


def test_a_named_kind_overrides_the_reading_and_is_checked():
    assert infer_task([1, 2, 5, 4, 1], "regression") == "regression"
    assert infer_task(["a|b", "c|d"], "multilabel") == "multilabel"
    with pytest.raises(ValueError, match=r"needs numbers in 'stars', but rows 1 \('five'\), 3 \('n/a'\)"):
        infer_task([1, "five", 2, "n/a"], "regression", column="stars")
    with pytest.raises(ValueError, match="task='numbers' is not a kind of target"):
        infer_task([1, 2], "numbers")


@pytest.mark.parametrize("labels, task, match", [
    ([3.5] * 4, None, r"one value \(3.5\) on every row"),
    (["x"] * 3, None, r"one value \('x'\) on every row"),
    (["|", "", " | "], "multilabel", "empty on every row"),
    ([1.5, None, 2.0, float("nan")], None, r"empty on rows 1, 3"),
])
def test_a_target_with_nothing_to_learn_is_refused_naming_what(labels, task, match):
    with pytest.raises(ValueError, match=match):
        infer_task(labels, task)


def test_label_sets_and_numbers_are_read_as_written():
    assert split_label_sets([" drama | comedy ", ["action"], None]) == [["drama", "comedy"], ["action"], []]
    np.testing.assert_array_equal(numeric_target(["1e3", 2, "-0.5"]), [1000.0, 2.0, -0.5])
    assert numeric_target(["1", "two"]) is None


def test_every_head_becomes_its_regressor_with_its_parameters():
    mlp = for_task(MLPClassifier(hidden_layer_sizes=(32,), epochs=3, lr=1e-2), "regression")
    assert isinstance(mlp, MLPRegressor)
    assert (mlp.hidden_layer_sizes, mlp.epochs, mlp.lr) == ((32,), 3, 1e-2)
    ridge = for_task(LogisticRegressionHead(), "regression")  # alpha by 3-fold CV: leave-one-out
    assert isinstance(ridge, RidgeCV) and ridge.cv == 3  # eigendecomposes n x n on sparse rows
    assert type(for_task(LogisticRegression(), "regression")) is Ridge
    from sklearn.dummy import DummyClassifier

    assert isinstance(for_task(DummyClassifier(), "regression"), DummyRegressor)
    from embedkit.registry import HEADS

    assert for_task(HEADS["stack"].factory(), "regression") is None  # an ensemble of classifiers
    clf = MLPClassifier()
    assert for_task(clf, "classification") is clf and for_task(clf, "multilabel") is clf
    from sklearn.multiclass import OneVsRestClassifier

    per_label = for_task(LogisticRegression(C=2.0), "multilabel")  # one per label, as it was
    assert isinstance(per_label, OneVsRestClassifier) and per_label.estimator.C == 2.0


def test_a_neural_regressor_learns_a_target_on_any_scale_and_keeps_it_saved(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 8)).astype(np.float32)
    y = X[:, 0] * 2.0 - X[:, 1]
    small = MLPRegressor(epochs=40, lr=1e-2, random_state=0).fit(X, y)
    big = MLPRegressor(epochs=40, lr=1e-2, random_state=0).fit(X, y * 5000 + 20000)
    # trained on standardised targets: the same fit, on the target's own scale
    np.testing.assert_allclose(big.predict(X), small.predict(X) * 5000 + 20000, rtol=1e-3, atol=1.0)
    assert big.score(X, y * 5000 + 20000) > 0.9
    save(big, tmp_path / "reg")
    np.testing.assert_allclose(load(tmp_path / "reg").predict(X), big.predict(X))


@pytest.fixture(scope="module")
def scores_slice():
    return load_dataset("nyt-editorial-scores").sample(400, random_state=0).reset_index(drop=True)


def test_compare_on_a_number_scores_regressors_against_the_regression_baselines(scores_slice, tmp_path):
    results = run_compare(scores_slice, ["tfidf"], ["logreg", "mlp"], folds=3, output=tmp_path,
                          progress=False, n_jobs=1, dataset_name="nyt-scores")
    assert results.attrs["task"] == "regression" and results.attrs["protocol"] == "3-fold CV"
    assert results.attrs["metrics"] == ["neg_root_mean_squared_error", "neg_mean_absolute_error", "r2"]
    rows = {(r.representation, r.head): r for r in results.itertuples()}
    assert set(rows) == {("tfidf", "logreg"), ("tfidf", "mlp"), ("baseline", "mean-value"),
                         ("baseline-tfidf", "plain-ridge"), ("baseline-minilm", "plain-ridge")}
    mean = rows["baseline", "mean-value"]
    assert abs(mean.r2_mean) < 0.05  # the mean predictor explains nothing
    minilm = rows["baseline-minilm", "plain-ridge"]
    rmse = "neg_root_mean_squared_error_mean"
    assert minilm.r2_mean > 0.15 and getattr(minilm, rmse) > getattr(mean, rmse)
    # ranked by the first metric: the smallest RMSE first
    assert results["neg_root_mean_squared_error_mean"].is_monotonic_decreasing
    assert (tmp_path / "results.md").read_text().count("negative RMSE") >= 1


def test_the_command_line_compares_a_number_and_refuses_a_class_metric(scores_slice, tmp_path):
    path = tmp_path / "scores.csv"
    scores_slice.rename(columns={"label": "score"}).to_csv(path, index=False)
    runner = CliRunner()
    common = ["compare", "-f", str(path), "--label-column", "score", "-r", "tfidf", "-H", "logreg",
              "--no-baselines", "--folds", "2", "-j", "1", "--no-progress"]
    done = runner.invoke(app, [*common, "-o", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    assert "2-fold CV, regression" in done.output and "negative RMSE" in done.output
    refused = runner.invoke(app, [*common, "-o", str(tmp_path / "out2"), "--metric", "accuracy"])
    assert refused.exit_code == 2 and "--metric accuracy scores classes; this target holds numbers" \
        in refused.output and "Traceback" not in refused.output
    stars = tmp_path / "stars.csv"
    pd.DataFrame({"text": ["good", "bad", "fine"] * 4, "label": [5, 1, 3] * 4}).to_csv(stars, index=False)
    as_number = runner.invoke(app, ["compare", "-f", str(stars), "--task", "regression", "-r", "tfidf",
                                    "-H", "logreg", "--no-baselines", "--folds", "2", "-j", "1",
                                    "--no-progress", "-o", str(tmp_path / "out3")])
    assert as_number.exit_code == 0 and "regression" in as_number.output, as_number.output


def test_a_class_metric_on_numbers_is_refused_before_any_work(scores_slice):
    """Tuning a number end to end (every head as its regressor, the Ridge baselines, NBSVM and
    the stack left out) is tests/test_table.py's numeric tune; here, the refusal."""
    from embedkit import Tuner

    wrong = Tuner(budget="1m", task="regression", scoring="accuracy", progress=False)
    with pytest.raises(ValueError, match="scoring='accuracy' scores classes; y holds numbers"):
        wrong.fit(scores_slice["text"], scores_slice["label"])


def test_representations_that_learn_from_classes_are_left_out_of_numbers_and_label_sets():
    """NBSVM's log-count ratios need classes: on a number (one block of columns per distinct
    value, a fit that grows with their count) or label sets its pairs are left out, said."""
    from embedkit._compare_data import as_regression
    from embedkit.registry import HEADS, REPRESENTATIONS
    from embedkit.tuning._inputs import pairs_for_task

    assert REPRESENTATIONS["nbsvm"].factory().needs_classes
    assert not REPRESENTATIONS["tfidf"].factory().needs_classes
    pairs = [("nbsvm", "logreg"), ("tfidf", "logreg"), ("tfidf", "stack")]
    assert pairs_for_task(pairs, "classification") == (pairs, [])
    assert pairs_for_task(pairs, "multilabel") == (
        pairs[1:], ["nbsvm: learns from classes; its pairs are left out on label sets"])
    assert pairs_for_task(pairs, "regression") == ([("tfidf", "logreg")], [
        "stack: no regression form; their pairs are left out on this numeric target",
        "nbsvm: learns from classes; its pairs are left out on a number"])
    with pytest.raises(ValueError, match=r"none of the pairs given can learn a number \(nbsvm"):
        pairs_for_task(pairs[:1], "regression")
    rows, heads, notes = as_regression([("candidate", "nbsvm", "logreg"), ("candidate", "tfidf", "logreg")],
                                       {"logreg": HEADS["logreg"].factory()}, {"nbsvm"})
    assert rows == [("candidate", "tfidf", "logreg")] and "nbsvm: learns from classes" in notes[0]


def test_compare_reads_label_sets_written_in_one_cell(tmp_path):
    """Labels joined by '|' in a CSV cell are a label set per row: the multi-label path, scored
    by micro-, macro- and per-document F1."""
    genres = load_dataset("movie-genres").sample(300, random_state=0)
    path = tmp_path / "films.csv"
    genres.assign(label=genres["label"].map("|".join)).to_csv(path, index=False)
    done = CliRunner().invoke(app, ["compare", "-f", str(path), "-r", "tfidf", "-H", "logreg",
                                    "--no-baselines", "--folds", "2", "-j", "1", "--no-progress",
                                    "-o", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    assert "2-fold CV, multilabel" in done.output and "micro-F1" in done.output
    results = pd.read_csv(tmp_path / "out" / "results.csv")
    assert 0 < results["f1_micro_mean"].iloc[0] < 1


def test_threshold_scores_are_scikit_learns_f1_at_every_threshold():
    """The search scores label probabilities at every threshold in one pass; each value is
    scikit-learn's F1 (micro, macro, per document) of the thresholded matrix, empty rows and
    labels included."""
    from sklearn.metrics import f1_score

    from embedkit.data.targets import THRESHOLDS, threshold_scores

    rng = np.random.default_rng(0)
    y = (rng.random((200, 6)) < 0.25).astype(int)
    y[:, 2] = 0  # a label on no row, and rows without a label
    proba = np.clip(0.45 * y + 0.55 * rng.random(y.shape), 0, 1)
    for average in ("micro", "macro", "samples"):
        expected = [f1_score(y, (proba > t).astype(int), average=average, zero_division=0)
                    for t in THRESHOLDS]
        np.testing.assert_allclose(threshold_scores(proba, y, average), expected)


def test_subsamples_of_label_sets_hold_every_label_and_grow_nested():
    """A label of a few documents is in every subsample a model fits on (a head cannot learn a
    label its rows lack), and a larger subsample keeps a smaller one's rows."""
    from embedkit.tuning._selection import stratified_order, stratified_rows

    rng = np.random.default_rng(1)
    y = (rng.random((2000, 8)) < 0.3).astype(np.int8)
    y[:, 7] = 0
    y[[5, 900, 1500], 7] = 1  # a label on three rows
    order = stratified_order(y, 0)
    small, large = (stratified_rows(y, m, 0, order) for m in (50, 400))
    assert y[small].any(axis=0).all() and y[large].any(axis=0).all()
    assert set(small) <= set(large) and len(small) <= 50 + 8


def test_a_subsample_of_the_searchs_training_rows_holds_every_class_and_a_vote_of_its_fits_predicts():
    """A class of a few documents among many is in every subsample the search fits a model on
    (on wordnet-glosses a fit on 1,792 of 92,127 rows lacked some of its 45 classes, and the saved
    vote of it with models of every class could not predict: members' probabilities of different
    widths); numbers are not classes, and their subsamples are cut as drawn."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import make_pipeline

    from embedkit import EnsembleClassifier
    from embedkit.tuning._split import Split

    rng = np.random.default_rng(0)
    y = np.array(["common"] * 1900 + ["other"] * 96 + ["rare"] * 4, dtype=object)
    words = rng.integers(0, 50, 2000)
    X = np.array([f"{label} w{k}" for label, k in zip(y, words, strict=True)], dtype=object)
    split = Split(X, y, seed=0)
    split.split()
    small, large = split.sample_rows(60), split.sample_rows(600)
    assert "rare" not in split.y_train[split._order[:60]]  # as drawn, the 60 lack it
    assert set(split.y_train[small]) == set(split.y_train[large]) == {"common", "other", "rare"}
    assert set(small) <= set(large) and len(small) <= 60 + 3
    train = X[split.train]
    fits = [make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(train[rows], split.y_train[rows])
            for rows in (small, np.arange(len(train)))]
    vote = EnsembleClassifier(members=tuple((f"m{i}", FrozenEstimator(m)) for i, m in enumerate(fits)),
                              method="vote").fit(X[split.train], split.y_train)
    assert vote.predict_proba(X[:5]).shape == (5, 3)

    numbers = Split(np.arange(2000), rng.normal(size=2000), task="regression", seed=0)
    numbers.split()
    assert len(numbers.sample_rows(60)) == 60


@pytest.fixture(scope="module")
def genre_sets():
    """Film titles and their genres, written as one cell 'a|b' (1,500 to tune on, 500 held out)."""
    films = load_dataset("movie-genres").sample(2000, random_state=0).reset_index(drop=True)
    return films.assign(label=films["label"].map("|".join))


def test_tune_searches_label_sets_against_one_vs_rest_baselines(genre_sets, tmp_path):
    """Label sets end to end through `embedkit tune`: every model scored by micro-F1 at its best
    threshold, the baselines one-vs-rest, a saved model that predicts label sets with their
    names, and `predict` writing them as 'a|b' with one probability per label."""
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    from embedkit import Tuner

    fit, held = genre_sets.iloc[:1500].copy(), genre_sets.iloc[1500:]
    fit.loc[[0, 1], "label"] = "Western|Drama"  # a label on two documents: left out, said
    path = tmp_path / "films.csv"
    fit.to_csv(path, index=False)
    done = CliRunner().invoke(app, ["tune", "-f", str(path), "--budget", "25s", "-r", "tfidf",
                                    "-r", "minilm", "-H", "logreg", "-H", "mlp", "--finetune", "no",
                                    "-o", str(tmp_path / "out"), "--no-progress"])
    assert done.exit_code == 0, done.output
    board = pd.read_csv(tmp_path / "out" / "leaderboard.csv")
    assert {"f1_micro", "f1_macro", "threshold"} <= set(board.columns)
    bases = scored_baselines(board, "plain TF-IDF + LR one-vs-rest",
                             "plain MiniLM + LR one-vs-rest")["f1_micro"]
    pick = board[board["pick"]].iloc[0]
    assert pick["f1_micro"] >= bases.max() and 0.05 <= pick["threshold"] <= 0.95
    assert "Western (2)" in (tmp_path / "out" / "leaderboard.md").read_text()
    model = load(tmp_path / "out" / "model")
    names = model.classes_.tolist()
    assert "Drama" in names and "Western" not in names
    predicted = model.predict(held["text"])
    truth = MultiLabelBinarizer(classes=names).fit_transform(
        [[g for g in cell.split("|") if g in names] for cell in held["label"]])
    always_drama = np.zeros_like(truth)
    always_drama[:, names.index("Drama")] = 1
    assert predicted.shape == truth.shape
    assert f1_score(truth, predicted, average="micro") > f1_score(truth, always_drama, average="micro")
    held[["text"]].head(5).to_csv(tmp_path / "new.csv", index=False)
    wrote = CliRunner().invoke(app, ["predict", str(tmp_path / "out" / "model"),
                                     str(tmp_path / "new.csv"), "-o", str(tmp_path / "p.csv")])
    assert wrote.exit_code == 0, wrote.output
    out = pd.read_csv(tmp_path / "p.csv", keep_default_na=False)
    assert list(out.columns) == ["label", *[f"proba_{n}" for n in names]]
    probs = out[[f"proba_{n}" for n in names]].to_numpy()
    threshold = model.steps[-1][1].threshold_
    assert out["label"].tolist() == ["|".join(np.asarray(names)[row > threshold]) for row in probs]
    with pytest.raises(ValueError, match="scoring='accuracy' on label sets"):
        Tuner(budget="1m", scoring="accuracy", progress=False).fit(fit["text"], fit["label"])
    with pytest.raises(ValueError, match="empty on every row"):
        Tuner(budget="1m", task="multilabel", progress=False).fit(fit["text"], [""] * len(fit))


# -- issue 63: numbers but for a few cells of text ------------------------------------------------
@pytest.mark.parametrize("word", ["NaN", "high"])
def test_numbers_with_a_cell_of_text_are_refused_naming_it_not_read_as_classes(scores_slice, word):
    """A column of scores with one cell of text was read as 400 classes, and the error said
    "classes [...] have fewer than 3 documents"; now the cell is named, with both fixes."""
    scores = scores_slice["label"].astype(object).copy()
    scores[17] = word
    with pytest.raises(ValueError) as caught:
        infer_task(scores, column="score")
    assert str(caught.value) == (
        f"the target column 'score' holds numbers but for row 17 ({word!r}) (counted from 0): text "
        f"where a number should be. Read as it is, each of its {scores.nunique():,} distinct "
        "values would be a class of its own. To predict the numbers, fix that cell or drop that "
        "row (the column is then read as numbers, as --task regression reads it); to predict "
        "classes, pass --task classification.")
    assert infer_task(scores, "classification") == "classification"  # named: as the user says
    with pytest.raises(ValueError, match=rf"--task regression needs numbers in 'label', but rows "
                                         rf"17 \('{word}'\)"):
        infer_task(scores, "regression")
    assert infer_task(scores.drop(index=17)) == "regression"


@pytest.mark.parametrize("labels", [
    ["1", "2", "3", "other"] * 25,                         # classes, some of them numbers
    ["404", "500", "200", "timeout"] * 25,                 # status codes and a word
    [f"{v:.1f}" for v in np.linspace(0, 9, 80)] + ["other"] * 20,  # a fifth of the cells text
])
def test_classes_that_happen_to_include_numbers_stay_classes(labels):
    assert infer_task(labels) == "classification"


# -- issue 61: log-loss and expected calibration error -------------------------------------------
def test_log_loss_is_scikit_learns_for_classes_and_the_mean_over_labels_for_label_sets():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics import log_loss as sk_log_loss

    from embedkit.data.targets import log_loss

    df = load_dataset("sms-spam").iloc[:600]
    X = TfidfVectorizer().fit_transform(df["text"])
    model = LogisticRegression(C=10).fit(X[:400], df["label"][:400])
    proba, truth = model.predict_proba(X[400:]), df["label"].to_numpy()[400:]
    assert log_loss(truth, proba) == pytest.approx(sk_log_loss(truth, proba), rel=1e-12)
    assert log_loss(truth, proba[:, 1]) == pytest.approx(sk_log_loss(truth, proba), rel=1e-12)
    # a class the rows lack is named through classes=, in the columns' order
    three = np.column_stack([proba * 0.9, np.full(len(proba), 0.1)])
    assert log_loss(truth, three, ["ham", "spam", "unseen"]) == pytest.approx(
        sk_log_loss(truth, three, labels=["ham", "spam", "unseen"]), rel=1e-12)
    Y = np.array([[1, 0], [0, 1], [1, 1]])
    P = np.array([[0.9, 0.2], [0.4, 0.7], [0.6, 0.5]])
    per_label = [sk_log_loss(Y[:, j], P[:, j], labels=[0, 1]) for j in range(2)]
    assert log_loss(Y, P) == pytest.approx(np.mean(per_label), rel=1e-12)
    with pytest.raises(ValueError, match=r"labels \['other'\] are not among the classes"):
        log_loss(["ham", "other"], [[0.5, 0.5], [0.5, 0.5]], ["ham", "spam"])
    with pytest.raises(ValueError, match="one row of probabilities per label"):
        log_loss(["ham", "spam"], [[0.5, 0.5]])


def test_expected_calibration_error_bins_the_top_class_confidence_in_fifteen_widths():
    from embedkit.data.targets import CALIBRATION_BINS, expected_calibration_error

    assert CALIBRATION_BINS == 15
    rng = np.random.default_rng(0)
    # said 0.9, right 7 times in 10: 0.2 on every row
    y = np.where(np.arange(1000) % 10 < 7, "a", "b")
    assert expected_calibration_error(y, np.tile([0.9, 0.1], (1000, 1))) == pytest.approx(0.2)
    # labels drawn from the probabilities themselves: calibrated up to sampling noise
    p = rng.uniform(0.5, 1.0, 20000)
    right = rng.random(20000) < p
    proba = np.column_stack([p, 1 - p])
    drawn = np.where(right, 0, 1)
    assert expected_calibration_error(drawn, proba, [0, 1]) < 0.015
    # 0.52 and 0.53 share the bin [0.4667, 0.5333); 0.54 is in the next; 1.0 in the last
    y2 = np.array([0, 1, 0, 0])
    proba2 = np.array([[0.52, 0.48], [0.53, 0.47], [0.54, 0.46], [1.0, 0.0]])
    expected = (abs(0.5 - 0.525) * 2 + abs(1 - 0.54) + abs(1 - 1.0)) / 4
    assert expected_calibration_error(y2, proba2, [0, 1]) == pytest.approx(expected)
    # label sets: each label a two-class decision, the labels' errors averaged
    Y = np.array([[1, 0], [1, 0], [0, 0], [1, 1]])
    P = np.array([[0.9, 0.1], [0.9, 0.3], [0.9, 0.2], [0.9, 0.8]])
    first = abs(0.75 - 0.9)  # 0.9 on every row, right on three
    second = (abs(1 - 0.9) * 1 + abs(1 - 0.7) + abs(1 - 0.8) * 2) / 4  # confidences 0.9, 0.7, 0.8, 0.8
    assert expected_calibration_error(Y, P) == pytest.approx((first + second) / 2)
    with pytest.raises(ValueError, match="no rows"):
        expected_calibration_error([], np.zeros((0, 2)), [0, 1])
