"""Which default pooled head (and TF-IDF setting) never loses to the five-line baselines?

    python pipelines/benchmarks/head_defaults.py                       # bbc-news, trec, sms-spam
    python pipelines/benchmarks/head_defaults.py --datasets trec sms-spam --train 3000 --test 1000
    python pipelines/benchmarks/head_defaults.py --data-dir DIR        # DIR/<name>.parquet frames

On a machine other jobs share, run it with one BLAS thread (``OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1``): OpenBLAS's two threads made one LogisticRegression fit 36x slower
there (busy-waiting threads without a free core), which distorts every seconds column. The
measured table and what it decided are in `pipelines/benchmarks/results/head_defaults.md`.

Each dataset is split as the accuracy suite splits it (official split, else stratified 80/20
seed 0), then sliced (stratified, seed 0) to at most ``--train`` / ``--test`` documents. Every
representation is fitted once on the training slice; each head variant is fitted on the same
features, so the columns differ only by the head. Printed: accuracy per (dataset,
representation, head) and the head's fit seconds (wall clock on whatever machine runs it;
compare within one run only). Rows are appended to ``--output`` as they finish; a rerun with
the same ``--output`` skips the rows already there.

Heads compared (issue 13, "defaults that never lose"):

* ``lr``: ``LogisticRegression(max_iter=3000)``, the plain baselines' head;
* ``scaled-lr``: ``StandardScaler(with_mean=False)`` + LogisticRegression (the old registry head);
* ``cv``: ``LogisticRegressionCV`` (the head's ``Cs``, 0.01..100, from an inner 3-fold CV on log-loss), no
  scaling;
* ``scaled-cv``: ``StandardScaler(with_mean=False)`` + the same ``LogisticRegressionCV``;
* ``auto``: `embedkit.heads.LogisticRegressionHead` (C and, for dense input, scaling chosen
  by the inner CV); on sparse input it is exactly the ``cv`` model, whose row it reuses;
* ``logreg-cv``: the registry's ``logreg-cv`` head (``LogisticRegressionCV``, C in 0.25..64 by
  inner 3-fold CV on accuracy, no scaling).

Representations: the plain baseline's ``TfidfVectorizer``, a bigram variant of the registry's
TF-IDF (``tfidf-bi``) and every default representation of the registry, built as `embedkit
compare` builds them.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout
    sys.path.insert(0, str(ROOT))


def load(name: str, data_dir: Path | None) -> pd.DataFrame:
    if data_dir is not None and (data_dir / f"{name}.parquet").exists():
        return pd.read_parquet(data_dir / f"{name}.parquet")
    from embedkit import load_dataset

    return load_dataset(name)


def split(df: pd.DataFrame, n_train: int, n_test: int, seed: int = 0):
    from sklearn.model_selection import train_test_split

    if "split" in df and set(df["split"]) >= {"train", "test"}:
        train, test = df[df["split"] == "train"], df[df["split"] == "test"]
    else:
        train, test = train_test_split(df, test_size=0.2, stratify=df["label"], random_state=seed)

    def cut(part, n):
        if len(part) <= n:
            return part
        return train_test_split(part, train_size=n, stratify=part["label"], random_state=seed)[0]

    return cut(train, n_train).reset_index(drop=True), cut(test, n_test).reset_index(drop=True)


def representations(cache: str) -> dict:
    """The registry's default representations (as `embedkit compare` builds them) beside the
    five-line TF-IDF baseline and a bigram variant of the registry's TF-IDF."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from embedkit import TfidfEmbedder
    from embedkit.registry import DEFAULT_REPRESENTATIONS, REPRESENTATIONS

    reps = {"plain-tfidf": TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
            "tfidf-bi": TfidfEmbedder(sublinear_tf=True, min_df=2, ngram_range=(1, 2))}
    for name in DEFAULT_REPRESENTATIONS:
        rep = REPRESENTATIONS[name].factory()
        if name == "minilm":  # the plain MiniLM baseline's vectors: encode once, reuse per head
            rep.set_params(cache=cache)
        reps[name] = rep
    return reps


def heads() -> dict:
    from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from embedkit.heads import LogisticRegressionHead
    from embedkit.registry import HEADS

    cv = {"Cs": LogisticRegressionHead().Cs, "cv": 3, "scoring": "neg_log_loss", "l1_ratios": (0.0,),
          "use_legacy_attributes": False, "max_iter": 3000}
    return {
        "lr": LogisticRegression(max_iter=3000),
        "scaled-lr": make_pipeline(StandardScaler(with_mean=False), LogisticRegression(max_iter=2000)),
        "cv": LogisticRegressionCV(**cv),
        "scaled-cv": make_pipeline(StandardScaler(with_mean=False), LogisticRegressionCV(**cv)),
        "auto": LogisticRegressionHead(),
        "logreg-cv": HEADS["logreg-cv"].factory(),
    }


def main(argv=None) -> None:
    from sklearn.base import clone

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["bbc-news", "trec", "sms-spam"])
    parser.add_argument("--representations", nargs="+", default=None)
    parser.add_argument("--heads", nargs="+", default=None)
    parser.add_argument("--train", type=int, default=3000)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--cache", default="disk", help="embedding cache for MiniLM")
    parser.add_argument("--output", type=Path, default=Path("head-defaults.csv"))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=FutureWarning)
    reps = representations(args.cache)
    hds = heads()
    reps = {k: v for k, v in reps.items() if args.representations is None or k in args.representations}
    hds = {k: v for k, v in hds.items() if args.heads is None or k in args.heads}
    import scipy.sparse as sp

    rows = pd.read_csv(args.output).to_dict("records") if args.output.exists() else []
    done = {(r["dataset"], r["representation"], r["head"]) for r in rows}
    for name in args.datasets:
        train, test = split(load(name, args.data_dir), args.train, args.test)
        for rep_name, rep in reps.items():
            todo = [h for h in hds if (name, rep_name, h) not in done]
            if not todo:
                continue
            start = time.perf_counter()
            rep = clone(rep)
            Xtr = rep.fit_transform(train.text.to_numpy(object), train.label.to_numpy())
            Xte = rep.transform(test.text.to_numpy(object))
            rep_s = time.perf_counter() - start
            found = {}
            for head_name in todo:
                if head_name == "auto" and sp.issparse(Xtr) and "cv" in found:
                    # on sparse input LogisticRegressionHead is exactly the `cv` model
                    acc, fit_s = found["cv"]
                else:
                    model = clone(hds[head_name])
                    start = time.perf_counter()
                    model.fit(Xtr, train.label.to_numpy())
                    fit_s = time.perf_counter() - start
                    acc = float((model.predict(Xte) == test.label.to_numpy()).mean())
                found[head_name] = (acc, fit_s)
                rows.append({"dataset": name, "representation": rep_name, "head": head_name,
                             "accuracy": acc, "head_fit_s": fit_s, "rep_s": rep_s,
                             "n_train": len(train), "n_test": len(test)})
                pd.DataFrame(rows).to_csv(args.output, index=False)  # resumable
                print(f"{name:16} {rep_name:14} {head_name:11} {acc:.4f}  {fit_s:6.2f} s", flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(args.output, index=False)
    wide = table.pivot_table(index=["dataset", "representation"], columns="head", values="accuracy")
    print(wide.round(4).to_markdown())
    secs = table.pivot_table(index=["dataset", "representation"], columns="head", values="head_fit_s")
    print(secs.round(2).to_markdown())


if __name__ == "__main__":
    main()
