"""Charts of a comparison's or a search's rows: scores as bars, score against seconds."""

from __future__ import annotations

import math
import re

import numpy as np

from ._style import FAMILIES, family_colour, figure, metric_name, representation_family, saved


def _title(results, title: str, metric: str) -> str:
    """The given title (or dataset, size and protocol from ``results.attrs``) over the metric."""
    if not title:
        meta = getattr(results, "attrs", {}) or {}
        parts = [str(meta["dataset"]) if meta.get("dataset") else "",
                 f"{meta['n_docs']} documents" if meta.get("n_docs") else "",
                 str(meta.get("protocol") or "")]
        title = ", ".join(p for p in parts if p)
    splits = results["n_splits"].max() if "n_splits" in results else None
    over = {None: "", 1: " on one held-out split"}.get(splits, f" (mean ± std over {splits} splits)")
    line = f"{metric_name(metric)}{over}"
    return f"{title}\n{line}" if title else line


def _family_legend(fig, representations, extra=()) -> None:
    from matplotlib.patches import Patch

    found = {representation_family(r) for r in representations}
    present = [f for f in FAMILIES if f in found]  # always in palette order
    handles = [Patch(color=FAMILIES[f][1], label=FAMILIES[f][0]) for f in present] + list(extra)
    fig.legend(handles=handles, loc="outside lower center", ncols=max(1, min(len(handles), 4)),
               fontsize=8, frameon=False)


def pipeline_labels(results) -> list[str]:
    """The label of each row: its ``pipeline`` column where there is one, else
    ``"<representation> + <head>"``."""
    if "pipeline" in results:
        return results["pipeline"].astype(str).tolist()
    return [f"{r} + {h}" for r, h in zip(results.representation, results["head"], strict=True)]


#: a row whose head (or label) matches this is a reference, not a pipeline to rank: the majority
#: class. Charts draw it as a dashed line and scale their axes to the real pipelines.
_REFERENCE = re.compile(r"majority|dummy|most.?frequent", flags=re.I)


def reference_rows(results) -> np.ndarray:
    """Boolean mask of the rows that are references (the majority class), not pipelines.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"representation": ["baseline", "tfidf"],
    ...                      "head": ["majority-class", "logreg"]})
    >>> reference_rows(rows).tolist()
    [True, False]
    """
    heads = results["head"].astype(str) if "head" in results else None
    labels = pipeline_labels(results) if len(results) else []
    mask = np.array([bool(_REFERENCE.search(label)) for label in labels], dtype=bool)
    if heads is not None:
        mask |= heads.str.contains(_REFERENCE).to_numpy(dtype=bool)
    if mask.all():  # nothing but references: chart them as they are
        mask[:] = False
    return mask


def _reference_lines(ax, results, refs, metric: str, *, vertical: bool) -> list:
    """Draw each reference row as a dashed line across the plot (vertical on a horizontal score
    axis) where it falls inside the axis; return legend handles that name it and its score,
    saying so when it lies off the axis."""
    from matplotlib.lines import Line2D

    low, high = ax.get_xlim() if vertical else ax.get_ylim()
    handles = []
    for i in np.flatnonzero(refs):
        row = results.iloc[i]
        value = float(row[f"{metric}_mean"])
        name = pipeline_labels(results.iloc[[i]])[0]
        label = f"{'majority class' if 'majority' in name.lower() else name}: {value:.3f}"
        style = {"color": "#555555", "linestyle": "--", "linewidth": 1.2, "zorder": 1.5}
        if low <= value <= high:
            line = (ax.axvline if vertical else ax.axhline)(value, **style)
            line.set_gid(f"pipeline-{i}")
        else:
            side = ("left of" if value < low else "right of") if vertical else (
                "below" if value < low else "above")
            label += f" ({side} the axis)"
        handles.append(Line2D([], [], label=label, **style))
    return handles


def _score_text(mean: float, std: float, n_splits) -> str:
    if n_splits == 1 or not np.isfinite(std):
        return f"{mean:.3f}"
    return f"{mean:.3f} ± {std:.3f}"


def score_chart(results, path=None, title: str = "", metric: str = "accuracy"):
    """Horizontal bars of ``<metric>_mean`` with ``<metric>_std`` error bars, one per pipeline.

    Bars are coloured by representation family (`FAMILIES`), best pipeline on top; each score is
    printed in a column right of the plot, clear of every error bar. The majority class
    (`reference_rows`) is no bar: it is a dashed line, named in the legend with its score, and
    the axis is scaled to the real pipelines (a majority class at 0.23 would squeeze every bar
    into 0.9-1.0).

    Parameters
    ----------
    results : DataFrame
        Columns ``representation``, ``head``, ``<metric>_mean``, ``<metric>_std`` (and
        optionally ``n_splits``, and ``pipeline``: each row's label, by default
        ``"<representation> + <head>"``); ``results.attrs`` may hold ``dataset``, ``n_docs`` and
        ``protocol`` (what ``embedkit compare`` returns).
    path : str or Path, optional
        Where to save the chart (PNG, or any format matplotlib writes, from the suffix).
    title : str, default=""
        First title line; by default dataset, size and protocol from ``results.attrs``. A
        second line always names the metric.
    metric : str, default="accuracy"

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import pandas as pd
    >>> results = pd.DataFrame({
    ...     "representation": ["baseline", "tfidf", "minilm"],
    ...     "head": ["majority-class", "logreg", "logreg"],
    ...     "accuracy_mean": [0.23, 0.98, 0.97], "accuracy_std": [0.0, 0.01, 0.01]})
    >>> fig = score_chart(results, "results.png")
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]  # the majority class is a line
    ['minilm + logreg', 'tfidf + logreg']
    """
    refs = reference_rows(results)
    everything = results
    data = results[~refs].sort_values(f"{metric}_mean").reset_index(drop=True)
    means = data[f"{metric}_mean"].to_numpy(dtype=float)
    stds = np.nan_to_num(data[f"{metric}_std"].to_numpy(dtype=float))
    splits = data["n_splits"] if "n_splits" in data else [None] * len(data)
    fig = figure(8, 0.4 * len(data) + 2.2)
    ax = fig.add_subplot()
    y = np.arange(len(data))
    one_split = "n_splits" in data and (data["n_splits"] == 1).all()  # no spread to show
    ax.barh(y, means, xerr=None if one_split else stds, color=[family_colour(r) for r in data.representation],
            height=0.7, error_kw={"ecolor": "#333333", "capsize": 3, "elinewidth": 1})
    ax.set_yticks(y, pipeline_labels(data), fontsize=8)
    ax.set_ylim(-0.6, len(data) - 0.4)
    high = float((means + stds).max()) if len(data) else 1.0
    low = max(0.0, float((means - stds).min()) - 0.05) if len(data) else 0.0
    ax.set_xlim(low, 1.0 if high <= 1.0 else high * 1.02)
    ax.set_xlabel(metric_name(metric))
    ax.grid(axis="x", alpha=0.3)
    for row, (m, s, n) in enumerate(zip(means, stds, splits, strict=True)):
        # x in axes coordinates (1 = the right edge), y in data: a column beside the plot
        ax.annotate(_score_text(m, s, n), (1.0, row), xycoords=ax.get_yaxis_transform(),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize=8,
                    annotation_clip=False)
    ax.set_title(_title(results, title, metric), fontsize=10)
    lines = _reference_lines(ax, everything, refs, metric, vertical=True)
    _family_legend(fig, data.representation, lines)
    return saved(fig, path)


def _seconds(value: float, _pos=None) -> str:
    """A tick label in plain seconds: ``0.05 s``, ``2 s``, ``300 s``."""
    return f"{value:g} s"


def _log_limits(low: float, high: float, steps) -> tuple[float, float]:
    """Axis limits on the tick grid ``steps x 10^k`` just outside ``[low, high]``, so both ends
    carry a labelled tick (at least two ticks, however narrow the range)."""
    exps = range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 2)
    grid = sorted(s * 10.0**e for e in exps for s in steps)
    return (max(g for g in grid if g <= low / 1.15), min(g for g in grid if g >= high * 1.15))


#: the most points `time_chart` names
NAMED_POINTS = 20


def time_chart(results, path=None, title: str = "", metric: str = "accuracy",
               seconds: str = "fit_seconds"):
    """Seconds (log scale, plain-second ticks) against ``<metric>_mean``, one labelled point per
    pipeline, coloured by representation family.

    Same arguments as `score_chart`, plus ``seconds``: the timing column for the x axis. Each
    point's marker carries the SVG id ``pipeline-<i>``, ``i`` its row position in ``results``
    (the HTML report attaches a tooltip to it). The majority class (`reference_rows`) is a
    dashed horizontal line with that id, not a point: both axes are scaled to the real
    pipelines, and their labels are moved apart (adjustText) so none covers another. Only the
    best `NAMED_POINTS` are named (the layout's time grows faster than the number of labels,
    and a tuning search scores dozens of models); every point keeps its id and tooltip. Returns
    the `matplotlib.figure.Figure`.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    refs = reference_rows(results)
    rows = np.flatnonzero(~refs)
    data = results.iloc[rows]
    x = np.maximum(data[seconds].to_numpy(dtype=float), 1e-3)
    means = data[f"{metric}_mean"].to_numpy(dtype=float)
    stds = np.nan_to_num(data[f"{metric}_std"].to_numpy(dtype=float))
    colours = [family_colour(r) for r in data.representation]
    fig = figure(8, 5.5 + 0.12 * max(0, len(data) - 10))
    ax = fig.add_subplot()
    ax.vlines(x, means - stds, means + stds, colors=colours, linewidth=1.2, alpha=0.7)
    for i, xi, yi, c in zip(rows, x, means, colours, strict=True):
        ax.plot([xi], [yi], "o", color=c, markeredgecolor="white", markersize=8, zorder=3,
                gid=f"pipeline-{i}")
    ax.set_xscale("log")
    decades = math.log10(x.max() / x.min()) if len(x) else 0.0
    steps = (1.0, 2.0, 5.0) if decades <= 2 else (1.0,)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=steps))
    ax.xaxis.set_major_formatter(FuncFormatter(_seconds))
    ax.xaxis.set_minor_formatter(NullFormatter())
    if len(x):
        ax.set_xlim(*_log_limits(float(x.min()), float(x.max()), steps))
        low, high = float((means - stds).min()), float((means + stds).max())
        pad = max(0.01, 0.08 * (high - low))
        ax.set_ylim(low - pad, high + pad)
    ax.set_xlabel(f"{seconds.replace('_', ' ')} per split (log scale)")
    ax.set_ylabel(metric_name(metric))
    ax.grid(alpha=0.3, which="major")
    lines = _reference_lines(ax, results, refs, metric, vertical=False)
    ax.set_title(_title(results, title, metric), fontsize=10)
    _family_legend(fig, data.representation, lines)
    named = np.sort(np.argsort(-means, kind="stable")[:NAMED_POINTS])
    labels = pipeline_labels(data)
    _label_points(fig, ax, x[named], means[named], [labels[i] for i in named])
    return saved(fig, path)


def _label_points(fig, ax, x, y, labels) -> None:
    """Name each point, moving labels apart (adjustText) so none hides another."""
    from adjustText import adjust_text

    # a light box keeps a label readable where it crosses another point's error bar
    box = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8}
    texts = [ax.text(xi, yi, label, fontsize=7, bbox=box, zorder=2.5)  # under the markers
             for xi, yi, label in zip(x, y, labels, strict=True)]
    if texts:
        import logging

        fig.canvas.draw()  # lay the figure out first: adjustText works in display coordinates
        quiet = logging.getLogger("adjustText")  # a label wider than the axes is drawn anyway;
        level = quiet.level  # its warning, once a label, is noise on the command's output
        quiet.setLevel(logging.ERROR)
        try:
            # labels it cannot part (points of equal score and time) keep it moving to its limit:
            # on tuning leaderboards 500 rounds part as many as 2,000, in under half the time
            adjust_text(texts, x=x, y=y, ax=ax, expand=(1.2, 1.6), ensure_inside_axes=True,
                        max_move=None, iter_lim=500,
                        arrowprops={"arrowstyle": "-", "color": "#999999", "lw": 0.5})
        finally:
            quiet.setLevel(level)

