"""What every chart shares: one colour per representation family, the names of metrics, and a
figure drawn on its own Agg canvas."""

from __future__ import annotations

import re
from pathlib import Path

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
    """An empty figure of that size in inches, on its own Agg canvas (no pyplot)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("plots need matplotlib: `pip install 'embedkit[plots]'`.") from None
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def saved(fig, path):
    """The figure, written to ``path`` first where one is given."""
    if path is not None:
        fig.savefig(Path(path), dpi=120)
    return fig

