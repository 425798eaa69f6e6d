"""The files a run leaves: a comparison's results table, charts and page (`write_report`), and
the one self-contained HTML page it and a tuning search's leaderboard
(`embedkit.tuning._leaderboard.write_leaderboard`) include, ``report.html`` (`write_html_report`).

The page holds a sortable results table, the score chart, the score-versus-time chart (hover a
point to see its pipeline and numbers), the dataset summary, the exact parameters of every
pipeline and the versions of embedkit and its key dependencies. It loads nothing at view time:
the charts are matplotlib SVG written into the page, the only script is the table sorter of the
template (``embedkit/templates/report.html.j2``, rendered by Jinja2).

Why matplotlib SVG rather than Plotly or Altair: matplotlib already draws the package's charts
(one palette, one code path for the PNGs and the page), an SVG chart is about 40 kB, and the
browser shows a ``<title>`` tooltip without any script; embedding plotly.js would add ~3.5 MB to
every report and a new dependency, Altair needs vega scripts from a CDN or a converter.
"""

from __future__ import annotations

import datetime as _dt
import io
import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .plots import (
    FAMILIES,
    family_colour,
    metric_name,
    pipeline_labels,
    representation_family,
    score_chart,
    time_chart,
)

__all__ = ["format_table", "write_html_report", "write_report"]

#: distributions whose versions the report lists (missing ones are shown as "not installed")
KEY_PACKAGES = ("embedkit", "numpy", "scipy", "scikit-learn", "pandas", "torch", "skorch",
                "transformers", "tokenizers", "gensim", "matplotlib", "jinja2")

_SVG = "http://www.w3.org/2000/svg"

# results column -> (table header, how to show it), after the score columns; absent ones are
# left out
_COST_COLUMNS = {
    "fit_seconds": ("fit s", "seconds"),
    "transform_seconds": ("transform s", "seconds"),
    "predict_seconds": ("predict s", "seconds"),
    "peak_mb": ("peak MB", "megabytes"),
}


def _columns(results: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """The table's columns: every metric scored (``<metric>_mean`` / ``_std``, in the order of
    ``results.attrs["metrics"]`` where it is given), then the cost columns present."""
    scored = [c[: -len("_mean")] for c in results.columns
              if c.endswith("_mean") and f"{c[: -len('_mean')]}_std" in results]
    order = [m for m in results.attrs.get("metrics") or () if m in scored]
    scored = order + [m for m in scored if m not in order]
    return {**{m: (metric_name(m), "score") for m in scored},
            **{c: v for c, v in _COST_COLUMNS.items() if c in results}}


def write_html_report(results: pd.DataFrame, path, *, dataset: pd.DataFrame | None = None,
                      representations: Mapping[str, Any] | None = None,
                      heads: Mapping[str, Any] | None = None,
                      pipelines: Mapping[str, Any] | None = None, metric: str | None = None,
                      title: str | None = None, figures: Mapping[str, Any] | None = None) -> Path:
    """Write one self-contained ``report.html`` for a comparison's results.

    Parameters
    ----------
    results : DataFrame
        One row per pipeline, as ``embedkit compare`` returns it: ``representation``,
        ``head``, ``<metric>_mean`` / ``<metric>_std`` for every metric scored (any scikit-learn
        scorer), ``fit_seconds``, ``transform_seconds``, ``predict_seconds``, ``peak_mb``,
        ``n_splits``, optionally ``pipeline`` (the row's label; default ``"<representation> +
        <head>"``); ``results.attrs`` may hold ``dataset``, ``protocol``, ``n_docs``,
        ``wall_seconds`` and ``metrics`` (the order of the score columns).
    path : str or Path
        The HTML file to write (its folder must exist).
    dataset : DataFrame, optional
        The documents the pipelines were scored on: ``text``, ``label`` and optionally
        ``split``; summarised as size, classes and the words-per-document distribution.
    representations, heads : mapping of str to estimator, optional
        What each name in ``results.representation`` / ``results.head`` stands for: an
        unfitted estimator (its ``get_params`` are shown, nested pipelines step by step), the
        string ``"passthrough"``, or a mapping of parameters.
    pipelines : mapping of str to Pipeline, optional
        Per row label, the whole pipeline it scored (``embedkit tune``: candidates of one pair
        differ by their settings); its first and last steps' parameters are shown, and it wins
        over ``representations`` / ``heads``.
    metric : str, optional
        The metric of the charts; by default the first of ``results.attrs["metrics"]``, else the
        first scored column.
    title : str, optional
        The page heading; by default from ``results.attrs``.
    figures : mapping of str to matplotlib Figure, optional
        Further charts after the two of every report, each under its caption (`embedkit tune`:
        the pick's reliability diagrams).

    Returns
    -------
    Path of the written file.

    Examples
    --------
    >>> import pandas as pd
    >>> from embedkit import MLPClassifier, TfidfEmbedder
    >>> results = pd.DataFrame({"representation": ["tfidf"], "head": ["mlp"],
    ...                         "accuracy_mean": [0.91], "accuracy_std": [0.02]})
    >>> df = pd.DataFrame({"text": ["good film", "bad film"], "label": ["pos", "neg"]})
    >>> write_html_report(results, "report.html", dataset=df,
    ...                   representations={"tfidf": TfidfEmbedder()},
    ...                   heads={"mlp": MLPClassifier()}).name
    'report.html'
    """
    try:
        import jinja2
    except ImportError:
        raise ImportError("the HTML report needs Jinja2: `pip install 'embedkit[plots]'`.") from None
    if len(results) == 0:
        raise ValueError("results has no rows; run at least one pipeline before writing a report.")
    columns = _columns(results)
    metric = metric or next((m for m, (_, kind) in columns.items() if kind == "score"), "accuracy")
    missing = {"representation", "head", f"{metric}_mean", f"{metric}_std"} - set(results.columns)
    if missing:
        raise ValueError(f"results lacks the columns {sorted(missing)}; pass the DataFrame that "
                         f"`embedkit compare` returns (metric={metric!r}).")
    if dataset is not None and "text" not in dataset:
        raise ValueError(f"dataset has columns {list(dataset.columns)}; the report needs a 'text' "
                         "column (and 'label'), the documents the pipelines were scored on.")
    results = results.reset_index(drop=True)
    meta = {"dataset": None, "protocol": None, "n_docs": None, "wall_seconds": None, **results.attrs}
    heading = title or " · ".join(str(p) for p in (meta.get("dataset"), meta.get("protocol")) if p) \
        or "embedkit comparison"
    labels = pipeline_labels(results)
    tooltips = {f"pipeline-{i}": _tooltip(row, label, metric)
                for i, (label, row) in enumerate(zip(labels, results.itertuples(index=False), strict=True))}
    env = jinja2.Environment(loader=jinja2.PackageLoader("embedkit", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    page = env.get_template("report.html.j2").render(
        heading=heading,
        meta=meta,
        written=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        columns=[(c, *shown) for c, shown in columns.items()],
        rows=_rows(results, labels, columns),
        families=[(FAMILIES[f][0], FAMILIES[f][1]) for f in FAMILIES
                  if f in {representation_family(r) for r in results.representation}],
        score_svg=_svg(score_chart(results, metric=metric), "score"),
        time_svg=_svg(time_chart(results, metric=metric), "time", tooltips)
        if "fit_seconds" in results else None,
        figures=[(caption, _svg(fig, f"extra{i}")) for i, (caption, fig)
                 in enumerate((figures or {}).items())],
        dataset=_dataset_summary(dataset),
        pipelines=[_pipeline(i, label, r, h, representations, heads, pipelines)
                   for i, (label, r, h) in enumerate(zip(labels, results.representation,
                                                         results["head"], strict=True))],
        versions=_versions(),
    )
    path = Path(path)
    path.write_text(page, encoding="utf-8")
    return path


def _tooltip(row, label: str, metric: str) -> str:
    mean, std = getattr(row, f"{metric}_mean"), getattr(row, f"{metric}_std")
    text = f"{label}\n{metric}: {mean:.3f} ± {std:.3f}"
    if hasattr(row, "fit_seconds"):
        text += f"\nfit: {row.fit_seconds:.2f} s per split"
    return text


def _rows(results: pd.DataFrame, labels: list[str], columns: dict) -> list[dict]:
    rows = []
    for i, label in enumerate(labels):
        record = results.iloc[i]
        cells = []
        for column, (_, kind) in columns.items():
            if kind == "score":
                mean, std = float(record[f"{column}_mean"]), float(record[f"{column}_std"])
                single = int(record.get("n_splits", 2) or 2) == 1 or not np.isfinite(std)
                cells.append((mean, f"{mean:.3f}" if single else f"{mean:.3f} ± {std:.3f}"))
            else:
                value = float(record[column])
                shown = "" if not np.isfinite(value) else (
                    f"{value:.0f}" if kind == "megabytes" else f"{value:.2f}")
                cells.append((value if np.isfinite(value) else "", shown))
        rows.append({"label": label, "representation": record.representation, "head": record["head"],
                     "colour": family_colour(record.representation), "anchor": f"params-{i}",
                     "cells": cells})
    return rows


def _svg(fig, salt: str, tooltips: Mapping[str, str] | None = None) -> str:
    """The figure as an inline ``<svg>`` element, a ``<title>`` tooltip on each element whose id
    is a key of ``tooltips``. Ids are salted per chart so two charts in one page never share one."""
    import xml.etree.ElementTree as ET

    import matplotlib

    buffer = io.StringIO()
    # text stays text: half the size of glyph paths, and a page search finds a pipeline's name
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    ET.register_namespace("", _SVG)
    ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    root = ET.fromstring(buffer.getvalue())
    for node in root.findall(f"{{{_SVG}}}metadata"):  # RDF boilerplate, nothing to show
        root.remove(node)
    if tooltips:
        for node in root.iter(f"{{{_SVG}}}g"):
            text = tooltips.get(node.get("id", ""))
            if text is not None:
                tip = ET.Element(f"{{{_SVG}}}title")
                tip.text = text
                node.insert(0, tip)
                node.set("class", "point")
    root.set("role", "img")
    root.set("width", "100%")  # scale to the page; the viewBox keeps the aspect ratio
    root.attrib.pop("height", None)
    return ET.tostring(root, encoding="unicode")


def _dataset_summary(df: pd.DataFrame | None) -> dict | None:
    if df is None:
        return None
    from .data.datasets import is_multilabel
    from .data.documents import DEFAULT_TOKEN_PATTERN

    words = df["text"].astype(str).str.count(DEFAULT_TOKEN_PATTERN)
    quantiles = words.quantile([0.0, 0.25, 0.5, 0.75, 0.9, 1.0]).round().astype(int)
    labels = df["label"] if "label" in df else pd.Series(dtype=object)
    if is_multilabel(labels):
        labels = labels.explode().dropna()  # multi-label: documents carrying each label
    number = pd.api.types.is_float_dtype(labels) and labels.nunique() > 10
    counts = pd.Series(dtype=int) if number else labels.value_counts()  # a number: no classes
    splits = df["split"].value_counts().to_dict() if "split" in df else {}
    return {
        "target": (f"a number: mean {labels.mean():.3g}, standard deviation {labels.std():.3g}, "
                   f"from {labels.min():.3g} to {labels.max():.3g}") if number else "",
        "n_docs": len(df),
        "n_classes": len(counts),
        "classes": [(str(k), int(v), 100.0 * v / max(len(df), 1)) for k, v in counts.items()],
        "splits": {str(k): int(v) for k, v in splits.items()},
        "quantiles": dict(zip(["min", "25%", "median", "75%", "90%", "max"], quantiles.tolist(),
                              strict=True)),
        "mean_words": float(words.mean()) if len(words) else 0.0,
        "lengths_svg": _svg(_length_histogram(words), "lengths"),
    }


def _length_histogram(words: pd.Series):
    from .plots import figure

    fig = figure(8, 2.8)
    ax = fig.add_subplot()
    # a long tail would squeeze the bulk into a few bins: the longest 1% share the last bin
    top = float(words.quantile(0.99))
    ax.hist(words.clip(upper=top), bins=min(40, max(5, words.nunique())), color="#555555")
    ax.axvline(words.median(), color="#d62728", linestyle="--", linewidth=1,
               label=f"median {words.median():.0f}")
    tail = int((words > top).sum())
    ax.set_xlabel("words per document" + (f" (the {tail} longer than {top:.0f}, up to {words.max()}, "
                                          "counted in the last bin)" if tail else ""))
    ax.set_ylabel("documents")
    ax.legend(frameon=False, fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def _pipeline(i: int, label: str, rep: str, head: str, representations, heads, pipelines) -> dict:
    """The parameters section of one row: its whole pipeline where given, else its steps."""
    out = {"label": label, "anchor": f"params-{i}"}
    if pipelines is not None and label in pipelines and hasattr(pipelines[label], "steps"):
        steps = pipelines[label].steps
        return {**out, "representation": _describe(rep, {rep: steps[0][1]}),
                "head": _describe(head, {head: steps[-1][1]})}
    return {**out, "representation": _describe(rep, representations),
            "head": _describe(head, heads)}


def _describe(name: str, given: Mapping[str, Any] | None) -> dict:
    """Class and parameters of the estimator behind a representation or head name."""
    if given is None or name not in given:
        return {"name": name, "kind": "parameters not given to the report", "params": []}
    item = given[name]
    if isinstance(item, str):
        return {"name": name, "kind": repr(item), "params": []}
    if isinstance(item, Mapping):
        return {"name": name, "kind": "parameters",
                "params": sorted((str(k), repr(v)) for k, v in item.items())}
    params = item.get_params(deep=True)
    # nested estimators (pipeline steps) are listed through their own `step__param` entries
    shown = sorted((k, repr(v)) for k, v in params.items()
                   if not hasattr(v, "get_params") and k != "steps")
    kind = type(item).__name__
    if hasattr(item, "steps"):
        kind += "(" + ", ".join(type(step).__name__ for _, step in item.steps) + ")"
    return {"name": name, "kind": kind, "params": shown}


def _versions() -> list[tuple[str, str]]:
    from . import __version__

    out = [("python", platform.python_version()), ("embedkit", __version__)]
    for dist in KEY_PACKAGES[1:]:
        try:
            out.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            out.append((dist, "not installed"))
    out.append(("platform", platform.platform(terse=True)))
    return out


def _metric_columns(results: pd.DataFrame) -> list[str]:
    return [c[:-5] for c in results.columns if c.endswith("_mean")]


def format_table(results: pd.DataFrame) -> pd.DataFrame:
    """Human-readable table: mean ± std per metric (the score alone for one split), seconds."""
    splits = results["n_splits"] if "n_splits" in results else pd.Series(2, index=results.index)

    def score(metric):
        return [f"{m:.3f}" if n == 1 else f"{m:.3f} ± {s:.3f}"
                for m, s, n in zip(results[f"{metric}_mean"], results[f"{metric}_std"], splits, strict=True)]

    table = {}
    if "kind" in results:
        table["kind"] = results["kind"]
    table.update({"representation": results.representation, "head": results["head"]})
    for metric in _metric_columns(results):
        table[metric_name(metric)] = score(metric)
    table.update({
        "fit s": results.fit_seconds.round(2),
        "transform s": results.transform_seconds.round(2),
        "predict s": results.predict_seconds.round(2),
        "peak MB": results.peak_mb.map(lambda v: "" if pd.isna(v) else f"{v:.0f}"),
    })
    return pd.DataFrame(table)


_COLUMNS = """\
*kind*: `baseline` rows are what a user writes in five lines, on the same splits: the majority
class (scikit-learn `DummyClassifier`), scikit-learn `TfidfVectorizer(ngram_range=(1, 2),
min_df=2, sublinear_tf=True)` + `LogisticRegression(max_iter=3000)`, and all-MiniLM-L6-v2
mean-pooled, L2-normalised vectors (sentence-transformers' `encode`) + the same
`LogisticRegression`. *fit s*: the pipeline's fit on one training fold (representation
`fit_transform` + head `fit`; the run fits each representation once per fold and shares it
between its heads; a pretrained encoder is run once over all documents and each fold is charged
its share). *transform s*: the representation on the test documents; *predict s*: the head's
predictions on those features and their scoring. Seconds are means over folds. *peak MB*: the
largest growth of resident memory over a fold's start.
"""


def write_report(results: pd.DataFrame, out: Path, *, dataset: pd.DataFrame | None = None,
                 representations=None, heads=None) -> dict[str, Path]:
    """Write results.csv, results.md, results.png (scores), results_time.png (fit time versus
    score) and report.html (`embedkit.report.write_html_report`: the sortable table, both charts,
    the dataset summary when ``dataset`` is given, the parameters of the steps named in
    ``representations`` / ``heads``) into ``out``; return their paths. The charts show the
    first metric."""
    paths = {"csv": out / "results.csv", "md": out / "results.md", "png": out / "results.png",
             "time_png": out / "results_time.png", "html": out / "report.html"}
    results.to_csv(paths["csv"], index=False)
    meta = results.attrs
    metric = (meta.get("metrics") or _metric_columns(results) or ["accuracy"])[0]
    title = f"{meta.get('dataset', '')}: {meta.get('n_docs', '?')} documents, {meta.get('protocol', '')}"
    notes = []
    if meta.get("pos_label") is not None:
        notes.append(f"Positive class of the two-class metrics: {meta['pos_label']!r} (the minority "
                     "class unless --pos-label says otherwise).")
    if meta.get("wall_seconds"):
        jobs = meta.get("n_jobs")
        notes.append(f"Wall time of the run that wrote this report: {meta['wall_seconds']:.0f} s"
                     + (f", {jobs} jobs at a time, {meta.get('threads_per_job')} thread(s) each"
                        if isinstance(jobs, int) else "") + ".")
    if meta.get("peak_process_mb"):
        notes.append(f"Largest resident memory of the run's processes: {meta['peak_process_mb']:.0f} MB.")
    footer = _COLUMNS + "".join(f"\n{n}\n" for n in notes)
    paths["md"].write_text(f"# {title}\n\nRanked by {metric_name(metric)}.\n\n"
                           + format_table(results).to_markdown(index=False) + "\n\n" + footer)
    score_chart(results, paths["png"], title=title, metric=metric)
    time_chart(results, paths["time_png"], title=title, metric=metric)
    write_html_report(results, paths["html"], dataset=dataset, representations=representations,
                      heads=heads, metric=metric)
    return paths
