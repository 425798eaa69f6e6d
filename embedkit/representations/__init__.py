"""Text representations: scikit-learn transformers from raw documents to features."""

from .fasttext import FastTextEmbedder
from .glove import GloveEmbedder
from .tfidf import TfidfEmbedder
from .word2vec import Word2VecEmbedder

__all__ = ["TfidfEmbedder", "Word2VecEmbedder", "FastTextEmbedder", "GloveEmbedder"]
