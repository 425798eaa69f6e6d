"""The README, as a front page: its own-data recipe runs as written (train.py, then predict.py in
a new process, on a real slice of a dataset the defaults were not tuned on), the manual's getting
started page shows the same recipe, the page stays short, and its links lead somewhere."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

from embedkit import load_dataset
from embedkit.data.datasets import stratified_sample

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
GETTING_STARTED = ROOT / "docs" / "getting-started.md"


def recipe(page: Path = README) -> dict[str, str]:
    text = page.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- recipe: (\S+) -->\s*```python\n(.*?)```", text, flags=re.S)
    return dict(blocks)


def test_readme_is_a_front_page_whose_links_lead_somewhere():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150, "the README is a front page: the manual (docs/) holds the rest"
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert "docs/getting-started.md" in local
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"
    # the two commands it promises
    assert "./run.sh compare" in text and "./run.sh test" in text


def test_getting_started_shows_the_readme_recipe():
    assert recipe(GETTING_STARTED) == recipe(README)


def test_readme_recipe_trains_saves_and_predicts_in_a_new_process(tmp_path):
    """The recipe as written but for its budget, which the README says the test cuts to fit the
    300-review slice."""
    scripts = recipe()
    assert list(scripts) == ["train.py", "predict.py"]
    assert scripts["train.py"].count('budget="2m"') == 1 and 'with `budget="30s"`' in README.read_text()
    scripts["train.py"] = scripts["train.py"].replace('budget="2m"', 'budget="30s"')
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
            assert "accuracy" in run.stdout and "True" in run.stdout  # the board, its pick
    assert (tmp_path / "my-tune" / "model" / "manifest.json").exists()
    assert {"leaderboard.md", "leaderboard.csv"} <= {p.name for p in (tmp_path / "my-tune").iterdir()}
    predictions = pd.read_csv(tmp_path / "predictions.csv")
    assert len(predictions) == 25 and set(predictions.label) <= set(train.label)
    probabilities = predictions.filter(like="proba_")
    assert probabilities.shape[1] == train.label.nunique()
    assert ((probabilities.sum(axis=1) - 1).abs() < 1e-5).all()
