"""Text representations: scikit-learn transformers from raw documents to features."""

from .tfidf import TfidfEmbedder

__all__ = ["TfidfEmbedder"]
