"""embedkit.plots: the attention heat map (the score and time charts and the family colours are
tested with the HTML report, in `test_report.py`; the training-history chart in
`test_heads_base.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from embedkit.heads import AttentionClassifier
from embedkit.plots import attention_heatmap


def test_attention_heatmap_writes_png(tmp_path, negation):
    (X, y), _ = negation
    head = AttentionClassifier(embedding_dim=8, epochs=2, early_stopping=False).fit(X[:100], y[:100])
    pairs = head.attention_weights(X[:3], return_tokens=True)
    assert [t for t, _ in pairs] == [list(t) for t in X.tokens[:3]]
    path = tmp_path / "attention.png"
    fig = attention_heatmap([t for t, _ in pairs], [w for _, w in pairs], path, title="negation")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts[: len(pairs[0][0])] == pairs[0][0]
    single = attention_heatmap(["not", "good"], [0.7, 0.3], tmp_path / "one.png")
    assert [t.get_text() for t in single.axes[0].texts] == ["not", "good"]
    with pytest.raises(ValueError, match="2 words but 3 weights"):
        attention_heatmap(["not", "good"], [0.2, 0.3, 0.5])


# ----------------------------------------------------------------------------------------------
# the comparison charts: the majority class is a reference line, the axes fit the pipelines
# ----------------------------------------------------------------------------------------------

#: `embedkit compare` on BBC News as a person first sees it: three baselines (the majority class
#: far below), twelve pipelines within 0.955-0.984, ten of them between 20 and 70 seconds
_BBC = [  # representation, head, accuracy, std, fit seconds
    ("baseline", "majority-class", 0.230, 0.001, 0.002),
    ("baseline-tfidf", "plain-lr", 0.979, 0.005, 2.4), ("baseline-minilm", "plain-lr", 0.975, 0.006, 27.0),
    ("tfidf", "logreg", 0.982, 0.004, 3.1), ("tfidf", "mlp", 0.984, 0.005, 11.5),
    ("word2vec", "logreg", 0.957, 0.008, 31.0), ("word2vec", "mlp", 0.962, 0.009, 33.0),
    ("fasttext", "logreg", 0.955, 0.010, 60.0), ("fasttext", "mlp", 0.958, 0.010, 63.0),
    ("glove", "logreg", 0.961, 0.007, 3.5), ("glove", "mlp", 0.965, 0.006, 6.0),
    ("doc2vec", "logreg", 0.978, 0.006, 44.0), ("doc2vec", "mlp", 0.976, 0.007, 46.0),
    ("minilm", "logreg", 0.973, 0.005, 26.0), ("minilm", "mlp", 0.975, 0.004, 29.0),
]


def _results(rows=_BBC):
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["representation", "head", "accuracy_mean", "accuracy_std",
                                        "fit_seconds"]).assign(n_splits=5)
    frame = frame.sort_values("accuracy_mean", ascending=False).reset_index(drop=True)
    frame.attrs.update(dataset="bbc-news", n_docs=2225, protocol="5-fold stratified CV")
    return frame


def _legend_texts(fig):
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_reference_rows_are_the_majority_class_only():
    from embedkit.plots import reference_rows

    results = _results()
    assert results["head"][reference_rows(results)].tolist() == ["majority-class"]
    only = results[results["head"] == "majority-class"]
    assert not reference_rows(only).any()  # nothing else to chart: it stays a row


def test_score_chart_draws_the_majority_class_as_a_line_and_scales_to_the_pipelines():
    from embedkit.plots import score_chart

    results = _results()
    fig = score_chart(results)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(ax.patches) == len(labels) == len(results) - 1 and "baseline + majority-class" not in labels
    low, high = ax.get_xlim()
    assert 0.85 < low < 0.955 and high == 1.0  # the real pipelines' range, not 0.23-1.0
    assert "majority class: 0.230 (left of the axis)" in _legend_texts(fig)
    # a majority class inside the pipelines' range is a dashed line at its score
    close = _results([("baseline", "majority-class", 0.52, 0.0, 0.001),
                      ("tfidf", "logreg", 0.60, 0.02, 2.0), ("glove", "logreg", 0.55, 0.02, 3.0)])
    fig = score_chart(close)
    ax = fig.axes[0]
    [line] = [line for line in ax.lines if (line.get_gid() or "").startswith("pipeline-")]
    assert line.get_linestyle() == "--" and line.get_xdata()[0] == pytest.approx(0.52)
    assert line.get_gid() == f"pipeline-{close.index[close['head'] == 'majority-class'][0]}"
    assert "majority class: 0.520" in _legend_texts(fig)


def _overlaps(boxes):
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i].overlaps(boxes[j])]


def test_time_chart_keeps_labels_apart_with_the_axis_on_the_pipelines():
    from embedkit.plots import time_chart

    results = _results()
    fig = time_chart(results)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    points = {line.get_gid() for line in ax.lines if line.get_marker() == "o"}
    majority = int(results.index[results["head"] == "majority-class"][0])
    assert f"pipeline-{majority}" not in points and len(points) == len(results) - 1
    low, high = ax.get_ylim()
    assert 0.9 < low < 0.945 and 0.989 < high < 1.0  # 0.945-0.989 is every pipeline's whisker
    assert ax.get_xlim()[0] >= 1.0  # the majority class's 0.002 s does not stretch the time axis
    assert "majority class: 0.230 (below the axis)" in _legend_texts(fig)
    texts = [t for t in ax.texts if "+" in t.get_text()]
    assert len(texts) == len(results) - 1
    boxes = [t.get_window_extent(renderer) for t in texts]
    assert not _overlaps(boxes), [(texts[i].get_text(), texts[j].get_text()) for i, j in _overlaps(boxes)]
    frame = ax.get_window_extent(renderer).expanded(1.002, 1.002)  # a pixel of rounding
    assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1
               for b in boxes)


def test_time_chart_names_only_the_best_points_of_a_long_leaderboard():
    """A tuning search scores 40-odd models; naming every point took half a minute of its
    budget and gives an unreadable chart. The best `NAMED_POINTS` are named, every point kept."""
    from embedkit.plots import NAMED_POINTS, time_chart

    rng = np.random.default_rng(0)
    rows = [(f"rep{i}", "logreg", 0.9 + i / 1000, 0.01, float(rng.uniform(1, 100))) for i in range(30)]
    results = _results(rows)
    ax = time_chart(results).axes[0]
    points = {line.get_gid() for line in ax.lines if line.get_marker() == "o"}
    assert points == {f"pipeline-{i}" for i in range(30)}
    named = {t.get_text() for t in ax.texts if "+" in t.get_text()}
    assert len(named) == NAMED_POINTS == 20
    assert named == {f"rep{i} + logreg" for i in range(10, 30)}  # the 20 best scores


def test_time_chart_draws_a_majority_class_inside_the_range_as_a_horizontal_line():
    from embedkit.plots import time_chart

    close = _results([("baseline", "majority-class", 0.56, 0.0, 0.001),
                      ("tfidf", "logreg", 0.60, 0.03, 2.0), ("glove", "logreg", 0.55, 0.03, 3.0)])
    fig = time_chart(close)
    ax = fig.axes[0]
    [line] = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert line.get_ydata()[0] == pytest.approx(0.56)
    assert line.get_gid() == f"pipeline-{close.index[close['head'] == 'majority-class'][0]}"
    assert ax.get_xlim()[0] >= 1.0


# ----------------------------------------------------------------------------------------------
# the reliability diagram (issue 61): each bin's accuracy against the diagonal, its share of rows
# ----------------------------------------------------------------------------------------------

def test_reliability_diagram_draws_each_bins_accuracy_and_share(tmp_path):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    from embedkit import load_dataset
    from embedkit.plots import reliability_diagram

    df = load_dataset("sms-spam").iloc[:1500]
    X = TfidfVectorizer().fit_transform(df["text"])
    model = LogisticRegression().fit(X[:1000], df["label"][:1000])
    proba, truth = model.predict_proba(X[1000:]), df["label"].to_numpy()[1000:]
    path = tmp_path / "reliability.png"
    fig = reliability_diagram(truth, proba, model.classes_, path, title="sms-spam")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ax = fig.axes[0]
    bars = ax.patches
    accuracy, share = bars[: len(bars) // 2], bars[len(bars) // 2:]
    confidence = proba.max(axis=1)
    right = model.classes_[proba.argmax(axis=1)] == truth
    which = np.minimum((confidence * 15).astype(int), 14)
    for bar in accuracy:  # each bar is its bin's accuracy, at the bin's left edge
        rows = which == round(bar.get_x() * 15)
        assert bar.get_height() == pytest.approx(right[rows].mean())
        assert bar.get_width() == pytest.approx(1 / 15)
    assert sum(b.get_height() for b in share) == pytest.approx(1.0)
    assert min(b.get_x() for b in accuracy) >= 7 / 15  # two classes: the top one is >= 0.5
    assert ax.lines[0].get_xydata().tolist() == [[0, 0], [1, 1]] and ax.get_title() == "sms-spam"
    # label sets: every (row, label) cell is one two-class decision
    cells = reliability_diagram(np.array([[1, 0], [0, 0]]), np.array([[0.9, 0.2], [0.7, 0.1]]))
    heights = {round(float(b.get_x()), 4): float(b.get_height()) for b in cells.axes[0].patches[:3]}
    assert heights == {0.6667: 0.0, 0.8: 1.0, 0.8667: 1.0}
