"""Charts (one palette, labels clear of error bars, plain-second log ticks) and the HTML report,
checked as a file and rendered in a real headless Chromium.

The browser test installs Debian's ``chromium`` and ``chromium-driver`` when they are missing
(as root, with apt-get) and skips, saying why, only where that is impossible. It saves
``report.html`` and a full-page ``report.png`` under ``$EMBEDKIT_ARTIFACTS`` when set, else
under pytest's temporary folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest
from _browser import severe_errors

from embedkit import plots
from embedkit.report import write_html_report

# ----------------------------------------------------------------------------------------------
# a comparison's results, shaped like `embedkit compare` on BBC News (5-fold CV)
# ----------------------------------------------------------------------------------------------

_ROWS = [  # representation, head, accuracy, std, macro-F1, std, fit s, transform s, predict s, MB
    ("tfidf", "logreg", 0.979, 0.006, 0.978, 0.006, 2.1, 0.40, 0.01, 310),
    ("minilm", "mlp", 0.976, 0.004, 0.975, 0.004, 99.1, 24.0, 0.04, 910),
    ("tfidf", "mlp", 0.975, 0.008, 0.974, 0.008, 9.5, 0.40, 0.05, 420),
    ("minilm", "logreg", 0.973, 0.005, 0.972, 0.005, 95.0, 24.0, 0.01, 900),
    ("glove", "mlp", 0.964, 0.006, 0.963, 0.007, 6.8, 0.90, 0.04, 200),
    ("glove-sif", "logreg", 0.962, 0.007, 0.961, 0.007, 3.2, 0.90, 0.01, 190),
    ("doc2vec", "logreg", 0.958, 0.009, 0.957, 0.009, 45.0, 6.10, 0.01, 350),
    ("word2vec", "mlp", 0.955, 0.009, 0.953, 0.010, 31.2, 1.20, 0.04, 280),
    ("fasttext", "mlp", 0.952, 0.011, 0.950, 0.011, 64.4, 3.50, 0.04, 540),
    ("learned", "conv", 0.941, 0.013, 0.939, 0.014, 38.0, 0.30, 0.20, 330),
    ("passthrough", "finetune", 0.981, 0.004, 0.980, 0.004, 610.0, 0.0, 9.50, 1800),
]
_COLUMNS = ["representation", "head", "accuracy_mean", "accuracy_std", "f1_macro_mean",
            "f1_macro_std", "fit_seconds", "transform_seconds", "predict_seconds", "peak_mb"]


def make_results(rows=_ROWS) -> pd.DataFrame:
    results = pd.DataFrame(rows, columns=_COLUMNS).assign(n_splits=5)
    results = results.sort_values("accuracy_mean", ascending=False).reset_index(drop=True)
    results.attrs.update(dataset="bbc-news", protocol="5-fold stratified CV", n_docs=2225,
                         wall_seconds=412.0)
    return results


@pytest.fixture(scope="module")
def results():
    return make_results()


@pytest.fixture(scope="module")
def estimators():
    """The estimators behind the names: real, unfitted components."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from embedkit import GloveEmbedder, TfidfEmbedder

    reps = {"tfidf": TfidfEmbedder(sublinear_tf=True, min_df=2, max_features=20000),
            "glove-sif": GloveEmbedder(pooling="sif"), "passthrough": "passthrough"}
    heads = {"logreg": make_pipeline(StandardScaler(with_mean=False), LogisticRegression(max_iter=2000)),
             "mlp": {"hidden_layer_sizes": (128,), "epochs": 10}}
    return reps, heads


@pytest.fixture(scope="module")
def bbc_slice(bbc):
    return bbc.groupby("label").head(60).reset_index(drop=True)


@pytest.fixture(scope="module")
def report(tmp_path_factory, results, estimators, bbc_slice):
    folder = Path(os.environ.get("EMBEDKIT_ARTIFACTS") or tmp_path_factory.mktemp("report"))
    folder.mkdir(parents=True, exist_ok=True)
    reps, heads = estimators
    path = write_html_report(results, folder / "report.html", dataset=bbc_slice,
                             representations=reps, heads=heads)
    return path


# ----------------------------------------------------------------------------------------------
# palette and charts
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, family", [
    ("tfidf", "sparse"), ("bow", "sparse"), ("lsa", "sparse"), ("TfidfEmbedder", "sparse"),
    ("tf-idf", "sparse"), ("word2vec", "word2vec"), ("Word2VecEmbedder", "word2vec"),
    ("fasttext", "fasttext"), ("glove", "glove"), ("glove-sif", "glove"), ("glove mean", "glove"),
    ("GloveEmbedder(sequence)", "glove"), ("doc2vec", "doc2vec"), ("minilm", "transformer"),
    ("minilm-tokens", "transformer"), ("TransformerEmbedder", "transformer"),
    ("learned", "learned"), ("TokenIndexer", "learned"), ("passthrough", "finetuned"),
    ("TransformerClassifier", "finetuned"), ("majority baseline", "baseline"),
    ("DummyClassifier", "baseline"), ("my-own-encoder", "other"),
])
def test_every_representation_name_has_its_family(name, family):
    assert plots.representation_family(name) == family


def test_families_have_distinct_colours():
    colours = [colour for _, colour, _ in plots.FAMILIES.values()]
    assert len(set(colours)) == len(colours)
    assert plots.family_colour("glove-seq") == plots.family_colour("glove") == plots.FAMILIES["glove"][1]


def test_score_labels_sit_beside_the_bars_clear_of_every_whisker(results):
    from matplotlib.colors import to_hex

    fig = plots.score_chart(results, title="bbc-news: 2225 documents, 5-fold stratified CV")
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    right_of_plot = ax.get_window_extent(renderer).x1
    labels = [t for t in ax.texts if "±" in t.get_text()]
    assert len(labels) == len(results)
    assert all(t.get_window_extent(renderer).x0 > right_of_plot for t in labels)
    # every whisker ends inside the plot, so no label can sit on one
    whisker_ends = (results.accuracy_mean + results.accuracy_std).max()
    assert whisker_ends <= ax.get_xlim()[1]
    # best on top, the score text matches its bar, bars coloured by family
    ordered = results.sort_values("accuracy_mean")
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "passthrough + finetune"
    assert labels[-1].get_text() == "0.981 ± 0.004"
    assert [to_hex(b.get_facecolor()) for b in ax.patches] == [
        plots.family_colour(r) for r in ordered.representation]
    title = ax.get_title()
    assert "bbc-news" in title and "5-fold stratified CV" in title and "accuracy" in title


def test_title_comes_from_results_attrs_and_names_the_metric(results):
    fig = plots.score_chart(results, metric="f1_macro")
    assert fig.axes[0].get_title() == (
        "bbc-news, 2225 documents, 5-fold stratified CV\nmacro-F1 (mean ± std over 5 splits)")


def test_one_split_draws_no_error_bars_and_says_so(results):
    single = results.head(3).assign(n_splits=1, accuracy_std=0.0)
    single.attrs.update(dataset="trec", protocol="official test split", n_docs=5952)
    ax = plots.score_chart(single).axes[0]
    assert not ax.containers[0].errorbar
    assert ax.get_title().endswith("accuracy on one held-out split")
    assert sorted(t.get_text() for t in ax.texts) == ["0.976", "0.979", "0.981"]


@pytest.mark.parametrize("seconds", [(2.3, 2.9, 3.8), (0.04, 0.6, 7.0), (0.5, 40.0, 3000.0)])
def test_time_axis_ticks_are_plain_seconds(results, seconds):
    data = results.head(3).assign(fit_seconds=seconds)
    fig = plots.time_chart(data)
    ax = fig.axes[0]
    fig.canvas.draw()
    low, high = ax.get_xlim()
    shown = [t.get_text() for t in ax.get_xticklabels() if low <= t.get_position()[0] <= high]
    assert len(shown) >= 2, shown
    assert all(re.fullmatch(r"\d+(\.\d+)? s", s) for s in shown), shown
    assert not [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]


def test_time_chart_points_carry_ids_and_family_colours(results):
    from matplotlib.colors import to_hex

    fig = plots.time_chart(results)
    ax = fig.axes[0]
    points = {line.get_gid(): line for line in ax.lines if (line.get_gid() or "").startswith("pipeline-")}
    assert sorted(points) == sorted(f"pipeline-{i}" for i in range(len(results)))
    for i, rep in enumerate(results.representation):
        assert to_hex(points[f"pipeline-{i}"].get_color()) == plots.family_colour(rep)
        assert points[f"pipeline-{i}"].get_xydata()[0, 0] == pytest.approx(results.fit_seconds[i])
    labels = {t.get_text() for t in ax.texts}
    assert {f"{r} + {h}" for r, h in zip(results.representation, results["head"], strict=True)} <= labels


# ----------------------------------------------------------------------------------------------
# the report as a file
# ----------------------------------------------------------------------------------------------


def test_report_holds_table_charts_dataset_parameters_and_versions(report, results, bbc_slice):
    import sklearn

    import embedkit

    html = report.read_text(encoding="utf-8")
    body = html.split('<table class="sortable" id="results-table">')[1].split("</table>")[0]
    assert body.count("<tr>") == len(results) + 1  # header + one row per pipeline
    assert '<td class="num" data-sort="0.979">0.979 ± 0.006</td>' in body
    assert html.count("<svg") == 3  # score, time, document lengths
    for i, (r, h) in enumerate(zip(results.representation, results["head"], strict=True)):
        assert f"<title>{r} + {h}\naccuracy: {results.accuracy_mean[i]:.3f}" in html
    # dataset: size, classes, counts
    assert f"{len(bbc_slice)} documents in 5 classes" in html
    assert "<td>sports</td><td class=\"num\">60</td>" in html
    # exact parameters, nested pipelines step by step; names without estimators say so
    tfidf = html.split("<summary>tfidf + logreg</summary>")[1].split("</details>")[0]
    assert "<code>max_features</code></td><td><code>20000</code>" in tfidf
    assert "<code>logisticregression__max_iter</code></td><td><code>2000</code>" in tfidf
    assert "Pipeline(StandardScaler, LogisticRegression)" in tfidf
    assert "parameters not given" in html.split("<summary>minilm + mlp</summary>")[1].split("</details>")[0]
    assert f"<td>embedkit</td><td><code>{embedkit.__version__}</code>" in html
    assert f"<td>scikit-learn</td><td><code>{sklearn.__version__}</code>" in html
    # self-contained: nothing is fetched at view time
    assert not re.findall(r"""(?:src|href)\s*=\s*["'](?!#)""", html)
    assert "@import" not in html and not re.findall(r"url\((?!#)", html)


def test_report_of_bare_results_has_table_and_score_chart_only(tmp_path):
    bare = pd.DataFrame({"representation": ["bow", "glove"], "head": ["logreg", "mlp"],
                         "accuracy_mean": [0.81, 0.86], "accuracy_std": [0.02, 0.01]})
    html = write_html_report(bare, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<h1>embedkit comparison</h1>" in html
    assert html.count("<svg") == 1 and 'id="time-chart"' not in html
    assert '<td class="num" data-sort="0.86">0.860 ± 0.010</td>' in html
    assert "No dataset was given to the report." in html


def test_report_shows_every_metric_scored_in_the_runs_order(tmp_path):
    results = pd.DataFrame({"representation": ["bow", "minilm"], "head": ["logreg", "mlp"],
                            "f1_micro_mean": [0.7, 0.8], "f1_micro_std": [0.01, 0.02],
                            "precision_macro_mean": [0.6, 0.9], "precision_macro_std": [0.0, 0.1],
                            "fit_seconds": [0.5, 3.0]})
    results.attrs["metrics"] = ["precision_macro", "f1_micro"]
    html = write_html_report(results, tmp_path / "r.html").read_text(encoding="utf-8")
    headers = re.findall(r'data-column="([^"]+)"', html)
    assert headers == ["precision_macro", "f1_micro", "fit_seconds"]
    assert ">precision macro</th>" in html and ">micro-F1</th>" in html
    assert '<td class="num" data-sort="0.9">0.900 ± 0.100</td>' in html
    # the charts show the first metric of the run
    assert "precision macro" in html.split('id="score-chart"')[1].split("</figure>")[0]


def test_report_rejects_results_it_cannot_show(tmp_path, results):
    with pytest.raises(ValueError, match=r"lacks the columns \['accuracy_std'\]"):
        write_html_report(results.drop(columns="accuracy_std"), tmp_path / "r.html",
                          metric="accuracy")
    with pytest.raises(ValueError, match=r"lacks the columns \['accuracy_mean', 'accuracy_std'\]"):
        write_html_report(results[["representation", "head"]], tmp_path / "r.html")
    with pytest.raises(ValueError, match="no rows"):
        write_html_report(results.iloc[:0], tmp_path / "r.html")
    with pytest.raises(ValueError, match="'text' column"):
        write_html_report(results, tmp_path / "r.html", dataset=pd.DataFrame({"doc": ["a"]}))


# ----------------------------------------------------------------------------------------------
# the report in a real browser
# ----------------------------------------------------------------------------------------------

# the `browser` fixture (one headless Chromium per session) is in conftest.py, its helpers in
# _browser.py: the built manual's test (`test_docs.py`) opens pages the same way
_errors = severe_errors


def test_browser_log_check_catches_a_script_error(browser, tmp_path):
    """The check the report test relies on does see a JavaScript error."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>null.missing;</script></body></html>")
    browser.get(page.as_uri())
    assert any("TypeError" in message for message in _errors(browser))


def test_report_renders_sorts_and_logs_no_error(browser, report, results):
    from selenium.webdriver.common.by import By

    browser.get(report.as_uri())
    assert _errors(browser) == []
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0

    def column(index: int) -> list[str]:
        return [row.find_elements(By.TAG_NAME, "td")[index].text
                for row in browser.find_elements(By.CSS_SELECTOR, "#results-table tbody tr")]

    headers = browser.find_elements(By.CSS_SELECTOR, "#results-table thead th")
    names = [h.text.replace("↕", "").strip() for h in headers]
    assert names[:5] == ["pipeline", "representation", "head", "accuracy", "macro-F1"]
    assert len(column(0)) == len(results)
    fit = names.index("fit s")
    headers[fit].click()  # numbers sort high to low first
    assert [float(v) for v in column(fit)] == sorted(results.fit_seconds.round(2), reverse=True)
    assert headers[fit].get_attribute("aria-sort") == "descending"
    headers[fit].click()
    assert [float(v) for v in column(fit)] == sorted(results.fit_seconds.round(2))
    headers[0].click()  # text sorts A to Z first
    expected = sorted(f"{r} + {h}" for r, h in zip(results.representation, results["head"], strict=True))
    assert column(0) == expected

    # the three charts are drawn at a readable size; every time-chart point has its tooltip
    heights = browser.execute_script(
        "return Array.from(document.querySelectorAll('figure svg'), s => s.getBoundingClientRect().height)")
    assert len(heights) == 3 and min(heights) > 150, heights
    tips = browser.execute_script(
        "return Array.from(document.querySelectorAll('#time-chart g.point > title'), t => t.textContent)")
    assert sorted(t.split("\n")[0] for t in tips) == expected
    # a pipeline's link opens its parameters
    browser.find_element(By.LINK_TEXT, "tfidf + logreg").click()
    assert browser.find_element(By.ID, browser.current_url.split("#")[1]).get_attribute("open") == "true"
    assert _errors(browser) == []

    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, height + 100)
    browser.execute_script("window.scrollTo(0, 0)")
    shot = report.with_name("report.png")
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
