"""Doc2Vec quality and inference speed: PV-DM, PV-DBOW and their concatenation + logistic regression.

Datasets: BBC News (stratified 80/20 split, seed 0) and TREC-6 (official 5,452 / 500 split).
Each representation is fitted once: training documents get their trained paragraph vectors
(``fit_transform``), test documents inferred ones (``transform``); then
``StandardScaler -> LogisticRegression`` is trained on them. The concatenation is the column
stack of the PV-DM and PV-DBOW features, which is exactly what
``FeatureUnion([("dm", Doc2VecEmbedder(dm=1)), ("dbow", Doc2VecEmbedder(dm=0))])`` returns
(asserted in tests/test_doc2vec.py), without training both models a second time.
TF-IDF + logistic regression is measured alongside for context.

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
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from embedkit import Doc2VecEmbedder, TfidfEmbedder, load_dataset
from embedkit.data.documents import Tokenizer


def split(name: str):
    df = load_dataset(name, quick=False)
    if "split" in df:
        train, test = df[df.split == "train"], df[df.split == "test"]
    else:
        train, test = train_test_split(df, test_size=0.2, stratify=df.label, random_state=0)
    return (train.text.tolist(), train.label.to_numpy(), test.text.tolist(), test.label.to_numpy())


def accuracy(Ztr, ytr, Zte, yte, scale=True) -> float:
    clf = make_pipeline(StandardScaler(with_mean=scale), LogisticRegression(max_iter=3000))
    return float((clf.fit(Ztr, ytr).predict(Zte) == yte).mean())


def infer_speed(emb: Doc2VecEmbedder, docs: list[str]) -> tuple[float, float]:
    """(embedkit docs/s, gensim infer_vector docs/s) on the same fitted model and docs."""
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
    common = dict(vector_size=args.vector_size, epochs=args.epochs, min_count=args.min_count,
                  window=args.window, random_state=0)
    rows = []
    for name in args.datasets:
        Xtr, ytr, Xte, yte = split(name)
        print(f"\n{name}: {len(Xtr)} train / {len(Xte)} test", flush=True)
        feats = {}
        for label, dm in (("PV-DM", 1), ("PV-DBOW", 0)):
            emb = Doc2VecEmbedder(dm=dm, **common)
            t0 = time.perf_counter()
            Ztr = emb.fit_transform(Xtr)
            fit_s = time.perf_counter() - t0
            ours, peer = infer_speed(emb, Xte)
            Zte = emb.transform(Xte)
            feats[label] = (Ztr, Zte)
            acc = accuracy(Ztr, ytr, Zte, yte)
            rows.append((name, label, acc))
            print(f"  {label:<16} accuracy {acc:.3f}  train {fit_s:6.1f}s  inference {ours:,.0f} "
                  f"docs/s (gensim infer_vector {peer:,.0f} docs/s, ratio {ours / peer:.2f})",
                  flush=True)
        Ztr = np.hstack([feats["PV-DM"][0], feats["PV-DBOW"][0]])
        Zte = np.hstack([feats["PV-DM"][1], feats["PV-DBOW"][1]])
        rows.append((name, "PV-DM + PV-DBOW", accuracy(Ztr, ytr, Zte, yte)))
        tfidf = TfidfEmbedder(sublinear_tf=True)
        rows.append((name, "TF-IDF (context)",
                     accuracy(tfidf.fit_transform(Xtr), ytr, tfidf.transform(Xte), yte, scale=False)))
        for row in rows[-2:]:
            print(f"  {row[1]:<16} accuracy {row[2]:.3f}", flush=True)
    print("\n| dataset | representation | accuracy |\n|---|---|---|")
    for name, label, acc in rows:
        print(f"| {name} | {label} | {acc:.3f} |")


if __name__ == "__main__":
    main()
