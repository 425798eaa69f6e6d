"""Fine-tuning a pretrained Transformer as a head: the estimators (`_estimator`), the torch
module and encoder freezing (`_module`), token batches (`_data`), the skorch training pieces
(`_training`) and the model-folder persistence (`_persist`)."""

from ._estimator import TransformerClassifier, TransformerRegressor

__all__ = ["TransformerClassifier", "TransformerRegressor"]
