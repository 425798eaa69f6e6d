"""What ``dtype="int8"`` (ONNX Runtime dynamic quantization) costs: cosine and accuracy.

MiniLM vectors in float32 (the default) and int8, each followed by a logistic regression:
TREC-6 on its official train/test split, BBC News on a stratified 80/20 holdout (seed 0).
Prints the accuracy of both, the change, the cosine between the two vectors of each document
and the encoding time ratio measured in the same run.

    PYTHONPATH=. python pipelines/benchmarks/int8_accuracy.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--datasets", default="trec,bbc")
    args = parser.parse_args(argv)

    import torch
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    from embedkit import TransformerEmbedder, load_dataset

    torch.set_num_threads(args.threads)
    trec = load_dataset("trec")
    bbc = load_dataset("bbc-news")
    bbc_train, bbc_test = train_test_split(bbc, test_size=0.2, stratify=bbc.label, random_state=0)
    tasks = {"trec": (trec[trec.split == "train"], trec[trec.split == "test"]),
             "bbc": (bbc_train, bbc_test)}
    models = {dtype: TransformerEmbedder(dtype=dtype).fit(["x"]) for dtype in ("float32", "int8")}
    for name in args.datasets.split(","):
        train, test = tasks[name]
        texts = list(train.text) + list(test.text)
        vectors, seconds = {}, {}
        for dtype, model in models.items():
            start = time.perf_counter()
            vectors[dtype] = model.transform(texts)
            seconds[dtype] = time.perf_counter() - start
        a, b = vectors["float32"], vectors["int8"]
        cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        scores = {}
        for dtype, x in vectors.items():
            clf = LogisticRegression(max_iter=3000).fit(x[: len(train)], train.label)
            scores[dtype] = clf.score(x[len(train):], test.label)
        print(f"{name}: {len(train)} train / {len(test)} test; accuracy float32 "
              f"{scores['float32']:.4f}, int8 {scores['int8']:.4f} "
              f"({100 * (scores['int8'] - scores['float32']):+.1f} points); cosine int8 vs float32 "
              f"min {cos.min():.4f} mean {cos.mean():.4f}; int8 encoding "
              f"{seconds['float32'] / seconds['int8']:.2f}x float32's speed")


if __name__ == "__main__":
    main()
