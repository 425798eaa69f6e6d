"""Neural heads: scikit-learn estimators over PyTorch modules, trained with skorch."""

from .mlp import MLPClassifier, MLPRegressor

__all__ = ["MLPClassifier", "MLPRegressor"]
