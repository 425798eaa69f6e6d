"""Charts: comparison bars and score-versus-time for reports, attention heatmaps over words.

Every chart is a `matplotlib.figure.Figure` drawn on its own Agg canvas, without pyplot: no
global state, no open-figure leaks, works on servers and in CI, and Jupyter shows the returned
figure inline. Representation families (TF-IDF/BoW/LSA, Word2Vec, FastText, GloVe, Doc2Vec,
Transformer encoders, learned embeddings, fine-tuned Transformers, baselines) have one colour
each, from `FAMILIES`, in every chart the package draws.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

__all__ = [
    "FAMILIES",
    "attention_heatmap",
    "family_colour",
    "metric_name",
    "reference_rows",
    "reliability_diagram",
    "representation_family",
    "score_chart",
    "time_chart",
]

#: representation family -> (legend label, colour, pattern matched against a representation's
#: name, lowercased). The first family whose pattern matches wins, so the order matters:
#: ``TransformerClassifier`` is fine-tuned before it is a Transformer, ``minilm-tokens`` is a
#: Transformer before it is token ids. Colours are matplotlib's tab10, one per family.
FAMILIES: dict[str, tuple[str, str, str]] = {
    "finetuned": ("fine-tuned Transformer", "#e377c2", r"passthrough|fine.?tun|transformerclassifier"),
    "baseline": ("baseline", "#7f7f7f", r"baseline|dummy|majority"),
    "transformer": ("Transformer encoder", "#d62728", r"minilm|transformer|bert|sentence"),
    "glove": ("GloVe", "#2ca02c", r"glove"),
    "fasttext": ("FastText", "#8c564b", r"fast.?text"),
    "word2vec": ("Word2Vec", "#ff7f0e", r"word2vec|w2v|skip.?gram|cbow"),
    "doc2vec": ("Doc2Vec", "#9467bd", r"doc2vec|paragraph"),
    "sparse": ("TF-IDF / BoW / LSA", "#1f77b4", r"tf.?idf|\bbow\b|bag.of.words|count|lsa"),
    "learned": ("learned embedding", "#17becf", r"learned|tokenindexer|token.?ids"),
    "other": ("other", "#bcbd22", r""),
}

#: how charts, tables and the HTML report name a scikit-learn scorer (others: `metric_name`)
_METRICS = {"accuracy": "accuracy", "balanced_accuracy": "balanced accuracy",
            "f1_macro": "macro-F1", "f1_micro": "micro-F1", "f1_weighted": "weighted-F1",
            "f1_samples": "samples-F1", "roc_auc": "ROC AUC", "roc_auc_ovr": "ROC AUC (one-vs-rest)",
            "neg_log_loss": "negative log-loss", "neg_root_mean_squared_error": "negative RMSE",
            "neg_mean_absolute_error": "negative MAE", "r2": "R²"}


def metric_name(metric: str) -> str:
    """How a scikit-learn scorer name is shown in charts, tables and reports.

    Examples
    --------
    >>> metric_name("f1_macro"), metric_name("precision_macro")
    ('macro-F1', 'precision macro')
    """
    return _METRICS.get(metric, metric.replace("_", " "))


def representation_family(name: str) -> str:
    """The family (a key of `FAMILIES`) of a representation, from its name.

    Registry names (``"glove-sif"``), class names (``"TfidfEmbedder"``) and notebook labels
    (``"glove mean"``) all work; a name that matches no family is ``"other"``.

    Examples
    --------
    >>> representation_family("glove-seq"), representation_family("TransformerEmbedder")
    ('glove', 'transformer')
    """
    low = str(name).lower()
    return next(f for f, (_, _, pattern) in FAMILIES.items() if re.search(pattern, low))


def family_colour(name: str) -> str:
    """The hex colour of a representation's family (or of a family, given its key)."""
    family = name if name in FAMILIES else representation_family(name)
    return FAMILIES[family][1]


def figure(width: float, height: float):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("plots need matplotlib: `pip install 'embedkit[plots]'`.") from None
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _finish(fig, path):
    if path is not None:
        fig.savefig(Path(path), dpi=120)
    return fig


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
    return _finish(fig, path)


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
    return _finish(fig, path)


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
            adjust_text(texts, x=x, y=y, ax=ax, expand=(1.2, 1.6), ensure_inside_axes=True,
                        max_move=None, iter_lim=2000,
                        arrowprops={"arrowstyle": "-", "color": "#999999", "lw": 0.5})
        finally:
            quiet.setLevel(level)


def attention_heatmap(words, weights=None, path=None, *, title: str | None = None,
                      cmap: str = "Reds", max_words_per_row: int = 20, unknown=None):
    """Draw attention weights over the words of one or more documents.

    Each document is coloured on its own scale, from its smallest weight (lightest) to its
    largest (darkest): weights sum to one per document, so on one shared scale a long
    document's words would all look alike. Compare shades within a document, not across.

    Parameters
    ----------
    words : list of str, list of list of str, or list of TokenAttention
        The tokens of one document, or of several (one block of rows per document), or what
        `embedkit.explain.attention_weights` returns (then ``weights`` and ``unknown`` come
        from it).
    weights : array-like of shape (n_words,), or list of such arrays
        One weight per word, e.g. one entry of ``head.attention_weights(X)``.
    path : str or Path, optional
        Where to save the figure (PNG unless the suffix says otherwise).
    title : str, optional
    cmap : str, default="Reds"
        Matplotlib colormap; each word's cell is shaded by its weight.
    max_words_per_row : int, default=20
        Long documents wrap onto several rows, labelled with the word positions they hold.
    unknown : bool array-like (or list of them), optional
        Tokens the representation had no vector for: drawn grey, in italics.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = attention_heatmap(["not", "good"], [0.7, 0.3], "attention.png")
    >>> [t.get_text() for t in fig.axes[0].texts]
    ['not', 'good']
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if len(words) and all(hasattr(w, "unknown") and hasattr(w, "tokens") for w in words):
        words, weights, unknown = ([list(w.tokens) for w in words], [w.weights for w in words],
                                   [w.unknown for w in words])
    if weights is None:
        raise ValueError("pass weights, or the list that embedkit.explain.attention_weights returns.")
    if words and isinstance(words[0], str) or len(words) == 0:
        words, weights = [list(words)], [weights]
        unknown = None if unknown is None else [unknown]
    if len(words) != len(weights):
        raise ValueError(f"got {len(words)} documents of words but {len(weights)} of weights.")
    if unknown is None:
        unknown = [np.zeros(len(w), dtype=bool) for w in words]
    docs: list[tuple[list[str], np.ndarray, np.ndarray]] = []
    for i, (w, a, u) in enumerate(zip(words, weights, unknown, strict=True)):
        a = np.asarray(a, dtype=float).ravel()
        u = np.asarray(u, dtype=bool).ravel()
        if len(w) != len(a) or len(u) != len(a):
            raise ValueError(
                f"document {i}: {len(w)} words but {len(a)} weights"
                f"{'' if len(u) == len(a) else f' and {len(u)} unknown flags'}; pass the tokens the "
                "representation produced (e.g. attention_weights(X, return_tokens=True)).")
        if not np.isfinite(a).all():
            raise ValueError(f"document {i}: weights contain NaN or infinity.")
        docs.append((list(map(str, w)), a, u))
    width = max(1, int(max_words_per_row))
    rows = [(d, s) for d, (w, _, _) in enumerate(docs) for s in range(0, max(len(w), 1), width)]
    cols = min(width, max([len(w) for w, _, _ in docs] or [1]) or 1)

    fig = Figure(figsize=(1.0 + 0.9 * cols, 0.7 + 0.45 * len(rows)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    grid = np.full((len(rows), cols), np.nan)
    labels = []
    for r, (d, start) in enumerate(rows):
        w, a, u = docs[d]
        seen = a[~u] if (~u).any() else a
        low, high = (float(seen.min()), float(seen.max())) if seen.size else (0.0, 1.0)
        scaled = (a - low) / (high - low) if high > low else np.ones_like(a)
        chunk, gone = scaled[start: start + width], u[start: start + width]
        grid[r, : len(chunk)] = np.where(gone, np.nan, np.clip(chunk, 0.0, 1.0))
        for c, word in enumerate(w[start: start + width]):
            if gone[c]:
                ax.add_patch(_cell(c, r, "#d9d9d9"))
            ax.text(c, r, word, ha="center", va="center", fontsize=8,
                    style="italic" if gone[c] else "normal",
                    color="#555555" if gone[c] else "white" if chunk[c] > 0.6 else "black")
        wraps = len(w) > width
        labels.append(f"doc {d}" + (f" · {start + 1}-{min(start + width, len(w))}" if wraps else ""))
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks([])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=8)
    bar = fig.colorbar(image, ax=ax, fraction=0.03, pad=0.01, ticks=[0, 1])
    bar.ax.set_yticklabels(["doc min", "doc max"], fontsize=7)
    bar.set_label("attention, per document", fontsize=8)
    if any(u.any() for _, _, u in docs):
        ax.set_xlabel("grey italics: no vector for the word (unknown)", fontsize=8)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(Path(path), dpi=120)
    return fig


def _cell(col: int, row: int, colour: str):
    from matplotlib.patches import Rectangle

    return Rectangle((col - 0.5, row - 0.5), 1.0, 1.0, facecolor=colour, edgecolor="none", zorder=0.5)


def history_chart(history, path=None, ax=None, *, title: str = ""):
    """Training and validation loss per epoch, and the validation metric if one was recorded.

    Parameters
    ----------
    history : list of dict
        One dict per epoch with ``epoch`` and ``train_loss``, and optionally ``valid_loss`` and
        ``valid_acc`` or ``valid_r2`` (a head's ``history_``).
    path : str or Path, optional
        Save the figure there (any format matplotlib writes, e.g. ``.png``).
    ax : matplotlib Axes, optional
        Draw into it instead of a new figure.
    title : str, default=""

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = history_chart([{"epoch": 1, "train_loss": 0.9}, {"epoch": 2, "train_loss": 0.5}])
    >>> fig.axes[0].lines[0].get_ydata().tolist()
    [0.9, 0.5]
    """
    # an explicit Agg canvas: draws off-screen without touching the global pyplot backend
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not history:
        raise ValueError("history is empty: fit the head first (it records one entry per epoch).")
    if ax is None:
        fig = Figure(figsize=(6, 4))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    epochs = [h["epoch"] for h in history]
    for key, style in (("train_loss", "o-"), ("valid_loss", "s--")):
        if any(key in h for h in history):
            ax.plot(epochs, [h.get(key, np.nan) for h in history], style, label=key)
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    metric = next((m for m in ("valid_acc", "valid_r2") if m in history[0]), None)
    if metric:
        twin = ax.twinx()
        twin.plot(epochs, [h[metric] for h in history], "^:", color="tab:green", label=metric)
        twin.set_ylabel(metric)
        twin.legend(loc="upper right")
    ax.legend(loc="upper left")
    ax.set_title(title)
    if path is not None:
        fig.savefig(Path(path), bbox_inches="tight")
    return fig


__all__ += ["history_chart"]


def reliability_diagram(y_true, proba, classes=None, path=None, *, bins: int = 15, title: str = ""):
    """The rows binned by their top-class confidence (``bins`` equal widths; each cell of a 0/1
    label matrix is a two-class decision), each bin's accuracy as a bar beside the diagonal of
    perfect calibration and its share of the rows in grey. ``proba``'s columns are ``classes``
    (by default the sorted labels), as `embedkit.data.targets.expected_calibration_error` reads.

    >>> fig = reliability_diagram([0, 0, 1, 1], [[0.9, 0.1], [0.8, 0.2], [0.9, 0.1], [0.4, 0.6]])
    >>> [(round(float(b.get_x()), 2), float(b.get_height())) for b in fig.axes[0].patches[:3]]
    [(0.6, 1.0), (0.8, 1.0), (0.87, 0.5)]
    """
    y, proba = np.asarray(y_true), np.asarray(proba, dtype=np.float64)
    if y.ndim == 2:
        confidence, right = np.maximum(proba, 1 - proba).ravel(), ((proba > 0.5) == (y > 0)).ravel()
    else:
        classes = np.unique(y) if classes is None else np.asarray(classes)
        confidence, right = proba.max(axis=1), classes[proba.argmax(axis=1)] == y
    which = np.minimum((confidence * bins).astype(np.int64), bins - 1)
    count = np.bincount(which, minlength=bins)
    seen = np.flatnonzero(count)
    fig = figure(5, 4.5)
    ax = fig.add_subplot()
    ax.bar(seen / bins, np.bincount(which, right, bins)[seen] / count[seen], 1 / bins, align="edge",
           color=FAMILIES["sparse"][1], edgecolor="white", label="accuracy")
    ax.bar(seen / bins, count[seen] / count.sum(), 1 / bins, align="edge", color="0.6", alpha=0.6,
           label="share of the rows")
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="calibrated")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="confidence", ylabel="accuracy", title=title)
    ax.legend(loc="upper left", fontsize=8)
    return _finish(fig, path)
