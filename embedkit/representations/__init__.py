"""Text representations: scikit-learn transformers from raw documents to features."""

from .distilled import DistilledEmbedder
from .doc2vec import Doc2VecEmbedder
from .fasttext import FastTextEmbedder
from .glove import GloveEmbedder
from .tfidf import TfidfEmbedder
from .tokens import TokenIndexer
from .transformer import TransformerEmbedder
from .word2vec import Word2VecEmbedder

__all__ = ["TfidfEmbedder", "Word2VecEmbedder", "FastTextEmbedder", "GloveEmbedder",
           "Doc2VecEmbedder", "TokenIndexer", "TransformerEmbedder",
           "DistilledEmbedder"]
