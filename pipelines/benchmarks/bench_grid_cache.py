"""Grid search with and without the embedding cache: forward passes per document, wall time.

``GridSearchCV`` over 4 heads x 5 folds on the packaged all-MiniLM-L6-v2 representation, run
once with a disk cache (fresh folder) and once without. The MiniLM forward passes are counted
per document with `NeuralEncoder.forward_counts`; the target is one pass per unique document
with the cache, and a wall-time ratio of at least 4x. The machine may be shared: compare the
ratio, not the seconds.

    PYTHONPATH=. python pipelines/benchmarks/bench_grid_cache.py --n 200 --threads 2
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time

import numpy as np


def run(texts, y, cache, threads):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import Pipeline

    from embedkit import MLPClassifier, TransformerEmbedder
    from embedkit.representations._neural import NeuralEncoder

    heads = [LogisticRegression(C=1.0, max_iter=1000), LogisticRegression(C=10.0, max_iter=1000),
             MLPClassifier(hidden_layer_sizes=(64,), epochs=10, random_state=0),
             MLPClassifier(hidden_layer_sizes=(256,), epochs=10, random_state=0)]
    pipe = Pipeline([("features", TransformerEmbedder(num_threads=threads, device="cpu", cache=cache)),
                     ("head", heads[0])])
    search = GridSearchCV(pipe, {"head": heads}, cv=StratifiedKFold(5, shuffle=True, random_state=0))
    NeuralEncoder.forward_counts = counts = collections.Counter()
    start = time.perf_counter()
    try:
        search.fit(texts, y)
    finally:
        NeuralEncoder.forward_counts = None
    return time.perf_counter() - start, counts, search


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="TREC questions in the search")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from embedkit import load_dataset

    df = load_dataset("trec")
    df = df[df.split == "train"].sample(args.n, random_state=0)
    texts, y = df.text.tolist(), df.label.to_numpy()
    n_unique = len(set(texts))
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, cache in (("no cache", None), ("disk cache", folder)):
            wall, counts, search = run(texts, y, cache, args.threads)
            per_doc = np.array([counts[t] for t in set(texts)])
            results[name] = wall
            print(f"{name:10s}: {wall:7.1f} s  forward passes per unique document: mean "
                  f"{per_doc.mean():.2f}, max {per_doc.max()}  (total {sum(counts.values())} for "
                  f"{n_unique} documents)  best score {search.best_score_:.3f} "
                  f"({search.best_params_['head']!r})")
    print(f"wall-time ratio no cache / disk cache: {results['no cache'] / results['disk cache']:.2f}x")


if __name__ == "__main__":
    main()
