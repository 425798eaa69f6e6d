"""Text representations: scikit-learn transformers from raw documents to features."""

from .doc2vec import Doc2VecEmbedder
from .tfidf import TfidfEmbedder
from .tokens import TokenIndexer
from .transformer import TransformerEmbedder

__all__ = ["TfidfEmbedder", "Doc2VecEmbedder", "TokenIndexer", "TransformerEmbedder"]
