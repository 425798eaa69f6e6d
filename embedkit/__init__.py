"""embedkit: every text representation of an NLP course as a scikit-learn component.

Public names are resolved lazily, so ``import embedkit`` does not import torch, gensim or
transformers; ``from embedkit import GloveEmbedder`` imports just what that class needs.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> module that defines it
EXPORTS = {
    "Sequences": "embedkit.sequences",
    "TokenIds": "embedkit.sequences",
    "Tokenizer": "embedkit.data.documents",
    "validate_documents": "embedkit.data.documents",
    "load_dataset": "embedkit.data.datasets",
    **dict.fromkeys(["load_texts", "load_table"], "embedkit.data.reading"),
    "list_datasets": "embedkit.data.datasets",
    "TfidfEmbedder": "embedkit.representations.tfidf",
    "Doc2VecEmbedder": "embedkit.representations.doc2vec",
    "TokenIndexer": "embedkit.representations.tokens",
    "TransformerEmbedder": "embedkit.representations.transformer",
    "DistilledEmbedder": "embedkit.representations.distilled",
    "Word2VecEmbedder": "embedkit.representations.word2vec",
    "FastTextEmbedder": "embedkit.representations.fasttext",
    "GloveEmbedder": "embedkit.representations.glove",
    **dict.fromkeys(["WordVectors", "load_word_vectors", "evaluate_analogies",
                     "evaluate_similarity"], "embedkit.vectors"),
    "MLPClassifier": "embedkit.heads.mlp",
    "MLPRegressor": "embedkit.heads.mlp",
    "ConvClassifier": "embedkit.heads.conv",
    "ConvRegressor": "embedkit.heads.conv",
    "RNNClassifier": "embedkit.heads.rnn",
    "RNNRegressor": "embedkit.heads.rnn",
    "AttentionClassifier": "embedkit.heads.attention",
    "AttentionRegressor": "embedkit.heads.attention",
    "SelfAttentionClassifier": "embedkit.heads.selfattention",
    "SelfAttentionRegressor": "embedkit.heads.selfattention",
    "attention_heatmap": "embedkit.plots",
    **dict.fromkeys(["attention_weights", "TokenAttention"], "embedkit.explain"),
    "history_chart": "embedkit.plots",
    **dict.fromkeys(["extract_features", "write_parquet", "dask_backend"], "embedkit.distributed"),
    "embed_file": "embedkit.streaming",
    "predict_file": "embedkit.predicting",
    **dict.fromkeys(["save", "load"], "embedkit.storage.persist"),
    "TransformerClassifier": "embedkit.heads.finetune",
    "TransformerRegressor": "embedkit.heads.finetune",
    "EnsembleClassifier": "embedkit.heads.ensemble",
    "SetFitClassifier": "embedkit.heads.setfit",
    "LogisticRegressionHead": "embedkit.heads.linear",
    "NBLogisticRegression": "embedkit.heads.nblr",
    **dict.fromkeys(["LinearSGDClassifier", "LinearSGDRegressor"], "embedkit.heads.sgd"),
    "TemperatureScaled": "embedkit.heads.calibration",
    **dict.fromkeys(["tune", "Tuner"], "embedkit.tuning"),
    "TargetSet": "embedkit.tuning.targets",
    **dict.fromkeys(["ColumnRoles", "infer_columns"], "embedkit.data.columns"),
    "TableEmbedder": "embedkit.representations.table",
}

__all__ = sorted(EXPORTS)


def __getattr__(name: str):
    module = EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'embedkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
