"""Text representations: scikit-learn transformers from raw documents to features."""

from .tfidf import TfidfEmbedder
from .transformer import TransformerEmbedder

__all__ = ["TfidfEmbedder", "TransformerEmbedder"]
