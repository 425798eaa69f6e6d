"""The README's "Your own data in Python" recipe runs as written: train.py, then predict.py in a
new process, on a real slice of a dataset the defaults were not tuned on."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

from embedkit import load_dataset
from embedkit.datasets import stratified_sample

README = Path(__file__).parents[1] / "README.md"


def recipe() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- recipe: (\S+) -->\s*```python\n(.*?)```", text, flags=re.S)
    return dict(blocks)


def test_readme_recipe_trains_saves_and_predicts_in_a_new_process(tmp_path):
    scripts = recipe()
    assert list(scripts) == ["train.py", "predict.py"]
    data = load_dataset("rotten-tomatoes")
    train = stratified_sample(data, 300, seed=0)
    train[["text", "label"]].to_csv(tmp_path / "reviews.csv", index=False)
    new = data.drop(train.index).head(25)
    new[["text"]].to_csv(tmp_path / "new_reviews.csv", index=False)
    for name, code in scripts.items():
        (tmp_path / name).write_text(code, encoding="utf-8")
        run = subprocess.run([sys.executable, name], cwd=tmp_path, capture_output=True, text=True,
                             timeout=900)
        assert run.returncode == 0, f"{name} failed:\n{run.stderr[-3000:]}"
        if name == "train.py":
            assert "plain TF-IDF + LR" in run.stdout and "True" in run.stdout
    assert (tmp_path / "my-tune" / "model" / "manifest.json").exists()
    assert {"leaderboard.md", "leaderboard.csv"} <= {p.name for p in (tmp_path / "my-tune").iterdir()}
    predictions = pd.read_csv(tmp_path / "predictions.csv")
    assert len(predictions) == 25 and set(predictions.label) <= set(train.label)
    probabilities = predictions.filter(like="proba_")
    assert probabilities.shape[1] == train.label.nunique()
    assert ((probabilities.sum(axis=1) - 1).abs() < 1e-5).all()
