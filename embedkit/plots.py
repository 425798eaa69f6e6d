"""Charts: comparison bars for reports, attention heatmaps over words.

matplotlib is imported inside each function with the non-interactive Agg backend, so these
work on servers and in CI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = ["score_chart", "time_chart", "attention_heatmap"]


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plots need matplotlib: `pip install 'embedkit[plots]'`.") from None
    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def score_chart(results, path, title: str = "", metric: str = "accuracy"):
    """Horizontal bars of ``<metric>_mean`` with ``<metric>_std`` error bars, one per pipeline.

    Parameters
    ----------
    results : DataFrame
        Columns ``representation``, ``head``, ``<metric>_mean``, ``<metric>_std``.
    path : str or Path
        PNG to write.
    title : str, default=""
    metric : str, default="accuracy"

    Returns
    -------
    Path of the written PNG.
    """
    plt = _pyplot()
    data = results.sort_values(f"{metric}_mean")
    labels = [f"{r} + {h}" for r, h in zip(data.representation, data["head"])]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(data) + 1.5))
    ax.barh(labels, data[f"{metric}_mean"], xerr=data[f"{metric}_std"], color="#4C72B0", capsize=3)
    low = max(0.0, float((data[f"{metric}_mean"] - data[f"{metric}_std"]).min()) - 0.05)
    ax.set_xlim(low, 1.0)
    ax.set_xlabel(metric)
    for y, v in enumerate(data[f"{metric}_mean"]):
        ax.text(v, y, f" {v:.3f}", va="center", fontsize=8)
    return _save(plt, fig, ax, path, title)


def _save(plt, fig, ax, path, title: str) -> Path:
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def time_chart(results, path, title: str = "", metric: str = "accuracy"):
    """Fit seconds (log scale) against ``<metric>_mean``, one labelled point per pipeline.

    Same arguments as `score_chart`; ``results`` also needs ``fit_seconds``. Returns the PNG's path.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    seconds = np.maximum(results["fit_seconds"].to_numpy(dtype=float), 1e-3)
    ax.errorbar(seconds, results[f"{metric}_mean"], yerr=results[f"{metric}_std"], fmt="o",
                color="#4C72B0", capsize=3)
    for x, y, r, h in zip(seconds, results[f"{metric}_mean"], results.representation, results["head"]):
        ax.annotate(f"{r} + {h}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("fit seconds per fold (log scale)")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    return _save(plt, fig, ax, path, title)


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
    >>> fig = attention_heatmap(["not", "good"], [0.7, 0.3], "attention.png")  # doctest: +SKIP
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
    for i, (w, a, u) in enumerate(zip(words, weights, unknown)):
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
