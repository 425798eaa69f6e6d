"""Quality of the static word-vector representations (run by hand; numbers go in the issue note).

    PYTHONPATH=. python pipelines/benchmarks/static_quality.py intrinsic   # ~15 min on 2 cores
    PYTHONPATH=. python pipelines/benchmarks/static_quality.py classify    # ~20 min
    PYTHONPATH=. python pipelines/benchmarks/static_quality.py intrinsic "GloVe trained"  # one row

``intrinsic``: bundled GloVe 6B-50d, and Word2Vec / FastText / GloVe trained on WikiText-2 train
(same dimension, window, min_count, epochs where they mean the same thing): analogy accuracy on
gensim's questions-words (top-30k vocabulary), wordsim353 and simlex999 Spearman, and FastText's
nearest neighbours of misspelt words Word2Vec does not know.

``classify``: each representation + StandardScaler + LogisticRegression on BBC News (stratified
80/20 split, seed 0) and TREC-6 (official 5,452 / 500 split); accuracy table.
"""

from __future__ import annotations

import gzip
import sys
import time

import numpy as np


def wikitext_docs() -> list[str]:
    from embedkit.storage.resources import resource_path

    with gzip.open(resource_path("wikitext-2-train"), "rt", encoding="utf-8") as fh:
        lines = [ln.strip() for ln in fh]
    return [ln for ln in lines if ln and not ln.startswith("=")]


def intrinsic() -> None:
    from embedkit import FastTextEmbedder, GloveEmbedder, Word2VecEmbedder
    from embedkit.vectors import evaluate_analogies, evaluate_similarity

    docs = wikitext_docs()
    print(f"WikiText-2 train: {len(docs)} paragraphs", flush=True)
    common = dict(vector_size=100, window=5, min_count=5, epochs=5, sg=1, workers=2, random_state=0)
    models = {
        "GloVe 6B-50d (bundled)": GloveEmbedder(),
        "Word2Vec skip-gram (WikiText-2)": Word2VecEmbedder(**common),
        "FastText skip-gram (WikiText-2)": FastTextEmbedder(**common, bucket=200_000),
        "GloVe trained (WikiText-2)": GloveEmbedder(train=True, vector_size=100, window=10,
                                                    min_count=5, epochs=15, random_state=0),
    }
    rows = []
    fitted = {}
    for name, emb in models.items():
        if ONLY and ONLY not in name:
            continue
        t = time.perf_counter()
        emb.fit(docs if "bundled" not in name else ["x"])
        fit_s = time.perf_counter() - t
        fitted[name] = emb
        an = evaluate_analogies(emb, restrict_vocab=30_000)
        ws = evaluate_similarity(emb, "wordsim353")
        sl = evaluate_similarity(emb, "simlex999")
        rows.append((name, len(emb.word_vectors_), an["accuracy"], an["total"], ws["spearman"],
                     ws["oov"], sl["spearman"], fit_s))
        print(f"{name}: vocab {len(emb.word_vectors_)}, analogy {an['accuracy']:.3f} "
              f"({an['total']} questions), wordsim353 {ws['spearman']:.3f} (oov {ws['oov']:.0%}), "
              f"simlex999 {sl['spearman']:.3f}, fit {fit_s:.0f}s", flush=True)
    print("\n| vectors | vocab | analogy acc (top-30k) | questions | wordsim353 Spearman | ws353 OOV "
          "| simlex999 Spearman | fit s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.3f} | {r[3]} | {r[4]:.3f} | {r[5]:.0%} | {r[6]:.3f} "
              f"| {r[7]:.0f} |")
    if ONLY:
        return
    w2v = fitted["Word2Vec skip-gram (WikiText-2)"]
    ft = fitted["FastText skip-gram (WikiText-2)"]
    print("\nMisspelt words (not in Word2Vec's vocabulary) -> FastText nearest neighbours:")
    for word in ["goverment", "musicain", "televsion", "footbal"]:
        _, found_w2v = w2v.lookup([word])
        vec, found_ft = ft.lookup([word])
        nn = ft.most_similar(vec[0], topn=5)
        print(f"  {word!r}: in Word2Vec vocab: {bool(found_w2v[0])}; FastText vector finite: "
              f"{bool(np.isfinite(vec).all() and found_ft[0])}; nearest: "
              f"{', '.join(f'{w} ({s:.2f})' for w, s in nn)}")
    glove = fitted["GloVe 6B-50d (bundled)"]
    print("\nbundled GloVe: king - man + woman ->", glove.analogy("man", "king", "woman", topn=3))


def classify() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from embedkit import FastTextEmbedder, GloveEmbedder, TfidfEmbedder, Word2VecEmbedder
    from embedkit.data.datasets import load_dataset

    bbc = load_dataset("bbc-news")
    b_tr, b_te = train_test_split(bbc, test_size=0.2, stratify=bbc["label"], random_state=0)
    trec = load_dataset("trec")
    t_tr, t_te = trec[trec.split == "train"], trec[trec.split == "test"]
    reps = {
        "TF-IDF (baseline)": lambda: TfidfEmbedder(),
        "GloVe 6B-50d mean": lambda: GloveEmbedder(),
        "GloVe 6B-50d tfidf": lambda: GloveEmbedder(pooling="tfidf"),
        "GloVe 6B-50d sif": lambda: GloveEmbedder(pooling="sif"),
        "GloVe 6B-50d max": lambda: GloveEmbedder(pooling="max"),
        "Word2Vec (fit on train, 100d)": lambda: Word2VecEmbedder(min_count=2, epochs=5, workers=2),
        "FastText (fit on train, 100d)": lambda: FastTextEmbedder(min_count=2, epochs=5, workers=2),
        "GloVe trained (fit on train, 50d)": lambda: GloveEmbedder(train=True, min_count=2, epochs=10),
    }
    print("| representation | BBC News acc | TREC-6 acc | fit+predict s |")
    print("|---|---|---|---|")
    for name, make in reps.items():
        if ONLY and ONLY not in name:
            continue
        accs = []
        t = time.perf_counter()
        for tr, te in ((b_tr, b_te), (t_tr, t_te)):
            steps = [make()]
            if "TF-IDF" not in name:
                steps.append(StandardScaler())
            pipe = make_pipeline(*steps, LogisticRegression(max_iter=3000))
            pipe.fit(tr["text"], tr["label"])
            accs.append(float((pipe.predict(te["text"]) == te["label"].to_numpy()).mean()))
        print(f"| {name} | {accs[0]:.3f} | {accs[1]:.3f} | {time.perf_counter() - t:.0f} |", flush=True)


ONLY = sys.argv[2] if len(sys.argv) > 2 else ""  # run only the rows whose name contains this

if __name__ == "__main__":
    {"intrinsic": intrinsic, "classify": classify}[sys.argv[1] if len(sys.argv) > 1 else "intrinsic"]()
