"""Word2Vec / FastText training through the embedkit embedders vs raw gensim with the same
parameters, seed and corpus (BBC News). Run by hand:

    PYTHONPATH=. python pipelines/benchmarks/bench_gensim_overhead.py [repeats]

Raw gensim gets the documents tokenized by the same tokenizer (a user must tokenize too), so the
difference is embedkit's own work: validation, fit statistics (counts, IDF, fit-vocabulary matrix).
Runs alternate and the minimum of each is compared (target: overhead <= 5%).
"""

from __future__ import annotations

import sys
import time

import numpy as np


def main(repeats: int = 3) -> None:
    from gensim.models import FastText, Word2Vec

    from embedkit import FastTextEmbedder, Word2VecEmbedder
    from embedkit.data.datasets import load_dataset
    from embedkit.data.documents import Tokenizer

    docs = load_dataset("bbc-news")["text"].tolist()
    params = dict(vector_size=100, window=5, min_count=2, epochs=2, workers=1)
    cases = [
        ("Word2Vec", Word2Vec, lambda: Word2VecEmbedder(**params, random_state=0)),
        ("FastText", FastText, lambda: FastTextEmbedder(**params, bucket=200_000, random_state=0)),
    ]
    print(f"BBC News {len(docs)} docs; {params}")
    for name, gensim_cls, make in cases:
        raw_t, ours_t = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            tokens = Tokenizer().tokenize_all(docs)
            model = gensim_cls(sentences=tokens, seed=0, **params, **(
                {"bucket": 200_000} if name == "FastText" else {}))
            raw_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            emb = make().fit(docs)
            ours_t.append(time.perf_counter() - t)
        same = np.allclose(model.wv["government"], emb.lookup(["government"])[0][0])
        print(f"{name}: raw gensim {min(raw_t):.2f} s, embedder {min(ours_t):.2f} s -> overhead "
              f"{min(ours_t) / min(raw_t) - 1:+.1%} (same vectors: {same}); all runs raw "
              f"{[round(x, 2) for x in raw_t]}, embedder {[round(x, 2) for x in ours_t]}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
