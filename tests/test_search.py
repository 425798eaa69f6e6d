"""`embedkit.search`: one GridSearchCV whose grid pairs only compatible steps."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import PredefinedSplit, StratifiedKFold

from embedkit.search import make_search, param_grid


def test_param_grid_pairs_only_compatible_steps():
    grid = param_grid(["tfidf", "glove-seq", "passthrough"], ["logreg", "rnn", "finetune"])
    assert [type(g["features"][0]).__name__ for g in grid] == ["TfidfEmbedder", "GloveEmbedder", "str"]
    assert [[type(h).__name__ for h in g["head"]] for g in grid] == [
        ["LogisticRegressionHead"], ["RNNClassifier"], ["TransformerClassifier"]]
    assert grid[0]["features"][0].cache == "memory"  # set on every step that takes a cache
    assert param_grid(["tfidf"], ["logreg"], cache=None)[0]["features"][0].cache is None
    with pytest.raises(ValueError, match="no head in \\['rnn'\\] accepts"):
        param_grid(["tfidf"], ["rnn"])


def test_make_search_fits_and_uses_the_official_split(bbc):
    small = bbc.groupby("label").head(12).reset_index(drop=True)
    search, X, y = make_search(small, ["tfidf", "lsa"], ["logreg"], cv=2)
    assert isinstance(search.cv, StratifiedKFold) and len(X) == len(y) == 60
    search.fit(X, y)
    assert search.cv_results_["mean_test_accuracy"].shape == (2,)
    assert search.best_score_ > 0.5  # 5 classes: chance is 0.2
    split = small.assign(split=np.where(np.arange(60) % 4 == 0, "test", "train"))
    official, _, _ = make_search(split, ["tfidf"], ["logreg"])
    assert isinstance(official.cv, PredefinedSplit) and official.cv.get_n_splits() == 1
