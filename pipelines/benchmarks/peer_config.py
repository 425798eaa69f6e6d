"""FLAML's chosen SGD configuration, fitted once on a set's whole training side and scored held
out, paired row by row with `tune`'s kept run (issue 47).

    python pipelines/benchmarks/peer_config.py                  # wordnet-glosses, the logged config
    python pipelines/benchmarks/peer_config.py --dataset trec --alpha 1e-5 --l1-ratio 0.1

Why: on wordnet-glosses FLAML's search logged its best model, an SGD classifier on TF-IDF word
1-2-grams, 153 s into its 600, then started a trial that ran past the peers' runner's limit, so
the peer's own run returned nothing. This measures what that model scores on the held-out side
(the same split as `tune_budget.py`'s `sides` and the peers'), with the features the peers'
runner gives FLAML; the defaults are the configuration of its log's last record.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pipelines.benchmarks.peers import TUNE_RUNS, runner_module  # noqa: E402
from pipelines.benchmarks.tune_budget import paired, sides  # noqa: E402


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="wordnet-glosses")
    parser.add_argument("--alpha", type=float, default=9.398092382986845e-06)
    parser.add_argument("--l1-ratio", type=float, default=0.0030489844708181404)
    parser.add_argument("--tune-runs", type=Path, default=TUNE_RUNS)
    args = parser.parse_args(argv)
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import SGDClassifier

    train, test, _, _ = sides(args.dataset)
    began = time.perf_counter()
    vectorizer = TfidfVectorizer(**runner_module().FLAML_FEATURES)
    model = SGDClassifier(loss="modified_huber", penalty="elasticnet", alpha=args.alpha,
                          l1_ratio=args.l1_ratio, learning_rate="optimal", random_state=0)
    model.fit(vectorizer.fit_transform(train["text"]), train["label"])
    right = model.predict(vectorizer.transform(test["text"])) == test["label"].to_numpy()
    seconds = time.perf_counter() - began
    runs = [json.loads(line) for line in args.tune_runs.read_text().splitlines() if line.strip()]
    kept = [r for r in runs if r["dataset"] == args.dataset and r["budget_s"] == 600.0][-1]
    sgd = {"dataset": args.dataset, "budget_s": 600.0,
           "held_out_right": "".join("1" if hit else "0" for hit in right)}
    result = paired(kept, sgd)
    print(f"{args.dataset}: SGD (alpha={args.alpha:.3g}, l1_ratio={args.l1_ratio:.3g}) "
          f"{result['old']:.3f} held out in {seconds:.0f} s (features and fit); tune "
          f"{result['new']:.3f} (its run's plain TF-IDF + LR {kept['tfidf_acc']:.3f}, plain MiniLM + "
          f"LR {kept['minilm_acc']:.3f}, the same rows); tune - SGD {result['points']:+.1f} +- "
          f"{result['se_points']:.1f} points, McNemar p = {result['p']:.2g}")
    return result


if __name__ == "__main__":
    main()
