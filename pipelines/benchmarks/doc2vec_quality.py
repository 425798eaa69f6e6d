"""Doc2Vec quality and inference speed: PV-DM, PV-DBOW and their concatenation + logistic regression.

Datasets: BBC News (stratified 80/20 split, seed 0) and TREC-6 (official 5,452 / 500 split).
For each representation the pipeline is ``representation -> StandardScaler -> LogisticRegression``;
training documents get their trained paragraph vectors (``fit_transform``), test documents
inferred ones (``transform``). A TF-IDF pipeline is measured alongside for context.

Inference speed is reported as documents per second and as a ratio to gensim's own
``Doc2Vec.infer_vector`` on the same model and documents, measured in the same run (embedkit
reseeds per document for cross-process determinism; the ratio shows what that costs).

Run by hand (CPU-heavy, minutes):

    PYTHONPATH=. python pipelines/benchmarks/doc2vec_quality.py
    PYTHONPATH=. python pipelines/benchmarks/doc2vec_quality.py --datasets trec --epochs 10
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from embedkit import Doc2VecEmbedder, TfidfEmbedder, load_dataset


def split(name: str):
    df = load_dataset(name, quick=False)
    if "split" in df:
        train, test = df[df.split == "train"], df[df.split == "test"]
    else:
        train, test = train_test_split(df, test_size=0.2, stratify=df.label, random_state=0)
    return (train.text.tolist(), train.label.to_numpy(), test.text.tolist(), test.label.to_numpy())


def representations(args):
    common = dict(vector_size=args.vector_size, epochs=args.epochs, min_count=args.min_count,
                  window=args.window, random_state=0)
    dm = Doc2VecEmbedder(dm=1, **common)
    dbow = Doc2VecEmbedder(dm=0, **common)
    return {
        "PV-DM": dm,
        "PV-DBOW": dbow,
        "PV-DM + PV-DBOW": FeatureUnion([("dm", dm), ("dbow", dbow)]),
        "TF-IDF (context)": TfidfEmbedder(sublinear_tf=True),
    }


def infer_speed(emb: Doc2VecEmbedder, docs: list[str]) -> tuple[float, float]:
    """(embedkit docs/s, gensim infer_vector docs/s) on the same fitted model and docs."""
    from embedkit.documents import Tokenizer

    t0 = time.perf_counter()
    emb.transform(docs)
    ours = len(docs) / (time.perf_counter() - t0)
    tokens = Tokenizer(lowercase=emb.lowercase).tokenize_all(docs)
    t0 = time.perf_counter()
    for words in tokens:
        emb.model_.infer_vector(words, epochs=emb.epochs)
    peer = len(docs) / (time.perf_counter() - t0)
    return ours, peer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["bbc-news", "trec"])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--vector-size", type=int, default=100)
    parser.add_argument("--min-count", type=int, default=2)
    parser.add_argument("--window", type=int, default=5)
    args = parser.parse_args()
    # one BLAS thread: on a shared machine, multi-threaded BLAS spins and makes the logistic
    # regression tens of times slower; Doc2Vec itself runs with workers=1
    threadpool_limits(1)
    print(f"settings: vector_size={args.vector_size} epochs={args.epochs} "
          f"min_count={args.min_count} window={args.window}; workers=1")
    rows = []
    for name in args.datasets:
        Xtr, ytr, Xte, yte = split(name)
        print(f"\n{name}: {len(Xtr)} train / {len(Xte)} test")
        parts = {}
        for label, rep in representations(args).items():
            pipe = make_pipeline(rep, StandardScaler(with_mean=not label.startswith("TF")),
                                 LogisticRegression(max_iter=3000))
            t0 = time.perf_counter()
            pipe.fit(Xtr, ytr)
            fit_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            acc = float((pipe.predict(Xte) == yte).mean())
            pred_s = time.perf_counter() - t0
            rows.append((name, label, acc, fit_s, pred_s))
            print(f"  {label:<18} accuracy {acc:.3f}   fit {fit_s:6.1f}s   predict {pred_s:5.1f}s",
                  flush=True)
            parts[label] = pipe[0]
        for label in ("PV-DM", "PV-DBOW"):
            ours, peer = infer_speed(parts[label], Xte)
            print(f"  {label} inference: {ours:,.0f} docs/s; gensim infer_vector {peer:,.0f} docs/s "
                  f"(ratio embedkit/gensim {ours / peer:.2f})")
    print("\n| dataset | representation | accuracy |\n|---|---|---|")
    for name, label, acc, *_ in rows:
        print(f"| {name} | {label} | {acc:.3f} |")


if __name__ == "__main__":
    main()
