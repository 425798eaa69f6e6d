"""Word-vector utilities: nearest words, analogies, similarity, and intrinsic evaluation on the
analogy and word-similarity sets that ship with gensim.

Every function takes a fitted static embedder (`GloveEmbedder`, `Word2VecEmbedder`,
`FastTextEmbedder`) or a `WordVectors`; the work is done by gensim's ``KeyedVectors`` over the
same arrays (shared, not copied).

Examples
--------
>>> from embedkit import GloveEmbedder
>>> emb = GloveEmbedder().fit(["a"])  # doctest: +SKIP
>>> analogy(emb, "man", "king", "woman")[0][0]  # doctest: +SKIP
'queen'
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

__all__ = ["most_similar", "analogy", "similarity", "evaluate_analogies", "evaluate_similarity",
           "gensim_test_file", "SIMILARITY_SETS"]

SIMILARITY_SETS = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}


def _keyed(obj):
    from .representations._static import WordVectors

    if isinstance(obj, WordVectors):
        wv = obj
    else:
        wv = getattr(obj, "word_vectors_", None)
        if wv is None:
            raise ValueError(
                f"{type(obj).__name__} has no fitted word vectors; fit a GloveEmbedder, "
                "Word2VecEmbedder or FastTextEmbedder first (or pass a WordVectors)."
            )
    return wv.keyed_vectors()


def _lower(obj, word: str) -> str:
    return word.lower() if getattr(obj, "lowercase", False) else word


def _check_known(kv, words):
    from gensim.models.fasttext import FastTextKeyedVectors

    if isinstance(kv, FastTextKeyedVectors) and kv.bucket:
        return
    missing = [w for w in words if w not in kv.key_to_index]
    if missing:
        raise ValueError(f"not in the vocabulary: {missing}; check spelling/case or use FastText.")


def most_similar(vectors, word, topn: int = 10, exclude: Iterable[str] = ()) -> list[tuple[str, float]]:
    """The ``topn`` words nearest (cosine) to ``word`` (a str, or a vector of the model's dim).

    The query word itself and any word in ``exclude`` are left out.

    Examples
    --------
    >>> most_similar(emb, "frog", topn=3)  # doctest: +SKIP
    [('toad', 0.81...), ...]
    """
    kv = _keyed(vectors)
    exclude = {_lower(vectors, w) for w in exclude}
    if isinstance(word, str):
        word = _lower(vectors, word)
        _check_known(kv, [word])
        found = kv.most_similar(positive=[word], topn=topn + len(exclude))
    else:
        vec = np.asarray(word, dtype=np.float32).ravel()
        if vec.shape[0] != kv.vector_size:
            raise ValueError(f"mismatched dimensions: query vector has {vec.shape[0]} values, "
                             f"the vectors have {kv.vector_size}.")
        found = kv.similar_by_vector(vec, topn=topn + len(exclude))
    return [(w, float(s)) for w, s in found if w not in exclude][:topn]


def analogy(vectors, a: str, b: str, c: str, topn: int = 1) -> list[tuple[str, float]]:
    """Words ``d`` completing ``a : b :: c : d``, ranked by cosine to ``b - a + c``
    (e.g. ``analogy(emb, "man", "king", "woman")`` -> ``queen``); input words are excluded."""
    kv = _keyed(vectors)
    a, b, c = (_lower(vectors, w) for w in (a, b, c))
    _check_known(kv, [a, b, c])
    return [(w, float(s)) for w, s in kv.most_similar(positive=[b, c], negative=[a], topn=topn)]


def similarity(vectors, w1: str, w2: str) -> float:
    """Cosine similarity of two words."""
    kv = _keyed(vectors)
    w1, w2 = _lower(vectors, w1), _lower(vectors, w2)
    _check_known(kv, [w1, w2])
    return float(kv.similarity(w1, w2))


def gensim_test_file(name: str) -> Path:
    """Path of a file in gensim's bundled test data (e.g. ``"questions-words.txt"``)."""
    from gensim.test.utils import datapath

    path = Path(datapath(name))
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the installed gensim.")
    return path


def evaluate_analogies(vectors, path=None, restrict_vocab: int = 30_000) -> dict:
    """Accuracy on word analogies (default: gensim's ``questions-words.txt``, Mikolov et al.).

    Questions with a word outside the ``restrict_vocab`` most frequent words are skipped, as in
    the original ``compute-accuracy`` tool (vocabularies here are sorted by frequency).

    Returns
    -------
    dict with ``accuracy``, ``correct``, ``total`` and per-section ``sections``
    (name -> accuracy).
    """
    import logging

    kv = _keyed(vectors)
    path = gensim_test_file("questions-words.txt") if path is None else Path(path)
    log = logging.getLogger("gensim.models.keyedvectors")
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        score, sections = kv.evaluate_word_analogies(str(path), restrict_vocab=restrict_vocab)
    finally:
        log.setLevel(level)
    total = next(s for s in sections if s["section"] == "Total accuracy")
    n_ok, n_bad = len(total["correct"]), len(total["incorrect"])
    return {
        "accuracy": float(score), "correct": n_ok, "total": n_ok + n_bad,
        "sections": {s["section"]: len(s["correct"]) / max(len(s["correct"]) + len(s["incorrect"]), 1)
                     for s in sections if s["section"] != "Total accuracy"},
    }


def evaluate_similarity(vectors, dataset: str = "wordsim353", restrict_vocab: int = 300_000) -> dict:
    """Spearman / Pearson correlation with human similarity judgements.

    ``dataset`` is ``"wordsim353"``, ``"simlex999"`` (both ship with gensim) or a path to a
    tab-separated ``word1<TAB>word2<TAB>score`` file. Pairs with unknown words are skipped and
    their share reported as ``oov``.
    """
    import logging

    kv = _keyed(vectors)
    path = gensim_test_file(SIMILARITY_SETS[dataset]) if dataset in SIMILARITY_SETS else Path(dataset)
    log = logging.getLogger("gensim.models.keyedvectors")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        pearson, spearman, oov = kv.evaluate_word_pairs(str(path), restrict_vocab=restrict_vocab)
    finally:
        log.setLevel(level)
    return {"spearman": float(spearman[0]), "pearson": float(pearson[0]), "oov": float(oov) / 100.0}
