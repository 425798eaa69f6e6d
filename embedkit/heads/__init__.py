"""Neural heads: scikit-learn estimators over PyTorch modules, trained with skorch."""

from .finetune import TransformerClassifier, TransformerRegressor
from .mlp import MLPClassifier, MLPRegressor

__all__ = ["MLPClassifier", "MLPRegressor", "TransformerClassifier", "TransformerRegressor"]
