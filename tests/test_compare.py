"""`embedkit.compare`: scores equal the corresponding Pipeline's, runs resume fold by fold,
and the splits follow the dataset's protocol."""

from __future__ import annotations

import pandas as pd
import pytest

import embedkit.compare as compare_module
from embedkit.compare import _splits, run_compare


def test_compare_shares_the_fit_and_scores_like_the_pipeline(tmp_path, monkeypatch):
    from sklearn.model_selection import StratifiedKFold, cross_validate

    from embedkit.datasets import load_dataset, stratified_sample
    from embedkit.registry import make_pipeline

    got = run_compare("bbc-news", ["tfidf"], ["logreg", "linear"], quick=True, output=tmp_path,
                      progress=False)
    sample = stratified_sample(load_dataset("bbc-news"), 300, 0).reset_index(drop=True)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    for head in ("logreg", "linear"):
        want = cross_validate(make_pipeline("tfidf", head), sample.text.to_numpy(object),
                              sample.label, cv=cv)["test_score"]
        row = got.set_index("head").loc[head]
        assert row.accuracy_mean == pytest.approx(want.mean(), abs=1e-12)
        assert row.accuracy_std == pytest.approx(want.std(), abs=1e-12)
    # interrupted after two of three folds: the rerun fits only the third, same table
    (tmp_path / "runs.jsonl").unlink()
    lines = (tmp_path / "folds.jsonl").read_text().splitlines()
    assert len(lines) == 6  # 3 folds x 2 heads
    (tmp_path / "folds.jsonl").write_text("\n".join(lines[:4]) + "\n")
    calls = []
    real = compare_module._score_fold

    def counting(rep, heads, *data):
        calls.append(sorted(heads))
        return real(rep, heads, *data)

    monkeypatch.setattr(compare_module, "_score_fold", counting)
    again = run_compare("bbc-news", ["tfidf"], ["logreg", "linear"], quick=True, output=tmp_path,
                        progress=False)
    assert calls == [["linear", "logreg"]]
    timings = ["fit_seconds", "transform_seconds", "predict_seconds", "peak_mb"]
    pd.testing.assert_frame_equal(again.drop(columns=timings), got.drop(columns=timings))


def test_compare_holdout_split():
    df = pd.DataFrame({"text": [f"t{i}" for i in range(100)], "label": ["a"] * 80 + ["b"] * 20})
    [(train, test)], protocol = _splits(df, 5, 0, holdout=0.2)
    assert protocol == "stratified 20% holdout" and len(test) == 20 and len(train) == 80
    assert not set(train) & set(test) and (df.label[test] == "b").sum() == 4
    with pytest.raises(ValueError, match="holdout=1.5.*between 0 and 1"):
        _splits(df, 5, 0, holdout=1.5)
    official = df.assign(split=["train"] * 90 + ["test"] * 10)
    assert _splits(official, 5, 0, holdout=0.2)[1] == "official test split"
