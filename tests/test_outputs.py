"""What the user owns stays theirs (issue 36): `embedkit.storage.outputs`, and the user's mistakes at
``embedkit tune`` and ``embedkit predict``, each against the real command or `Tuner`.

The issue's nine cases, with a checksum of every file of the user's before and after:

1. ``--output`` a folder of the user's files (or ``.``): refused before the search; with
   ``--overwrite`` only the files tune writes are replaced, every other one is kept.
2. the same with the user's own ``model/`` sub-folder: refused before the search, even with
   ``--overwrite``.
3. ``--output`` an existing model folder: refused; the model still loads.
4. ``predict -o`` its own input, a file it did not write, a folder, a path inside the model:
   refused before predicting.
5. SIGKILL at random moments of the publication, over many trials: each leaves a loadable old
   or new result whose leaderboard and model belong together, and the user's files.
6. SIGINT and SIGTERM delivered inside an MLP's epoch: the search ends, the model is saved, the
   leaderboard marks the stopped model and says the search was interrupted.
7. checks that came after the work (an output that is a file, a read-only folder, ``predict -o``
   a folder) now come before it: the command ends in seconds, before any search line.
8. budgets of 1, 5 and 10 s against wall time: the command ends within +10% or 5 s, whichever
   is larger, or refuses the budget at once, stating the least that can score anything.
9. errors that say what happened: an empty or header-only file, bytes in another encoding, a
   column used twice, a text column without one document, a baseline that failed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import embedkit
from embedkit import Tuner, load, save
from embedkit.cli import app
from embedkit.storage.outputs import (
    MARK,
    TUNE_ENTRIES,
    _digest,
    check_output_folder,
    check_predictions_file,
    publish_folder,
)
from embedkit.tuning import BudgetError

ROOT = Path(__file__).parents[1]
#: files of the user's, put where tune is told to write
USERS = {"notes.txt": "my notes", "report.html": "<html>mine</html>", "leaderboard.md": "# mine",
         "data/raw.csv": "a,b\n1,2\n"}


def sums(root: Path) -> dict[str, str]:
    """SHA-256 of every file under ``root``, by relative path."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def users_folder(path: Path, files: dict = USERS) -> Path:
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    return path


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def said(result) -> str:
    """The output with rich's error box and line wrapping undone."""
    return " ".join(result.output.replace("│", " ").split())


def refused(result, *messages) -> str:
    """Assert a clean refusal: exit 2, the messages, no traceback, no line of a search."""
    text = said(result)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "tune:" not in text and "baselines:" not in text, text  # no search ran
    for message in messages:  # rich wraps a long path anywhere: compared without spaces
        assert "".join(message.split()) in "".join(text.split()), text
    return text


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    trec = embedkit.load_dataset("trec")
    rows = (trec[trec["split"] == "train"].sample(200, random_state=0)[["text", "label"]]
            .reset_index(drop=True))
    rows.to_csv(folder / "questions.csv", index=False)
    return folder, rows


@pytest.fixture(scope="module")
def models(data, tmp_path_factory):
    """Two small real models on the same texts: six classes, and two."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from embedkit import TfidfEmbedder

    _, rows = data
    folder = tmp_path_factory.mktemp("models")
    six = make_pipeline(TfidfEmbedder(), LogisticRegression()).fit(rows["text"], rows["label"])
    two = make_pipeline(TfidfEmbedder(), LogisticRegression()).fit(
        rows["text"], np.where(rows["label"] == "HUM", "person", "other"))
    return {"six": (six, save(six, folder / "six")), "two": (two, save(two, folder / "two"))}


@pytest.fixture(scope="module")
def tuned(data, tmp_path_factory):
    """One real tune at a 10 s budget, into a folder of the user's with overwrite=True."""
    _, rows = data
    out = users_folder(tmp_path_factory.mktemp("tuned") / "out")
    before = sums(out)
    began = time.monotonic()
    tuner = Tuner(10, pairs=[("tfidf", "logreg-cv")], finetune=False, progress=False,
                  output=out, overwrite=True).fit(rows["text"], rows["label"])
    return out, before, tuner, time.monotonic() - began


# -- 1 and 2: a folder of the user's -----------------------------------------------------------
def test_tune_refuses_a_folder_of_the_users_files_before_the_search(data, tmp_path, monkeypatch):
    folder, _ = data
    out = users_folder(tmp_path / "mine")
    before = sums(out)
    text = refused(run("tune", "-f", folder / "questions.csv", "-o", out, "--budget", "1m"),
                   f"{out} holds files that embedkit tune did not write (data, leaderboard.md, "
                   "notes.txt, report.html); nothing was written.", "--overwrite")
    assert f"--output {out.name}-tune" in text
    assert sums(out) == before and sorted(os.listdir(tmp_path)) == ["mine"]
    monkeypatch.chdir(out)  # `--output .` in a working folder
    for extra in ([], ["--overwrite"]):
        refused(run("tune", "-f", folder / "questions.csv", "-o", ".", "--budget", "1m", *extra),
                ". is the folder you are working in", "Pass a folder inside it (--output embedkit-tune)")
    assert sums(out) == before


def test_overwrite_replaces_only_the_files_tune_writes_and_keeps_the_others(tuned):
    out, before, tuner, _ = tuned
    after = sums(out)
    kept = {k: v for k, v in before.items() if k.split("/")[0] not in TUNE_ENTRIES}
    assert kept == {k: after[k] for k in kept}  # notes.txt, data/raw.csv: byte for byte
    assert after["report.html"] != before["report.html"]  # overwrite=True said so
    mark = json.loads((out / MARK).read_text())
    # the user's files are not tune's (one target: no targets/ folder)
    assert sorted(mark["entries"]) == sorted(e for e in TUNE_ENTRIES if e != "targets")
    assert all(_digest(out / name) == digest for name, digest in mark["entries"].items())
    docs = ["Who wrote Hamlet ?", "How far is the moon ?"]
    assert list(load(out / "model").predict(docs)) == list(tuner.predict(docs))
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary left


def test_a_second_tune_into_its_own_folder_needs_no_flag_and_a_changed_file_is_the_users(
        tuned, tmp_path):
    out = Path(shutil.copytree(tuned[0], tmp_path / "out"))  # the mark is by content: still tune's
    check_output_folder(out)  # marked: tune may write there again, keeping notes.txt
    (out / "leaderboard.md").write_text("# my edits")
    with pytest.raises(ValueError, match=r"holds leaderboard.md, written by an earlier tune and "
                                         r"changed since; nothing was written"):
        check_output_folder(out)
    check_output_folder(out, overwrite=True)
    shutil.rmtree(out / "model")
    users_folder(out, {"model/weights.bin": "mine"})  # tune's model/ replaced by a folder of theirs
    with pytest.raises(ValueError, match=r"holds model, which is not a model folder"):
        check_output_folder(out, overwrite=True)


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_a_model_subfolder_of_the_users_is_refused_even_with_overwrite(data, tmp_path, overwrite):
    folder, _ = data
    out = users_folder(tmp_path / "mine", {"notes.txt": "mine", "model/weights.bin": "\x00\x01"})
    before = sums(out)
    refused(run("tune", "-f", folder / "questions.csv", "-o", out, "--budget", "1m", *overwrite),
            "holds model, which is not a model folder tune or embedkit.save wrote" if overwrite
            else "holds files that embedkit tune did not write (model, notes.txt)")
    assert sums(out) == before


# -- 3: a model folder as the output ---------------------------------------------------------
def test_an_existing_model_folder_is_never_an_output_folder(data, models, tmp_path):
    folder, rows = data
    model = Path(shutil.copytree(models["six"][1], tmp_path / "first" / "model"))
    before = sums(model)
    for extra in ([], ["--overwrite"]):
        refused(run("tune", "-f", folder / "questions.csv", "-o", model, "--budget", "1m", *extra),
                f"{model} is an embedkit model folder", "tune never writes into a model",
                f"`embedkit predict {model} FILE`")
    refused(run("tune", "-f", folder / "questions.csv", "-o", model / "arrays", "--budget", "1m"),
            f"is inside the model folder {model}")
    assert sums(model) == before
    assert list(load(model).predict(rows["text"][:3])) == list(models["six"][0].predict(rows["text"][:3]))


# -- 4 and 7: predict's output --------------------------------------------------------------
def test_predict_refuses_its_input_a_folder_a_file_it_did_not_write_and_the_model(
        data, models, tmp_path, monkeypatch):
    folder, rows = data
    _, model = models["six"]
    model_before = sums(model)
    mine = tmp_path / "mine.csv"
    shutil.copy(folder / "questions.csv", mine)
    (tmp_path / "out.csv").mkdir()
    (tmp_path / "scores.csv").write_text("student,score\nann,3\n")
    before = sums(tmp_path)
    monkeypatch.setattr("embedkit.storage.persist.load", lambda *a, **k: pytest.fail("loaded the model"))
    cases = {mine: "is the input file: the predictions would replace your documents",
             tmp_path / "out.csv": "is a folder; predict writes one file",
             tmp_path / "scores.csv": "exists and is not a predictions file",
             model / "preds.csv": f"is inside the model folder {model}"}
    for output, message in cases.items():
        text = refused(run("predict", model, mine, "-o", output, "--no-progress"), message)
        assert "nothing was written" in text
    assert sums(tmp_path) == before
    monkeypatch.undo()
    assert sums(model) == model_before
    # a file predict wrote is replaced; another only with --overwrite
    for output, extra in ((tmp_path / "preds.csv", []), (tmp_path / "preds.csv", []),
                          (tmp_path / "scores.csv", ["--overwrite"])):
        result = run("predict", model, mine, "-o", output, "--no-progress", *extra)
        assert result.exit_code == 0, result.output
        assert pd.read_csv(output).columns[0] == "label" and len(pd.read_csv(output)) == len(rows)


@pytest.mark.parametrize("kind", ["csv", "parquet", "jsonl"])
def test_predictions_files_are_known_by_their_columns(kind, tmp_path):
    frame = pd.DataFrame({"id": [1], "label": ["a"], "proba_a": [0.9], "proba_b": [0.1]})
    path = tmp_path / f"p.{kind}"
    write = {"csv": lambda: frame.to_csv(path, index=False), "parquet": lambda: frame.to_parquet(path),
             "jsonl": lambda: frame.to_json(path, orient="records", lines=True)}
    write[kind]()
    check_predictions_file(path, tmp_path / "in.csv")  # replaceable: predict wrote it
    frame = frame.rename(columns={"proba_b": "notes"})  # a table of the user's
    write[kind]()
    with pytest.raises(ValueError, match="exists and is not a predictions file"):
        check_predictions_file(path, tmp_path / "in.csv")


@pytest.mark.parametrize(("columns", "ours"), [
    (["mood", "mood_proba_down", "mood_proba_up", "score"], True),  # several targets
    (["id", "score", "mood", "mood_proba_up"], True),
    (["id", "prediction"], True),
    (["text", "label"], False),  # a labelled table: predict writes a label with probabilities
    (["label"], False),
    (["id", "score", "stars"], False),  # numbers alone could be anyone's
    (["mood", "mood_proba_up"], False),  # one target is written as label, proba_<class>
])
def test_a_predictions_file_of_several_targets_is_known_and_a_labelled_table_is_not(
        columns, ours, tmp_path):
    path = tmp_path / "p.csv"
    pd.DataFrame({c: [1] for c in columns}).to_csv(path, index=False)
    if ours:
        check_predictions_file(path, tmp_path / "in.csv")
    else:
        with pytest.raises(ValueError, match="exists and is not a predictions file"):
            check_predictions_file(path, tmp_path / "in.csv")


def test_tune_checks_an_output_that_is_a_file_or_read_only_before_the_search(
        data, tmp_path, monkeypatch):
    folder, _ = data
    afile = tmp_path / "afile"
    afile.write_text("mine")
    began = time.monotonic()
    refused(run("tune", "-f", folder / "questions.csv", "-o", afile, "--budget", "1m"),
            f"{afile} is a file; tune writes a folder there")
    readonly = tmp_path / "ro"
    readonly.mkdir()
    readonly.chmod(0o500)
    if os.geteuid() == 0:  # root may write anywhere: the read-only folder is simulated
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **k: real(p, mode) and not (
            Path(p) == readonly and mode & os.W_OK))
    refused(run("tune", "-f", folder / "questions.csv", "-o", readonly, "--budget", "1m"),
            f"{readonly} is read-only for you")
    monkeypatch.undo()
    refused(run("tune", "-f", folder / "questions.csv", "-o", afile / "sub", "--budget", "1m"),
            f"{afile / 'sub'} cannot be created: {afile} is a file")
    assert time.monotonic() - began < 20 and afile.read_text() == "mine"  # no search ran
    readonly.chmod(0o700)


# -- 5: SIGKILL while a folder is published -------------------------------------------------
def _publish_forever(out: Path, models: dict, first: int) -> None:
    """Publish the two models in turn, each with a leaderboard naming its run and classes."""
    for run_number in range(first, first + 10_000):
        pipe = models["two" if run_number % 2 else "six"][0]
        classes = "|".join(map(str, pipe.classes_))
        publish_folder(out, lambda folder, n=run_number, c=classes, p=pipe: (
            (folder / "leaderboard.csv").write_text(f"run,classes\n{n},{c}\n"),
            save(p, folder / "model")))


def test_a_kill_at_any_moment_of_the_publication_leaves_the_old_result_or_the_new(
        models, tmp_path):
    """Over many trials, a child that publishes real output folders in a loop is killed with
    SIGKILL at a random moment (seeded); each trial leaves a folder whose mark, leaderboard and
    model belong together (the old result or the new one) and the user's file untouched."""
    out = tmp_path / "out"
    publish_folder(out, lambda folder: (  # the parent publishes first: every import is done
        (folder / "leaderboard.csv").write_text("run,classes\n"), save(models["six"][0], folder / "model")))
    (out / "notes.txt").write_text("mine")
    rng = np.random.default_rng(0)
    runs, leftovers = [], 0
    for trial in range(25):
        pid = os.fork()
        if pid == 0:  # the child: publish until killed
            try:
                _publish_forever(out, models, 2 * trial * 10_000)
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.02, 0.4))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        leftovers += any(p.name.startswith(".out.") for p in tmp_path.iterdir())  # killed mid-way
        mark = json.loads((out / MARK).read_text())
        assert all(_digest(out / name) == digest for name, digest in mark["entries"].items())
        assert set(os.listdir(out)) == {*mark["entries"], MARK, "notes.txt"}
        assert (out / "notes.txt").read_text() == "mine"
        board = (out / "leaderboard.csv").read_text().splitlines()
        if len(board) == 2:  # a run of the child was published (else the warm-up's folder)
            number, classes = board[1].split(",")
            assert "|".join(map(str, load(out / "model").classes_)) == classes
            runs.append(int(number))
    assert len(set(runs)) > 5 and leftovers > 5  # kills at many moments of many publications
    publish_folder(out, lambda folder: save(models["two"][0], folder / "model"))
    assert not [p for p in tmp_path.iterdir() if p.name != "out"]  # what they left is swept
    assert (out / "notes.txt").read_text() == "mine"


# -- 6: Ctrl-C and SIGTERM inside a neural head's epoch ---------------------------------------
CHILD = """
import signal, sys, time
from pathlib import Path
from skorch.callbacks import Callback
from embedkit import MLPClassifier

class HoldEpoch2(Callback):  # holds the MLP's second epoch open until the signal comes
    def on_epoch_begin(self, net, **kwargs):
        if len(net.history) == 2:
            Path(sys.argv[1]).write_text("in epoch 2")
            time.sleep(60)

callbacks = MLPClassifier._callbacks
MLPClassifier._callbacks = lambda self, n: [*callbacks(self, n), ("hold", HoldEpoch2())]
# Ctrl-C as in a terminal's foreground: a shell's background job (`pytest ... &`) starts with
# SIGINT ignored, and its children inherit that
signal.signal(signal.SIGINT, signal.default_int_handler)
from embedkit.cli import app
app(sys.argv[2:])
"""


def test_sigint_and_sigterm_inside_an_epoch_stop_the_search_and_keep_the_best(data, tmp_path):
    folder, rows = data
    children = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        marker, out = tmp_path / f"{sig.name}.started", tmp_path / sig.name
        children[sig] = (marker, out, subprocess.Popen(
            [sys.executable, "-c", CHILD, str(marker), "tune", "-f", folder / "questions.csv",
             "-r", "tfidf", "-H", "mlp", "--finetune", "no", "--budget", "20s",
             "--validation", "0.2", "-o", out],
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for sig, (marker, out, child) in children.items():
        deadline = time.monotonic() + 120
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), child.communicate()
        child.send_signal(sig)  # from outside, into the MLP's epoch
        stdout, stderr = child.communicate(timeout=120)
        assert child.returncode == 0 and "Traceback" not in stderr, stderr
        assert "interrupted: tfidf + mlp: stopped by Ctrl-C (or SIGTERM) before it was scored" in stdout
        assert "the search was interrupted" in stdout and "interrupted: finishing" in stderr
        assert "sparse + linear: tfidf + mlp:" not in stderr  # never scored as if complete
        board = pd.read_csv(out / "leaderboard.csv")
        row = board[board["pipeline"] == "tfidf + mlp"].iloc[0]
        assert row["status"] == "interrupted" and np.isnan(row["accuracy"])
        assert board.loc[board["pick"], "pipeline"].item() == "plain TF-IDF + LR"
        lines = (out / "leaderboard.md").read_text().splitlines()
        assert lines[2].startswith("*Note:* task: classification") and lines[4].startswith(
            "**The search was interrupted** (Ctrl-C or SIGTERM)")
        assert load(out / "model").predict(rows["text"][:4]).shape == (4,)


def test_ctrl_c_stops_a_head_that_early_stopping_would_have_stopped_too(monkeypatch):
    """skorch's EarlyStopping ends training with a KeyboardInterrupt of its own: that one still
    ends the fit normally, and a Ctrl-C in the same fit still reaches the caller."""
    from skorch.callbacks import Callback

    from embedkit import MLPClassifier

    X, y = np.random.default_rng(0).normal(size=(300, 4)).astype(np.float32), [0, 1, 2] * 100
    quiet = MLPClassifier(epochs=200, early_stopping=True, patience=2, lr=1e-2).fit(X, y)
    assert 2 < quiet.n_epochs_ < 200  # stopped early, as a fit

    class CtrlC(Callback):
        def on_batch_end(self, net, **kwargs):
            if len(net.history) == 2:
                os.kill(os.getpid(), signal.SIGINT)

    callbacks = MLPClassifier._callbacks
    monkeypatch.setattr(MLPClassifier, "_callbacks", lambda self, n: [*callbacks(self, n),
                                                                      ("ctrl_c", CtrlC())])
    # Ctrl-C as in a terminal's foreground (a background job's pytest ignores SIGINT)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            MLPClassifier(epochs=200, early_stopping=True, patience=2, lr=1e-2).fit(X, y)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_interrupt_before_anything_is_scored_writes_nothing(data, tmp_path, monkeypatch):
    _, rows = data

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("embedkit.tuning._engine.Search.split", stop)
    with pytest.raises(KeyboardInterrupt):
        Tuner(30, pairs=[("tfidf", "logreg")], progress=False,
              output=tmp_path / "out").fit(rows["text"], rows["label"])
    assert not list(tmp_path.iterdir())


# -- 8: small budgets against wall time -----------------------------------------------------
def within(budget: float, wall: float) -> bool:
    return wall <= budget + max(0.1 * budget, 5.0)


@pytest.mark.parametrize("budget", [1, 5, 10])
def test_small_budgets_hold_or_are_refused_at_once_with_the_least(data, tmp_path, budget):
    """The command, in a process of its own (its start counts): it ends within the rule, and a
    budget that cannot score anything is refused with the least that can."""
    folder, _ = data
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "embedkit.cli", "tune", "-f",
                           folder / "questions.csv", "--budget", f"{budget}s", "-o",
                           tmp_path / "out", "--no-progress"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    wall = time.monotonic() - began
    assert within(budget, wall), (wall, done.stderr)
    assert "Traceback" not in done.stderr
    if done.returncode:
        least = re.search(r"cannot score anything here: .* give at least --budget (\d+)s",
                          " ".join(done.stderr.split()))
        assert done.returncode == 2 and least and int(least[1]) > budget, done.stderr
        assert not (tmp_path / "out").exists()
    else:
        assert load(tmp_path / "out" / "model") is not None


def test_a_10s_budget_runs_within_the_rule(tuned):
    out, _, tuner, wall = tuned
    assert within(10, wall) and tuner.budget_ == 10
    board = tuner.leaderboard_
    left = board[board["status"] == "left out"]
    assert "plain MiniLM + LR" in set(left["pipeline"])  # not loaded: the load does not fit
    assert all("would include it" in note for note in left["note"])
    with pytest.raises(BudgetError, match=r"a budget of 5 s cannot score anything: "
                       r"the plain TF-IDF baseline on 200 documents and writing the output need "
                       r"about (\d+) s; give at least \1 s"):
        Tuner(5, pairs=[("tfidf", "logreg")], output=out.parent / "other").fit(
            ["what is it ?"] * 100 + ["who is he ?"] * 100, ["a", "b"] * 100)


# -- 9: errors that say what happened -------------------------------------------------------
@pytest.mark.parametrize("content, args, message", [
    (b"", [], "is empty: it holds no header and no rows"),
    (b"text,label\n", [], "is empty: it has no rows of documents (a header only)"),
    ("text,label\nun caf\u00e9,a\n".encode("latin-1") * 5, [],
     "is not utf-8 text: byte 0xe9 on line 2 cannot be decoded. Pass its encoding (--encoding cp1252)"),
    (b"text,label\n" + b"a question,x\nanother one,y\n" * 5, ["--label-column", "text"],
     "the column 'text' is used twice, as the text and as the label column (--text-column and "
     "--label-column); name the column of labels, e.g. --label-column label."),
    (b"text,label\n" + b",x\n,y\n" * 5, [],
     "column 'text' has no text to learn from: all 10 values are empty"),
    (b"text,label\n" + b"3,x\n4,y\n" * 5, [],
     "column 'text' has no text to learn from: it holds only numbers (such as 3, 4, 3)"),
    (b"text,label\n" + b"a question,x\n" * 5, ["--encoding", "utf-9"],
     "--encoding 'utf-9' is not an encoding Python knows"),
])
def test_a_file_that_cannot_be_used_gets_an_error_saying_why(tmp_path, content, args, message):
    path = tmp_path / "mine.csv"
    path.write_bytes(content)
    text = refused(run("tune", "-f", path, "-o", tmp_path / "out", "--budget", "1m", *args),
                   "error:", message)
    assert "IndexError" not in text and not (tmp_path / "out").exists()
    assert path.read_bytes() == content


def test_a_baseline_that_failed_is_reported_as_failed_not_as_a_budget(tmp_path):
    with pytest.raises(ValueError, match=r"no model could be scored: plain TF-IDF \+ LR failed "
                                         r"\(ValueError: empty vocabulary.*\); tfidf \+ logreg-cv failed"):
        Tuner(12, pairs=[("tfidf", "logreg-cv")], finetune=False, progress=False,
              output=tmp_path / "out").fit([""] * 100, ["a", "b"] * 50)
    assert not (tmp_path / "out").exists()


# -- the module: marks, carried entries, latecomers, leftovers ---------------------------------
def test_publish_carries_the_users_entries_and_files_added_during_the_work(tmp_path):
    out = tmp_path / "out"
    publish_folder(out, lambda folder: (folder / "leaderboard.md").write_text("# first"))
    users_folder(out, {"notes.txt": "mine", "sub/deep.txt": "deep"})
    os.symlink("notes.txt", out / "link")
    before = sums(out)

    def write(folder):
        (out / "late.txt").write_text("written during the work")  # after the folder was read
        (folder / "leaderboard.md").write_text("# second")

    publish_folder(out, write)
    after = sums(out)
    assert after["leaderboard.md"] != before["leaderboard.md"]
    assert {k: after[k] for k in ("notes.txt", "sub/deep.txt")} == \
        {k: before[k] for k in ("notes.txt", "sub/deep.txt")}
    assert (out / "late.txt").read_text() == "written during the work"
    assert os.readlink(out / "link") == "notes.txt"
    assert sorted(json.loads((out / MARK).read_text())["entries"]) == ["leaderboard.md"]


def test_leftovers_of_a_dead_run_are_swept_unless_they_hold_a_file_found_nowhere_else(tmp_path):
    out = tmp_path / "out"
    publish_folder(out, lambda folder: (folder / "leaderboard.md").write_text("# one"))
    dead = 2 ** 22 + 12345  # above any pid this test's processes get
    ours = tmp_path / f".out.{dead}-0a1b2c.tmp"
    ours.mkdir()
    (ours / "leaderboard.md").write_text("# half")
    theirs = tmp_path / f".out.{dead}-3d4e5f.tmp"
    theirs.mkdir()
    (theirs / "only-copy.txt").write_text("mine")
    publish_folder(out, lambda folder: (folder / "leaderboard.md").write_text("# two"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [theirs.name, "out"]


def test_the_output_is_neither_the_input_nor_inside_it_nor_the_working_folder(tmp_path, monkeypatch):
    data = users_folder(tmp_path / "reviews", {"pos/1.txt": "good", "neg/1.txt": "bad"})
    with pytest.raises(ValueError, match=r"reviews/out is inside your input"):
        check_output_folder(data / "out", inputs=[data])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / MARK).write_text(json.dumps({"format": "embedkit-tune-output", "entries": {}}))
    monkeypatch.chdir(tmp_path / "out")
    with pytest.raises(ValueError, match=r"is the folder you are working in .*--output "):
        check_output_folder(Path("."), overwrite=True)


def test_a_folder_an_earlier_tune_wrote_before_folders_were_marked_is_its_own(models, tmp_path):
    out = users_folder(tmp_path / "embedkit-tune", {name: "old" for name in TUNE_ENTRIES[:4]})
    shutil.copytree(models["six"][1], out / "model")
    check_output_folder(out)  # exactly tune's five entries, model/ a model folder: no flag needed
    (out / "notes.txt").write_text("mine")  # anything else makes it a folder of the user's
    with pytest.raises(ValueError, match=r"holds files that embedkit tune did not write"):
        check_output_folder(out)


def test_a_full_disk_while_predicting_is_an_error_that_leaves_nothing(data, models, tmp_path,
                                                                     monkeypatch):
    folder, _ = data

    def full(self, frame):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("embedkit.streaming.FrameWriter.write", full)
    result = run("predict", models["six"][1], folder / "questions.csv", "-o", tmp_path / "p.csv",
                 "--no-progress")
    text = said(result)
    assert result.exit_code == 2 and f"could not write {tmp_path / 'p.csv'}: the disk is full " \
        "(no space left on the device) ([Errno 28] No space left on device). Nothing was " \
        "written" in text and "Free some space there, or write somewhere else" in text, text
    assert "INPUT" not in text  # the input is not to blame
    assert "Traceback" not in result.output and not list(tmp_path.iterdir())


# -- issue 49: a real file-size limit, and signals at the edges of the finish ------------------
LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
from embedkit.cli import app
app(sys.argv[2:])
"""


def _child(script: str, *args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=cwd, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          timeout=300)


def test_a_file_size_limit_while_writing_says_what_happened_and_leaves_the_old_result(
        data, models, tmp_path):
    """``ulimit -f`` (RLIMIT_FSIZE) smaller than what tune and predict write: a clear error that
    names the limit and the fix; the earlier predictions and the earlier tune folder unchanged."""
    folder, _ = data
    limit = 4096
    old = tmp_path / "p.csv"
    assert run("predict", models["six"][1], folder / "questions.csv", "-o", old,
               "--no-progress").exit_code == 0
    before = old.read_bytes()
    assert len(before) > limit
    done = _child(LIMITED, limit, "predict", models["six"][1], folder / "questions.csv", "-o", old,
                  "--no-progress", cwd=tmp_path)
    text = " ".join(done.stderr.replace("│", " ").split())
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"could not write {old}: a file grew past the largest this process may write (the " \
        "file-size limit, `ulimit -f`, or the file system's own) ([Errno 27] File too large)" in text
    assert "Raise the limit (`ulimit -f unlimited`)" in text and "INPUT" not in text, text
    assert old.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["p.csv"]
    out = tmp_path / "tuned"
    done = _child(LIMITED, limit, "tune", "-f", folder / "questions.csv", "-r", "tfidf", "-H",
                  "logreg", "--finetune", "no", "--budget", "30s", "-o", out, "--no-progress",
                  cwd=tmp_path)
    text = " ".join(done.stderr.replace("│", " ").split())
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"error: could not write {out.resolve()}: a file grew past the largest" in text, text
    assert f"Nothing was written: {out.resolve()} was left as it was" in text
    assert sorted(os.listdir(tmp_path)) == ["p.csv"]  # no folder, no temporary left


SIGNALLED = """
import os, signal, sys
import embedkit.storage.files, embedkit.tuning._finish
where = sys.argv[1]
if where == "refit":
    refit = embedkit.tuning._finish.Finish.refit
    def hooked(*args):
        os.kill(os.getpid(), signal.SIGTERM)  # the refit's first moment
        return refit(*args)
    embedkit.tuning._finish.Finish.refit = staticmethod(hooked)
else:
    exchange = embedkit.storage.files._exchange
    def hooked(a, b):
        done = exchange(a, b)
        os.kill(os.getpid(), signal.SIGTERM)  # just after the swap
        return done
    embedkit.storage.files._exchange = hooked
from embedkit.cli import app
app(sys.argv[2:])
"""


def test_sigterm_in_the_refit_is_recorded_and_just_after_the_swap_is_said_truly(data, models,
                                                                                tmp_path):
    folder, rows = data
    args = ["tune", "-f", folder / "questions.csv", "-r", "tfidf", "-H", "logreg", "--finetune",
            "no", "--budget", "30s", "--validation", "0.2", "--no-progress"]
    done = _child(SIGNALLED, "refit", *args, "-o", tmp_path / "refit", cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "the refit was interrupted (Ctrl-C or SIGTERM): what it had not refit was kept as " \
        "fitted on the training rows" in done.stdout, done.stdout
    board = (tmp_path / "refit" / "leaderboard.md").read_text()
    assert "**The refit was interrupted** (Ctrl-C or SIGTERM): the pick was kept as fitted on " \
        "the training rows" in board and "no time for a refit" not in board
    assert load(tmp_path / "refit" / "model").predict(rows["text"][:3]).shape == (3,)
    # an earlier result in the folder; the signal comes after the new one is swapped in
    out = tmp_path / "swap"
    publish_folder(out, lambda f: save(models["two"][0], f / "model"))
    done = _child(SIGNALLED, "swap", *args, "-o", out, cwd=tmp_path)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert f"interrupted: after the result was written: {out} holds this run's leaderboard and " \
        "its model" in " ".join(done.stderr.split()), done.stderr
    assert "no model was saved" not in done.stderr
    assert len(load(out / "model").classes_) == 6  # the new model (six classes), not the old two
    assert (out / "leaderboard.md").exists() and not [
        p for p in tmp_path.iterdir() if p.name.startswith(".swap.")]


def test_every_command_refuses_a_file_of_unquoted_texts_with_commas_before_any_work(models,
                                                                                    tmp_path):
    """A one-column export named .csv whose texts hold commas (before, `predict` exited 0 with
    the texts cut at their first comma), and a labelled one for tune and compare."""
    texts = [f"question {i}, about a place" if i % 2 else f"question {i}" for i in range(20)]
    one = tmp_path / "q.csv"
    one.write_text("text\n" + "".join(t + "\n" for t in texts))
    two = tmp_path / "l.csv"
    two.write_text("text,label\n" + "".join(f"{t},{i % 3}\n" for i, t in enumerate(texts)))
    for args, message in (
            (["predict", models["six"][1], one, "-o", tmp_path / "p.csv", "--no-progress"], "one"),
            (["embed", one, tmp_path / "v.npy", "-r", "tfidf", "--no-progress"], "one"),
            (["tune", "-f", two, "--budget", "30s", "-o", tmp_path / "t"], "two"),
            (["compare", "--file", two, "--quick", "-o", tmp_path / "c"], "two")):
        result = run(*args)
        text = said(result)
        assert result.exit_code == 2 and "Traceback" not in result.output, (args, result.output)
        assert (f"10 of 20 data rows have {3 if message == 'two' else 2} fields where the header "
                f"has {2 if message == 'two' else 1} (rows 1, 3, 5, 7, 9 and 5 more") in text, text
        assert ("name it .tsv" if message == "one" else "must be quoted") in text, text
    assert sorted(os.listdir(tmp_path)) == ["l.csv", "q.csv"]


def test_tune_says_when_labels_that_differ_only_by_spaces_were_read_as_one(data, tmp_path):
    folder, rows = data
    spaced = rows.assign(label=[f"{label} " if i % 5 == 0 else label
                                for i, label in enumerate(rows["label"])])
    spaced.to_csv(tmp_path / "spaced.csv", index=False)
    result = run("tune", "-f", tmp_path / "spaced.csv", "-r", "tfidf", "-H", "logreg", "--finetune",
                 "no", "--budget", "20s", "-o", tmp_path / "out", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "note: labels that differ only by surrounding spaces were read as one: 'DESC' and " \
        "'DESC ' as 'DESC'; 'ENTY' and 'ENTY ' as 'ENTY'" in said(result)
    assert sorted(load(tmp_path / "out" / "model").classes_) == sorted(set(rows["label"]))


# -- issue 63: every message points at the fix -------------------------------------------------
WEIGHTS_LIMITED = """
import dataclasses, resource, signal, sys
import embedkit.registry as registry
import safetensors.torch
import embedkit.storage.persist as persist
import embedkit.tuning._view as view
choose, save, save_file = view.choose, persist.save, safetensors.torch.save_file

def neural(scored, *args, **kwargs):  # the pick: an MLP, whose weights safetensors writes
    mlp = [c for c in scored if "mlp" in c.label]  # "tfidf + mlp", and its variants
    return max(mlp, key=lambda c: c.score) if mlp else choose(scored, *args, **kwargs)

def limited(*args, **kwargs):  # the leaderboard files are written: the limit meets the model
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
    return save(*args, **kwargs)

def weights(*args, **kwargs):  # the real writer, which says when it failed
    try:
        return save_file(*args, **kwargs)
    except Exception as err:
        print(f"weights: {type(err).__name__}", file=sys.stderr)
        raise

view.choose, persist.save, safetensors.torch.save_file = neural, limited, weights
# the pairs' defaults only, no variants: the search ends once the MLP is scored, well inside a
# budget large enough for a busy machine to reach it
for table, name in ((registry.REPRESENTATIONS, "tfidf"), (registry.HEADS, "mlp")):
    table[name] = dataclasses.replace(table[name], space={})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
from embedkit.cli import app
app(sys.argv[2:])
"""


def test_a_file_size_limit_met_by_the_picks_weights_is_the_same_clear_error(data, models,
                                                                            tmp_path):
    """``ulimit -f`` met by the safetensors weights of tune's pick (an MLP): once ~100 lines of
    traceback ending in SafetensorError (exit 1), now the write error every other file gets
    (exit 2), and the earlier result in the folder is left as it was."""
    folder, _ = data
    out = tmp_path / "tuned"
    publish_folder(out, lambda f: save(models["two"][0], f / "model"))
    before = sums(out)
    done = _child(WEIGHTS_LIMITED, 4096, "tune", "-f", folder / "questions.csv", "-r", "tfidf",
                  "-H", "mlp", "--finetune", "no", "--budget", "60s", "--validation", "0.2", "-o", out,
                  "--no-progress",
                  cwd=tmp_path)
    text = " ".join(done.stderr.replace("│", " ").split())
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "weights: SafetensorError" in text, text  # the weights met the limit
    assert f"error: could not write {out.resolve()}: a file grew past the largest this process " \
        "may write (the file-size limit, `ulimit -f`, or the file system's own) ([Errno 27] File " \
        f"too large). Nothing was written: {out.resolve()} was left as it was. Raise the limit " \
        "(`ulimit -f unlimited`), or write to another file system." in text, text
    assert sums(out) == before and len(load(out / "model").classes_) == 2
    assert sorted(os.listdir(tmp_path)) == ["tuned"]  # no temporary folder left


@pytest.mark.parametrize("source", ["questions", "articles"])
def test_the_least_budget_said_holds_when_it_is_followed(tmp_path, monkeypatch, source):
    """On a 400-row file ``--budget 10s`` was refused before reading with "give at least
    --budget 11s (more for a large file)", and 11s or 12s then after reading with "at least 13s".
    Now a budget below the floor is refused at once with a least that says it is a floor; the
    next least is said once the search is loaded and the file sized (its bytes and lines), before
    it is read, and holds: followed, the budget passes the check after reading (the search is
    stopped where it would start). News articles span lines: more lines than rows."""
    trec = embedkit.load_dataset("trec" if source == "questions" else "bbc-news")
    rows = trec.sample(400 if source == "questions" else 120, random_state=0)[["text", "label"]]
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)

    def started(self, X, y, **kwargs):
        raise ValueError(f"the search starts here, on {len(X)} rows")

    monkeypatch.setattr(Tuner, "fit", started)
    args = ["tune", "-f", path, "-r", "tfidf", "-H", "logreg", "-o", tmp_path / "out"]
    text = refused(run(*args, "--budget", "1s"))
    floor = re.search(r"--budget 1s cannot score anything here: starting took \d+ s; the plain "
                      r"TF-IDF baseline and writing the output need at least \d+ s more; give at "
                      r"least --budget (\d+)s \(a floor: loading the search and the size of the "
                      r"data come on top; given that much, the command sizes the data and says the "
                      r"least that holds\)\.", text)
    assert floor and "more for a large file" not in text, text
    budget, refusals = f"{floor[1]}s", []
    while (result := run(*args, "--budget", budget)).exit_code == 2 and \
            "cannot score anything" in result.output:
        text = said(result)
        least = re.search(rf"--budget {budget} cannot score anything here: starting took \d+ s; "
                          r"reading the file \(\d+ kB, ([\d,]+) documents at most\), the plain "
                          r"TF-IDF baseline on them and writing the output need about \d+ s more; "
                          r"give at least --budget (\d+)s\.", text)
        assert least and not refusals, (refusals, text)  # said once, before reading: it holds
        assert int(least[1].replace(",", "")) >= len(rows)  # lines: as many as rows, or more
        refusals.append(text)
        budget = f"{least[2]}s"
    assert result.exit_code == 2 and f"the search starts here, on {len(rows)} rows" in said(result)
    assert refusals or source == "questions", "the file's size raises the floor"
    assert not (tmp_path / "out").exists()


def test_every_command_refuses_a_header_that_names_a_column_twice(data, models, tmp_path):
    folder, rows = data
    path = tmp_path / "films.csv"
    films = rows.assign(title="t", genre="g", genre2="h")[["text", "title", "genre", "genre2", "label"]]
    path.write_text(films.to_csv(index=False).replace("genre2", "genre"))
    message = (f"{path}: its header names the column 'genre' twice (columns 3 and 4, counted from "
               "1), so which one a command means cannot be told. Give each column its own name in "
               "the file (e.g. genre_2), then name the one to read.")
    for args in (["tune", "-f", path, "--column", "genre", "--budget", "1m", "-o", tmp_path / "t"],
                 ["tune", "-f", path, "--column", "*", "--budget", "1m", "-o", tmp_path / "t"],
                 ["compare", "--file", path, "--column", "genre", "--quick", "-o", tmp_path / "c"],
                 ["predict", models["six"][1], path, "-o", tmp_path / "p.csv", "--no-progress"],
                 ["embed", path, tmp_path / "v.npy", "-r", "tfidf", "--no-progress"]):
        refused(run(*args), message)
    assert sorted(os.listdir(tmp_path)) == ["films.csv"]


def test_predict_refuses_a_text_column_a_table_model_would_ignore(reviews, models, tmp_path):
    """``--text-column title`` on a model of a table gave the same predictions as without it;
    it is refused, and a file without a column says which flags predict takes."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from embedkit import TableEmbedder, TfidfEmbedder

    X = reviews.drop(columns=["label", "split", "stars"])
    model = save(make_pipeline(TableEmbedder(TfidfEmbedder()), LogisticRegression()).fit(
        X, reviews["label"]), tmp_path / "model")
    X.to_csv(tmp_path / "table.csv", index=False)
    out = tmp_path / "p.csv"
    refused(run("predict", model, tmp_path / "table.csv", "-o", out, "--text-column", "title"),
            "Invalid value for --text-column: --text-column 'title' names a column of documents, "
            "but this model was fitted on a table: it reads the columns it was fitted on by name "
            "('title', 'body', 'department', 'age'), and would ignore that one. Leave it out (drop "
            "--text-column); the file needs those columns.")
    assert not out.exists()
    assert run("predict", model, tmp_path / "table.csv", "-o", out).exit_code == 0
    assert len(pd.read_csv(out)) == 8
    text = refused(run("predict", models["six"][1], tmp_path / "table.csv", "-o", tmp_path / "q.csv",
                       "--id-column", "id"),
                   "has no column 'text'; its columns are ['title', 'body', 'department', 'age']. "
                   "Name the column of documents and the id column (--text-column, --id-column).")
    assert "--label-column" not in text  # predict takes no such flag


def test_tune_names_the_cell_of_text_in_a_column_of_numbers(tmp_path):
    """A target of scores with the word ``high`` in row 17 was read as 400 classes ("classes
    [...] have fewer than 3 documents"); now the cell is named, with both fixes, before any
    search."""
    scores = embedkit.load_dataset("nyt-editorial-scores").sample(400, random_state=0)
    scores = scores.assign(label=scores["label"].astype(object))[["text", "label"]]
    scores.iloc[17, 1] = "high"
    scores.to_csv(tmp_path / "scores.csv", index=False)
    refused(run("tune", "-f", tmp_path / "scores.csv", "--budget", "1m", "-o", tmp_path / "out"),
            "the target column 'label' holds numbers but for row 17 ('high') (counted from 0): "
            "text where a number should be.", "fix that cell or drop that row (the column is then "
            "read as numbers, as --task regression reads it); to predict classes, pass --task "
            "classification.")
    assert not (tmp_path / "out").exists()


def test_a_file_the_memory_limit_holds_too_few_rows_of_is_refused_before_it_is_read(tmp_path):
    """``--memory`` that leaves room for fewer rows of the file than a search starts on (issue
    60): refused before the file is read, saying what it would hold, the room and the fix;
    nothing written. (Room for more: a random sample of the rows that fit is read, as
    `tests/test_reading.py` and `pipelines/benchmarks/tune_large.py` show.)"""
    path = tmp_path / "long.csv"
    pd.DataFrame({"text": ["word " * 1000] * 4000, "label": [0, 1] * 2000}).to_csv(path, index=False)
    out = tmp_path / "out"
    done = _child("import sys\nfrom embedkit.cli import app\napp(sys.argv[1:])", "tune", "-f", path,
                  "--memory", "400MB", "--budget", "1m", "-o", out, cwd=tmp_path)
    text = " ".join(done.stderr.replace("│", " ").split())
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert re.search(rf"{re.escape(str(path))}: its 4,000 rows \(19 MB\) would hold about 14\d MB "
                     r"of memory as read; within the limit of 400 MB, beside the \d+ MB this "
                     r"process holds, the search has room for [\d,]+ of them, fewer than the "
                     r"3,000 it starts on: give a larger limit \(--memory 8GB, say\), or free memory\.",
                     text), text
    assert not out.exists()
