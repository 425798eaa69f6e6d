"""What the skip-gram defaults of `word2vec` / `fasttext` cost and buy, against CBOW.

`embedkit compare`'s default run trains Word2Vec, FastText and Doc2Vec on every fold; those
gensim trainings are most of its CPU seconds. The registry trains skip-gram (``sg=1``). This
script fits each registry entry with ``sg=1`` and with ``sg=0`` (CBOW, cheaper per word) plus
the registry's ``logreg`` head on the accuracy suite's splits, one gensim worker, beside the
suite's plain TF-IDF + LR and plain MiniLM + LR baselines on the same split, and prints test
accuracy and fit seconds:

    OMP_NUM_THREADS=1 PYTHONPATH=. python pipelines/benchmarks/skipgram_cost.py --datasets bbc-news trec

Seconds are wall-clock on whatever machine runs it: compare them within one run only.
"""

from __future__ import annotations

import argparse


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["bbc-news", "trec"])
    parser.add_argument("--representations", nargs="+", default=["fasttext", "word2vec"])
    args = parser.parse_args(argv)

    from sklearn.pipeline import make_pipeline

    from embedkit import registry
    from embedkit.data.datasets import load_dataset
    from pipelines.benchmarks import accuracy_suite as suite

    print(f"{'dataset':16s} {'pipeline':28s} {'accuracy':>9s} {'fit s':>7s}")
    for name in args.datasets:
        train, test, _ = suite.split(load_dataset(name))
        baselines = suite.baselines()
        rows = {base: baselines[base] for base in (suite.TFIDF, suite.MINILM)}
        for rep in args.representations:
            for sg in (1, 0):
                features = registry.REPRESENTATIONS[rep].factory().set_params(sg=sg, workers=1)
                rows[f"{rep} sg={sg} + logreg"] = make_pipeline(
                    features, registry.HEADS["logreg"].factory())
        for label, pipeline in rows.items():
            scores = suite.score_pipeline(pipeline, train, test)
            print(f"{name:16s} {label:28s} {scores['accuracy']:9.3f} {scores['fit_seconds']:7.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
