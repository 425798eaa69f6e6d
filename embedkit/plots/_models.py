"""Charts of one model: where its attention falls, how it trained, whether its probabilities
mean what they say."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._style import FAMILIES, figure, saved


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
    return saved(fig, path)
