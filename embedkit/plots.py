"""Charts for reports: comparison bars (and, from the heads, attention heatmaps).

matplotlib is imported inside each function with the non-interactive Agg backend, so these
work on servers and in CI.
"""

from __future__ import annotations

from pathlib import Path


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
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
