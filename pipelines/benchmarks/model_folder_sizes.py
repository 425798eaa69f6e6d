"""Size of the model folder `embedkit.save` writes, per registry pair, and the round trip.

Fits each pair on a TREC slice (``--per-class`` questions of each of the 6 classes; 2 epochs
for the neural heads), saves it, loads it back in this process and checks ``predict_proba`` is
bit-identical. Packaged resources (GloVe 400k x 50, MiniLM) are stored by name, so their
pipelines stay small; what remains is fitted state (e.g. the training vocabulary's GloVe rows,
FastText's n-gram buckets, a fine-tuned encoder's weights).

Run from the checkout: ``python -m pipelines.benchmarks.model_folder_sizes [--pairs glove:logreg ...]``
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

DEFAULT = ("tfidf:logreg", "nbsvm:logreg-cv", "lsa:mlp", "word2vec:logreg", "fasttext:logreg",
           "glove:logreg", "glove-seq:rnn", "doc2vec:logreg", "minilm:logreg",
           "minilm-tokens:attention", "learned:selfattention", "passthrough:finetune-short")


def main() -> None:
    from embedkit import load, save
    from embedkit.configure import make_pipeline
    from embedkit.data.datasets import load_dataset
    from embedkit.storage.persist import folder_size

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", nargs="*", default=list(DEFAULT))
    parser.add_argument("--per-class", type=int, default=20)
    args = parser.parse_args()
    df = load_dataset("trec")
    df = df.groupby("label", group_keys=False)[["text", "label"]].apply(
        lambda g: g.iloc[: args.per_class])
    X, y = df.text.tolist(), df.label.to_numpy()
    tmp = tempfile.mkdtemp()
    print(f"{'pair':32s} {'folder':>10s} {'identical':>9s} {'save s':>7s} {'load s':>7s}")
    for pair in args.pairs:
        rep, head = pair.split(":")
        pipe = make_pipeline(rep, head)
        if "epochs" in pipe[-1].get_params():
            pipe[-1].set_params(epochs=min(pipe[-1].epochs, 2))
        if rep == "lsa":
            pipe.set_params(features__n_components=min(50, len(X) // 2))
        pipe.fit(X, y)
        t0 = time.perf_counter()
        folder = save(pipe, f"{tmp}/{rep}+{head}")
        t1 = time.perf_counter()
        again = load(folder)
        t2 = time.perf_counter()
        same = np.array_equal(pipe.predict_proba(X), again.predict_proba(X))
        print(f"{pair:32s} {folder_size(folder) / 1e6:8.2f}MB {same!s:>9s} {t1 - t0:7.2f} "
              f"{t2 - t1:7.2f}", flush=True)


if __name__ == "__main__":
    main()
