"""The representations and heads `embedkit compare` can pair, as plain editable Python.

Each registry entry is a zero-argument factory plus the input form it produces or needs:

* a representation produces ``"pooled"`` (one vector per document), ``"sequence"`` (one vector
  per token) or ``"ids"`` (token ids), or ``"raw"`` (passthrough: the head reads text itself);
* a head lists the forms it accepts.

Add your own by adding an entry; `compatible` pairs only steps that fit together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    factory: Callable[[], object]
    forms: tuple[str, ...]
    about: str


def _tfidf():
    from embedkit import TfidfEmbedder

    return TfidfEmbedder(sublinear_tf=True, min_df=2, max_features=20000)


def _lsa():
    from embedkit import TfidfEmbedder

    return TfidfEmbedder(sublinear_tf=True, min_df=2, n_components=200)


def _bow():
    from embedkit import TfidfEmbedder

    return TfidfEmbedder(weighting="count", min_df=2)


def _doc2vec():
    from embedkit import Doc2VecEmbedder

    return Doc2VecEmbedder(dm=0, vector_size=100, epochs=20, min_count=2, cache="memory")


def _learned():
    from embedkit import TokenIndexer

    return TokenIndexer(min_count=2, max_length=400)


def _word2vec():
    from embedkit import Word2VecEmbedder

    return Word2VecEmbedder(sg=1, vector_size=100, epochs=5, min_count=2, cache="memory")


def _fasttext():
    from embedkit import FastTextEmbedder

    return FastTextEmbedder(sg=1, vector_size=100, epochs=5, min_count=2, cache="memory")


def _glove():
    from embedkit import GloveEmbedder

    return GloveEmbedder(cache="memory")


def _glove_sif():
    from embedkit import GloveEmbedder

    return GloveEmbedder(pooling="sif", cache="memory")


def _glove_seq():
    from embedkit import GloveEmbedder

    return GloveEmbedder(output="sequence", max_length=256, cache="memory")


def _minilm():
    from embedkit import TransformerEmbedder

    return TransformerEmbedder(max_length=256, cache="memory")


def _minilm_tokens():
    from embedkit import TransformerEmbedder

    return TransformerEmbedder(output="sequence", max_length=128, cache="memory")


def _mlp():
    from embedkit import MLPClassifier

    return MLPClassifier(hidden_layer_sizes=(128,), epochs=10)


def _linear():
    from embedkit import MLPClassifier

    return MLPClassifier(hidden_layer_sizes=(), epochs=30, lr=3e-3)


def _conv():
    from embedkit import ConvClassifier

    return ConvClassifier(kernel_sizes=(2, 3, 4), filters=64, epochs=10)


def _rnn():
    from embedkit import RNNClassifier

    return RNNClassifier(cell="lstm", bidirectional=True, pooling="max", epochs=10)


def _gru():
    from embedkit import RNNClassifier

    return RNNClassifier(cell="gru", pooling="last", epochs=10)


def _attention():
    from embedkit import AttentionClassifier

    return AttentionClassifier(epochs=10)


def _selfattention():
    from embedkit import SelfAttentionClassifier

    return SelfAttentionClassifier(num_layers=2, epochs=10)


def _finetune():
    from embedkit import TransformerClassifier

    return TransformerClassifier(fine_tune="full", epochs=2, max_length=128)


def _passthrough():
    return "passthrough"


def _logreg():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # scaling matters for vectors trained on small corpora (small, uneven norms); with_mean=False
    # keeps sparse TF-IDF sparse
    return make_pipeline(StandardScaler(with_mean=False), LogisticRegression(max_iter=2000))


REPRESENTATIONS: dict[str, Entry] = {
    "tfidf": Entry(_tfidf, ("pooled",), "TF-IDF over words (sublinear tf, min_df=2, 20k terms), sparse"),
    "bow": Entry(_bow, ("pooled",), "bag-of-words counts (min_df=2), sparse"),
    "lsa": Entry(_lsa, ("pooled",), "TF-IDF reduced to 200 dense dims by truncated SVD"),
    "word2vec": Entry(_word2vec, ("pooled",), "skip-gram Word2Vec trained on the fold, mean-pooled"),
    "fasttext": Entry(_fasttext, ("pooled",), "skip-gram FastText (char 3-6 grams) trained on the fold, mean-pooled"),
    "glove": Entry(_glove, ("pooled",), "pretrained GloVe 6B 50d, mean-pooled"),
    "glove-sif": Entry(_glove_sif, ("pooled",), "pretrained GloVe 6B 50d, SIF-weighted"),
    "glove-seq": Entry(_glove_seq, ("sequence",), "pretrained GloVe 6B 50d word vectors (256 max)"),
    "doc2vec": Entry(_doc2vec, ("pooled",), "Doc2Vec PV-DBOW, 100 dims, trained on the fold"),
    "minilm": Entry(_minilm, ("pooled",), "frozen all-MiniLM-L6-v2, mean-pooled, 384 dims (cached)"),
    "minilm-tokens": Entry(_minilm_tokens, ("sequence",), "frozen MiniLM word-piece vectors (128 max)"),
    "learned": Entry(_learned, ("ids",), "token ids; the head learns its embedding from scratch"),
    "passthrough": Entry(_passthrough, ("raw",), "raw text, for heads that own their encoder"),
}

HEADS: dict[str, Entry] = {
    "mlp": Entry(_mlp, ("pooled", "sequence", "ids"), "MLP, one hidden layer of 128, 10 epochs (torch/skorch)"),
    "linear": Entry(_linear, ("pooled", "sequence", "ids"), "softmax regression trained with skorch"),
    "logreg": Entry(_logreg, ("pooled",), "StandardScaler + scikit-learn LogisticRegression"),
    "conv": Entry(_conv, ("sequence", "ids"), "Conv1D, kernels 2/3/4 x 64 filters, max over time"),
    "rnn": Entry(_rnn, ("sequence", "ids"), "bidirectional LSTM, max pooling over time"),
    "gru": Entry(_gru, ("sequence", "ids"), "GRU acceptor (last step)"),
    "attention": Entry(_attention, ("sequence", "ids"), "attention pooling with a learned query + MLP"),
    "selfattention": Entry(_selfattention, ("sequence", "ids"), "2 Transformer encoder blocks, CLS pooling"),
    "finetune": Entry(_finetune, ("raw",), "MiniLM fine-tuned end to end, 2 epochs (slow on CPU)"),
}

#: what `embedkit compare` runs when no selection is given
DEFAULT_REPRESENTATIONS = ("tfidf", "word2vec", "fasttext", "glove", "doc2vec", "minilm")
DEFAULT_HEADS = ("logreg", "mlp")
QUICK_REPRESENTATIONS = ("tfidf",)
QUICK_HEADS = ("logreg", "mlp")


def compatible(representation: str, head: str) -> bool:
    """True when the head accepts the form the representation produces."""
    return bool(set(REPRESENTATIONS[representation].forms) & set(HEADS[head].forms))


def _check_names(names, registry, what):
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ValueError(f"unknown {what} {unknown}; choose from {sorted(registry)} "
                         f"(edit pipelines/grids.py to add one).")


def pairs(representations=None, heads=None, quick: bool = False,
          experiment: str | None = None) -> list[tuple[str, str]]:
    """Compatible (representation, head) name pairs for a selection (defaults when None), or the
    pairs of a named experiment (`pipelines.experiments`)."""
    if experiment is not None:
        if representations or heads:
            raise ValueError("give either an experiment or a representation/head selection, not both.")
        from . import experiments

        chosen = experiments.load(experiment)
        _check_names([r for r, _ in chosen], REPRESENTATIONS, "representation(s)")
        _check_names([h for _, h in chosen], HEADS, "head(s)")
        bad = [p for p in chosen if not compatible(*p)]
        if bad:
            raise ValueError(f"experiment {experiment!r} pairs steps that do not fit together: {bad}.")
        return chosen
    reps = list(representations or (QUICK_REPRESENTATIONS if quick else DEFAULT_REPRESENTATIONS))
    hds = list(heads or (QUICK_HEADS if quick else DEFAULT_HEADS))
    _check_names(reps, REPRESENTATIONS, "representation(s)")
    _check_names(hds, HEADS, "head(s)")
    out = [(r, h) for r in reps for h in hds if compatible(r, h)]
    if not out:
        raise ValueError(f"no head in {hds} accepts what {reps} produce; see `embedkit compare --help`.")
    return out


def make_pipeline(representation: str, head: str):
    """A fresh `Pipeline([("features", ...), ("head", ...)])` for two registry names."""
    from sklearn.pipeline import Pipeline

    features = REPRESENTATIONS[representation].factory()
    return Pipeline([("features", features), ("head", HEADS[head].factory())])
