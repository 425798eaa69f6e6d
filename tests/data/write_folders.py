"""Write the model folders that every later release must load (`tests/test_persist.py`).

    python tests/data/write_folders.py RELEASE      # e.g. c21f6d8: writes tests/data/RELEASE-*/
    python tests/data/write_folders.py RELEASE calibrated sgd   # only the kinds named

Each folder is a small fitted pipeline of a kind `embedkit tune` saves (a sparse pipeline, a
table, a neural head with safetensors weights, a vote of frozen members), written by the release
named, beside a ``.expected.json`` of its predictions on a few documents. Commit both; never
rewrite a folder once committed: a later release proves it still loads them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TEXTS = ["the cat sat on the mat", "the dog sat on the log", "stocks fell as markets opened",
         "the bank raised interest rates", "the team won the final match",
         "the striker scored twice", "a cat and a dog played", "investors sold shares",
         "fans cheered the players", "the kitten chased the puppy", "profits beat forecasts",
         "the coach praised the defence"] * 3
LABELS = ["pets", "pets", "money", "money", "sport", "sport", "pets", "money", "sport", "pets",
          "money", "sport"] * 3
DOCS = ["the cat sat in the garden", "shares fell after the vote", "the match ended in a draw"]


def folders():
    """name -> (fitted pipeline, what it predicts on: documents or a table)."""
    from sklearn.ensemble import VotingClassifier
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline

    import embedkit

    text = Pipeline([("features", embedkit.TfidfEmbedder()),
                     ("head", embedkit.LogisticRegressionHead())]).fit(TEXTS, LABELS)
    neural = Pipeline([("features", embedkit.TokenIndexer()),
                       ("head", embedkit.MLPClassifier(epochs=3, random_state=0))]).fit(TEXTS, LABELS)
    vote = VotingClassifier([("tfidf", FrozenEstimator(text)), ("mlp", FrozenEstimator(neural))],
                            voting="soft").fit(TEXTS, LABELS)
    n = len(TEXTS)
    table = pd.DataFrame({"text": TEXTS, "shop": (["north", "south", "east"] * n)[:n],
                          "price": np.arange(n, dtype=float)})
    tab = Pipeline([("features", embedkit.TableEmbedder(
        embedkit.TfidfEmbedder(), text_columns=["text"], categorical=["shop"], numeric=["price"])),
        ("head", embedkit.LogisticRegressionHead())]).fit(table, LABELS)
    rows = pd.DataFrame({"text": DOCS, "shop": ["north", "east", "west"], "price": [1.0, 5.0, 50.0]})
    # the shape of a calibrated tune pick: the head wrapped, its temperature fitted on other rows
    calibrated = Pipeline([("features", text.steps[0][1]), ("head", embedkit.TemperatureScaled(
        text.steps[1][1]).fit(text.steps[0][1].transform(DOCS * 2), ["pets", "money", "sport"] * 2))])
    sgd = Pipeline([("features", embedkit.TfidfEmbedder()),
                    ("head", embedkit.LinearSGDClassifier(random_state=0))]).fit(TEXTS, LABELS)
    # NBSVM: TF-IDF times the log-count ratios, one block a class
    nbsvm = Pipeline([("features", embedkit.TfidfEmbedder(ngram_range=(1, 2), sublinear_tf=True,
                                                          log_count_ratio=True)),
                      ("head", embedkit.LogisticRegressionHead())]).fit(TEXTS, LABELS)
    return {"tfidf-logreg": (text, DOCS), "tokens-mlp": (neural, DOCS), "vote": (vote, DOCS),
            "table-logreg": (tab, rows), "calibrated": (calibrated, DOCS), "sgd": (sgd, DOCS),
            "nbsvm": (nbsvm, DOCS)}


def main(release: str, names=()) -> None:
    import embedkit

    for name, (model, X) in folders().items():
        if names and name not in names:
            continue
        folder = HERE / f"model-folder-{release}-{name}"
        if folder.exists():
            raise SystemExit(f"{folder} exists: a committed folder is never rewritten")
        embedkit.save(model, folder)
        expected = {"release": release, "rows": X.to_dict("list") if hasattr(X, "to_dict") else X,
                    "classes": [str(c) for c in model.classes_],
                    "proba": np.asarray(model.predict_proba(X)).tolist()}
        (HERE / f"{folder.name}.expected.json").write_text(json.dumps(expected, indent=1) + "\n")
        print(folder, sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()), "bytes")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
