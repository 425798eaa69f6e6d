"""What the skip-gram defaults of `word2vec` / `fasttext` cost and buy, against CBOW.

`embedkit compare`'s default run trains Word2Vec, FastText and Doc2Vec on every fold; those
gensim trainings are most of its CPU seconds. The registry trains skip-gram (``sg=1``). This
script fits each registry entry with ``sg=1`` and with ``sg=0`` (CBOW, cheaper per word) plus
the registry's ``logreg`` head on the accuracy suite's splits, one gensim worker, and prints
test accuracy and fit seconds:

    OMP_NUM_THREADS=1 PYTHONPATH=. python pipelines/benchmarks/skipgram_cost.py --datasets bbc-news trec

Seconds are wall-clock on whatever machine runs it: compare them within one run only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["bbc-news", "trec"])
    parser.add_argument("--representations", nargs="+", default=["fasttext", "word2vec"])
    args = parser.parse_args(argv)

    from sklearn.pipeline import make_pipeline

    from embedkit import registry
    from embedkit.datasets import load_dataset
    from pipelines.benchmarks.accuracy_suite import split

    print(f"{'dataset':16s} {'representation':14s} {'sg':>3s} {'accuracy':>9s} {'fit s':>7s}")
    for name in args.datasets:
        train, test, _ = split(load_dataset(name))
        for rep in args.representations:
            for sg in (1, 0):
                features = registry.REPRESENTATIONS[rep].factory().set_params(sg=sg, workers=1)
                pipe = make_pipeline(features, registry.HEADS["logreg"].factory())
                start = time.perf_counter()
                pipe.fit(train.text.tolist(), train.label.to_numpy())
                fit_s = time.perf_counter() - start
                accuracy = float(np.mean(pipe.predict(test.text.tolist()) == test.label.to_numpy()))
                print(f"{name:16s} {rep:14s} {sg:3d} {accuracy:9.3f} {fit_s:7.1f}", flush=True)


if __name__ == "__main__":
    main()
