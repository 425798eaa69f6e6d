"""Neural heads: scikit-learn estimators over PyTorch modules, trained with skorch."""

from .attention import AttentionClassifier, AttentionRegressor
from .conv import ConvClassifier, ConvRegressor
from .ensemble import EnsembleClassifier
from .finetune import TransformerClassifier, TransformerRegressor
from .linear import LogisticRegressionHead
from .mlp import MLPClassifier, MLPRegressor
from .nblr import NBLogisticRegression
from .rnn import RNNClassifier, RNNRegressor
from .selfattention import SelfAttentionClassifier, SelfAttentionRegressor
from .setfit import SetFitClassifier
from .sgd import LinearSGDClassifier, LinearSGDRegressor

__all__ = ["MLPClassifier", "MLPRegressor", "ConvClassifier", "ConvRegressor", "RNNClassifier",
           "RNNRegressor", "AttentionClassifier", "AttentionRegressor", "SelfAttentionClassifier",
           "SelfAttentionRegressor", "TransformerClassifier", "TransformerRegressor",
           "EnsembleClassifier", "SetFitClassifier", "LogisticRegressionHead",
           "LinearSGDClassifier", "LinearSGDRegressor", "NBLogisticRegression"]
