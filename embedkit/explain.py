"""What a fitted pipeline attends to: attention weights per token, read off a whole Pipeline.

A head with attention (`AttentionClassifier`, `RNNClassifier(pooling="attention")`,
`SelfAttentionClassifier`) has ``attention_weights(X)``, but ``X`` there is the features, not
the text. `attention_weights` runs the pipeline's representation steps, then the head, and
hands back each document's tokens, weights and which tokens had no vector, ready for
`embedkit.plots.attention_heatmap`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["TokenAttention", "attention_weights"]


class TokenAttention(NamedTuple):
    """One document's attention: ``weights[i]`` is the head's weight on ``tokens[i]``.

    ``unknown[i]`` is True for a token the representation had no vector for: under
    ``oov="skip"`` the head never saw it (weight 0, put back here so the text reads whole);
    under ``"unk"`` / ``"zero"`` it saw the shared unknown vector. Tokens after the
    representation's ``max_length`` are not listed.
    """

    tokens: list[str]
    weights: np.ndarray
    unknown: np.ndarray


def attention_weights(pipeline, X) -> list[TokenAttention]:
    """Tokens and attention weights of every document, through a fitted Pipeline.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline
        Fitted; its last step a head with ``attention_weights`` and the steps before it
        producing ``"sequence"`` or ``"ids"`` features that carry their tokens (every embedkit
        representation with ``output="sequence"`` or ``"ids"`` does).
    X : list of str
        Documents.

    Returns
    -------
    list of TokenAttention
        One per document: ``tokens``, ``weights`` (non-negative, summing to one over the tokens
        the head saw) and ``unknown`` (bool per token).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from embedkit import AttentionClassifier, GloveEmbedder
    >>> pipe = make_pipeline(GloveEmbedder(output="sequence"), AttentionClassifier(epochs=2))
    >>> pipe = pipe.fit(["a fine film", "a dull film"] * 10, [1, 0] * 10)
    >>> attention_weights(pipe, ["a fine qwzx film"])[0].unknown.tolist()
    [False, False, True, False]
    """
    from sklearn.pipeline import Pipeline

    from .data.documents import validate_documents
    from .representations.static import StaticEmbedder

    if not isinstance(pipeline, Pipeline) or len(pipeline.steps) < 2:
        raise TypeError("attention_weights needs a fitted sklearn Pipeline of a representation "
                        f"and a head; got {type(pipeline).__name__}. For a head alone call "
                        "head.attention_weights(features, return_tokens=True).")
    head = pipeline[-1]
    if not hasattr(head, "attention_weights"):
        raise TypeError(
            f"the pipeline's head {type(head).__name__} has no attention weights; use "
            "AttentionClassifier, RNNClassifier(pooling='attention') or SelfAttentionClassifier.")
    docs = validate_documents(X)
    features = pipeline[:-1].transform(docs)
    pairs = head.attention_weights(features, return_tokens=True)
    rep = next((step for _, step in reversed(pipeline.steps[:-1])
                if isinstance(step, StaticEmbedder)), None)
    if rep is None:
        return [TokenAttention(list(t), np.asarray(w, dtype=np.float32),
                               np.zeros(len(t), dtype=bool)) for t, w in pairs]
    return [_with_unknowns(rep, doc, list(t), np.asarray(w, dtype=np.float32))
            for doc, (t, w) in zip(docs, pairs, strict=True)]


def _with_unknowns(rep, doc: str, seen: list[str], weights: np.ndarray) -> TokenAttention:
    """The document's tokens in order, up to the last one the head saw, with the ones the
    representation dropped (``oov="skip"``) put back at weight 0, and unknown ones marked."""
    every = rep.tokenizer_.tokenize_all([doc])[0]
    _, found = rep.lookup(every)
    policy = rep._oov_policy()
    tokens, out, unknown = [], [], []
    i = 0  # next token the head saw
    for token, known in zip(every, found.tolist(), strict=True):
        if i == len(seen):
            break
        if not known and policy == "skip":
            tokens.append(token), out.append(0.0), unknown.append(True)
            continue
        tokens.append(token), out.append(float(weights[i])), unknown.append(not known)
        i += 1
    return TokenAttention(tokens, np.asarray(out, dtype=np.float32), np.asarray(unknown, dtype=bool))
