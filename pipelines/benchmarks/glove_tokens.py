"""GloVe means: embedkit's tokenizer against plain ``\\w+`` words, and the weighted poolings.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python pipelines/benchmarks/glove_tokens.py
    python pipelines/benchmarks/glove_tokens.py --datasets trec disaster-tweets

Why: the registry's ``glove + logreg`` trails the accuracy suite's plain GloVe-mean baseline
(lower-cased ``\\w+`` words, numpy mean, ``LogisticRegression(max_iter=3000)``) on two datasets
and beats it on others. This separates the representation from the head: each variant of the
packaged GloVe 6B 50d mean is scored with plain LR and with the registry's ``logreg`` head, on
the accuracy suite's splits (`accuracy_suite.split`).

Variants: ``default`` (`GloveEmbedder()`: embedkit's tokenizer, which keeps punctuation marks
and words such as ``don't`` as tokens), ``words`` (the same embedder reading lower-cased
``\\w+`` words, as the baseline does), ``tfidf`` and ``sif`` (the default tokenizer, IDF- or
SIF-weighted mean). Writes ``glove_tokens.md`` into ``--output`` (default: the results folder).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path
from unittest import mock

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout
    sys.path.insert(0, str(ROOT))

from pipelines.benchmarks import accuracy_suite as suite  # noqa: E402  (after the path)

VARIANTS = ("default", "words", "tfidf", "sif")


def embedder(variant: str):
    from embedkit import GloveEmbedder
    from embedkit.data.documents import Tokenizer
    from embedkit.representations import static

    if variant in ("tfidf", "sif"):
        return GloveEmbedder(pooling=variant)
    if variant == "default":
        return GloveEmbedder()

    class WordsGlove(GloveEmbedder):
        """GloVe mean over lower-cased ``\\w+`` words (the fitted tokenizer keeps the pattern)."""

        def _fit(self, docs, y=None):
            words = functools.partial(Tokenizer, pattern=r"\w+")
            with mock.patch.object(static, "Tokenizer", words):
                return super()._fit(docs, y)

    return WordsGlove()


def run(datasets) -> pd.DataFrame:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score

    from embedkit import load_dataset
    from embedkit.heads import LogisticRegressionHead

    rows = []
    for name in datasets:
        train, test, _ = suite.split(load_dataset(name))
        for variant in VARIANTS:
            start = time.perf_counter()
            emb = embedder(variant)
            X_train = emb.fit_transform(train["text"].tolist())
            X_test = emb.transform(test["text"].tolist())
            for head_name, head in (("plain LR", LogisticRegression(max_iter=3000)),
                                    ("logreg", LogisticRegressionHead())):
                pred = head.fit(X_train, train["label"]).predict(X_test)
                rows.append({"dataset": name, "variant": variant, "head": head_name,
                             "accuracy": accuracy_score(test["label"], pred)})
            print(f"{name:16s} {variant:8s} " + "  ".join(
                f"{r['head']} {100 * r['accuracy']:.1f}" for r in rows[-2:])
                + f"  ({time.perf_counter() - start:.0f} s)", flush=True)
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(suite.DATASETS))
    parser.add_argument("--output", default=str(ROOT / "pipelines" / "benchmarks" / "results"))
    args = parser.parse_args(argv)
    runs = run(args.datasets)
    table = (100 * runs.pivot_table(index=["head", "variant"], columns="dataset",
                                    values="accuracy", sort=False)).round(1)
    table = table[[d for d in args.datasets if d in table]]
    text = ("# GloVe means: tokenizer and pooling variants\n\nAccuracy (%), "
            "`pipelines/benchmarks/glove_tokens.py` (variants in its docstring), the accuracy "
            "suite's splits.\n\n" + table.reset_index().to_markdown(index=False) + "\n")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "glove_tokens.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
