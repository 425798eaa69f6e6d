"""Charts: comparison bars and score-versus-time for reports, attention heatmaps over words,
training histories and reliability diagrams.

Every chart is a `matplotlib.figure.Figure` drawn on its own Agg canvas, without pyplot: no
global state, no open-figure leaks, works on servers and in CI, and Jupyter shows the returned
figure inline. Representation families (TF-IDF/BoW/LSA, Word2Vec, FastText, GloVe, Doc2Vec,
Transformer encoders, learned embeddings, fine-tuned Transformers, baselines) have one colour
each, from `FAMILIES`, in every chart the package draws.

The charts of a comparison's rows (`score_chart`, `time_chart`) and those of one model
(`attention_heatmap`, `history_chart`, `reliability_diagram`) live in two rooms of this package
and share its style (`FAMILIES`, `family_colour`, `metric_name`).
"""

from __future__ import annotations

from ._models import attention_heatmap, history_chart, reliability_diagram
from ._results import NAMED_POINTS as NAMED_POINTS  # these three: for the report and the tests
from ._results import pipeline_labels as pipeline_labels
from ._results import reference_rows, score_chart, time_chart
from ._style import FAMILIES, family_colour, metric_name, representation_family
from ._style import figure as figure

__all__ = [
    "FAMILIES",
    "attention_heatmap",
    "family_colour",
    "history_chart",
    "metric_name",
    "reference_rows",
    "reliability_diagram",
    "representation_family",
    "score_chart",
    "time_chart",
]
