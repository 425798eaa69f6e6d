"""Model folders: every registry pair round-trips to identical probabilities in a fresh process;
tampered, pickled, newer and non-model folders are refused."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.pipeline import Pipeline

import embedkit
from embedkit import registry
from embedkit.storage.persist import (
    FORMAT_VERSION,
    UntrustedTypeError,
    folder_size,
    is_model_folder,
    load,
    save,
)

ROOT = Path(__file__).resolve().parents[1]
#: heads that fine-tune MiniLM: one tiny TransformerClassifier stands for them (its own test;
#: setfit: tests/test_setfit.py; finetune-seeds' vote over estimators: tests/test_ensemble.py)
SLOW = {"finetune", "finetune-short", "finetune-seeds", "vote-finetune", "setfit"}
#: steps on the base-size encoder, a 404 MB download: tests/test_mpnet.py (`-m large_download`)
#: saves and loads them by name
LARGE = {"mpnet", "finetune-mpnet"}
PAIRS = [(r, h) for r in registry.REPRESENTATIONS for h in registry.HEADS
         if h not in SLOW and not {r, h} & LARGE
         and registry.compatible(registry.REPRESENTATIONS[r], registry.HEADS[h])]
#: settings that keep the slice fast; the classes, their other parameters and the code paths
#: are the registry's
FAST_FEATURES = {"lsa": {"n_components": 16}, "fasttext": {"bucket": 5000},
                 "minilm-static": {"max_vocabulary": 2100, "pca_dims": 32}}
FAST_HEADS = {"stack": {"cv": 2}}


@pytest.fixture(scope="session")
def trec_slice():
    """60 TREC questions, 30 about people and 30 about places, to fit on, and 30 others (plus
    an empty one) to predict. Two classes keep the inner cross-validation of logreg-cv and
    stacking quick; the three-class state is covered by `test_scikit_learn_steps_round_trip`."""
    from embedkit.data.datasets import load_dataset

    df = load_dataset("trec")
    df = df[df.label.isin(["HUM", "LOC"])]
    train = df.groupby("label", group_keys=False)[["text", "label"]].apply(lambda g: g.iloc[:30])
    test = df.drop(train.index).sample(30, random_state=0)
    return train.text.tolist(), train.label.to_numpy(), test.text.tolist() + [""]


def _pipeline(rep: str, head: str, fitted: dict, X, y) -> Pipeline:
    """The registry pair, its representation fitted once per session and shared by its heads."""
    if rep not in fitted:
        features = registry.REPRESENTATIONS[rep].factory()
        if features != "passthrough":
            features.set_params(**FAST_FEATURES.get(rep, {}))
            fitted[rep] = (features, features.fit_transform(X, y))
        else:
            fitted[rep] = (features, X)
    features, Xt = fitted[rep]
    model = registry.HEADS[head].factory()
    if "epochs" in model.get_params():
        model.set_params(epochs=1)
    model.set_params(**FAST_HEADS.get(head, {}))
    return Pipeline([("features", features), ("head", model.fit(Xt, y))])


_LOADER = """
import json, sys
import numpy as np
import embedkit
folders, out = json.loads(sys.argv[1]), sys.argv[2]
docs = json.loads(open(sys.argv[3]).read())
np.savez(out, **{name: embedkit.load(path).predict_proba(docs) for name, path in folders.items()})
"""


def _in_fresh_process(folders: dict, docs: list, tmp: Path) -> dict:
    """``predict_proba(docs)`` of each folder, loaded in a new Python process."""
    (tmp / "docs.json").write_text(json.dumps(docs))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", _LOADER, json.dumps(folders), str(tmp / "out.npz"),
                          str(tmp / "docs.json")], check=False, cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    with np.load(tmp / "out.npz", allow_pickle=False) as found:
        return {name: found[name] for name in found.files}


@pytest.fixture(scope="session")
def contract(trec_slice, tmp_path_factory):
    """Every pair fitted and saved, then loaded in this process and in one fresh process:
    ``(expected, loaded here, loaded there, folder sizes)``."""
    X, y, docs = trec_slice
    tmp = tmp_path_factory.mktemp("contract")
    fitted, expected, here, folders, sizes = {}, {}, {}, {}, {}
    for rep, head in PAIRS:
        pipe = _pipeline(rep, head, fitted, X, y)
        name = f"{rep}:{head}"
        folders[name] = str(save(pipe, tmp / name.replace(":", "+")))
        expected[name] = pipe.predict_proba(docs)
        sizes[name] = folder_size(folders[name])
    for name, folder in folders.items():
        here[name] = load(folder).predict_proba(docs)
    return expected, here, _in_fresh_process(folders, docs, tmp), sizes


#: recurrent heads: a fresh process may differ from this one in the last float32 bit (1 ULP, in
#: 1 value of 62, a different pair each run; never within a process, never for the weights):
#: the BLAS kernels of the recurrence are not bit-reproducible across processes
RECURRENT = {"rnn", "gru"}


@pytest.mark.parametrize("pair", [f"{r}:{h}" for r, h in PAIRS])
def test_registry_pair_predicts_identically_after_load_in_a_fresh_process(contract, pair):
    expected, here, there, _ = contract
    np.testing.assert_array_equal(here[pair], expected[pair])
    assert there[pair].shape == expected[pair].shape
    if pair.split(":")[1] in RECURRENT:
        np.testing.assert_allclose(there[pair], expected[pair], rtol=0, atol=1e-7)
    else:
        np.testing.assert_array_equal(there[pair], expected[pair])


#: model folders written by earlier releases (`tests/data/write_folders.py`), never rewritten
RELEASED = sorted(p for p in (Path(__file__).parent / "data").glob("model-folder-*") if p.is_dir())


@pytest.mark.parametrize("folder", RELEASED, ids=[p.name for p in RELEASED])
def test_a_folder_an_earlier_release_wrote_loads_and_predicts_as_it_did(folder):
    """Every committed folder loads (its classes through recorded aliases where they moved since,
    never by trusting more) and gives the probabilities it gave when it was written."""
    expected = json.loads(folder.with_name(folder.name + ".expected.json").read_text())
    rows = expected.get("rows", expected.get("docs"))
    X = pd.DataFrame(rows) if isinstance(rows, dict) else rows
    model = embedkit.load(folder)
    assert [str(c) for c in model.classes_] == expected["classes"]
    np.testing.assert_allclose(model.predict_proba(X), expected["proba"], rtol=1e-6, atol=1e-7)
    # a parameter its classes gained since the folder was written has its default, so the
    # loaded model's parameters read, and it clones, as a model built today does
    assert type(clone(model)) is type(model) and model.get_params(deep=True)


def test_the_released_folders_name_the_classes_that_have_moved_since():
    """The folders keep the names they were written under: the aliases are tested, not bypassed."""
    written = {p.name: (p / "manifest.json").read_text() for p in RELEASED}
    assert len(written) >= 5
    assert '"embedkit.tables.TableEmbedder"' in written["model-folder-c21f6d8-table-logreg"]
    assert '"embedkit.documents.Tokenizer"' in written["model-folder-c21f6d8-tfidf-logreg"]
    assert any(".safetensors" in "".join(f.name for f in p.rglob("*")) for p in RELEASED)


def test_packaged_resources_are_stored_by_name(contract):
    """GloVe (400k x 50) and MiniLM (90 MB) are named, not copied: those folders stay small."""
    sizes = contract[-1]
    for name in ("glove:logreg", "glove-seq:conv", "minilm:logreg", "minilm-tokens:attention"):
        assert sizes[name] < 2_000_000, (name, sizes[name])


@pytest.fixture(scope="session")
def finetuned(trec_slice, tmp_path_factory):
    """A tiny fine-tuned TransformerClassifier (1 epoch, 40 questions, 32 tokens), saved."""
    X, y, _ = trec_slice
    head = embedkit.TransformerClassifier(epochs=1, max_length=32, fine_tune="last_k", k=1)
    pipe = Pipeline([("features", "passthrough"), ("head", head)]).fit(X[:40], y[:40])
    return pipe, save(pipe, tmp_path_factory.mktemp("finetune") / "model")


def test_fine_tuned_encoder_round_trips_as_a_hugging_face_folder(finetuned, trec_slice, tmp_path):
    from transformers import AutoModel

    pipe, folder = finetuned
    docs = trec_slice[2]
    loaded = _in_fresh_process({"ft": str(folder)}, docs, tmp_path)["ft"]
    np.testing.assert_array_equal(loaded, pipe.predict_proba(docs))
    manifest = json.loads((folder / "manifest.json").read_text())
    encoder_dir = folder / manifest["root"]["state"]["dict"]["steps"][1]["tuple"][1]["folder"]
    encoder = AutoModel.from_pretrained(encoder_dir)  # a plain Hugging Face model folder
    assert (encoder_dir / "model.safetensors").is_file()
    trained = pipe[-1].module_.encoder.state_dict()
    assert all(np.array_equal(v.numpy(), trained[k].numpy()) for k, v in encoder.state_dict().items())
    restored = load(folder)[-1]
    assert restored.model == "all-minilm-l6-v2"  # a refit starts from the pretrained model again


def test_saving_a_fine_tuned_encoder_prints_no_progress_bar_of_transformers(finetuned, tmp_path, capfd):
    """transformers' "Writing model shards" bar once landed between tune's own lines."""
    pipe, _ = finetuned
    capfd.readouterr()
    save(pipe, tmp_path / "again")
    out, err = capfd.readouterr()
    assert "Writing model shards" not in out + err and "%|" not in err, err[-300:]
    from transformers.utils import logging as hf_logging

    assert hf_logging.is_progress_bar_enabled()  # the user's own setting is restored


def test_scikit_learn_steps_round_trip(sentences, tmp_path):
    """Nested pipelines, a feature union, scalers, SVD, trusted functions, stacking, regressors."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.ensemble import StackingClassifier
    from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
    from sklearn.pipeline import FeatureUnion, make_pipeline
    from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, StandardScaler
    from sklearn.svm import LinearSVC

    X = sentences
    y = np.array(["a", "b", "c"] * 14)[: len(X)]
    union = FeatureUnion([("words", embedkit.TfidfEmbedder()),
                          ("chars", embedkit.TfidfEmbedder(char_ngram_range=(2, 3)))])
    models = [
        make_pipeline(union, TruncatedSVD(8, random_state=0), FunctionTransformer(np.tanh),
                      StandardScaler(), LogisticRegressionCV(cv=2)),
        make_pipeline(embedkit.TfidfEmbedder(), MaxAbsScaler(), StackingClassifier(
            [("lr", LogisticRegression()), ("svc", LinearSVC())], cv=2)),
        make_pipeline(make_pipeline(embedkit.TfidfEmbedder(), TruncatedSVD(5, random_state=0)),
                      embedkit.MLPRegressor(epochs=2)),
    ]
    targets = [y, y, np.arange(len(X), dtype=float)]
    for i, (model, target) in enumerate(zip(models, targets, strict=True)):
        model.fit(X, target)
        again = load(save(model, tmp_path / str(i)))
        method = "predict_proba" if hasattr(model, "predict_proba") else "predict"
        np.testing.assert_array_equal(getattr(again, method)(X), getattr(model, method)(X))


def test_an_untrusted_function_is_refused_at_save(sentences, tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    pipe = make_pipeline(embedkit.TfidfEmbedder(n_components=4), FunctionTransformer(lambda X: X),
                         LogisticRegression()).fit(sentences, [0, 1] * 20)
    with pytest.raises(UntrustedTypeError, match="<lambda>.*not in embedkit's trusted list"):
        save(pipe, tmp_path / "model")
    assert not (tmp_path / "model").exists() and not list(tmp_path.iterdir())


# -- refusals -------------------------------------------------------------------------------
@pytest.fixture
def small_model(sentences, tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    pipe = make_pipeline(embedkit.TfidfEmbedder(), LogisticRegression()).fit(sentences, [0, 1] * 20)
    return pipe, save(pipe, tmp_path / "model")


def _edit_manifest(folder: Path, edit) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("old, new", [
    ("sklearn.linear_model.LogisticRegression", "os.system"),
    ('"function": "numpy.float32"', '"function": "builtins.eval"'),
])
def test_a_tampered_type_name_is_refused(small_model, old, new):
    _, folder = small_model
    text = (folder / "manifest.json").read_text()
    assert old in text
    (folder / "manifest.json").write_text(text.replace(old, new))
    name = new.split('"')[-2] if '"' in new else new
    with pytest.raises(UntrustedTypeError, match=f"{name!r}, which is not in embedkit's trusted"):
        load(folder)


class _Planted:
    def __reduce__(self):
        return (print, ("unpickled!",))


@pytest.mark.parametrize("name", ["extra.pkl", "arrays/0.npy", "objects/weights.json"])
def test_a_planted_pickle_is_refused(small_model, name, capsys):
    _, folder = small_model
    (folder / name).parent.mkdir(exist_ok=True)
    (folder / name).write_bytes(pickle.dumps(_Planted()))
    with pytest.raises(ValueError, match=f"holds a pickle file \\({name}\\)"):
        load(folder)
    assert "unpickled!" not in capsys.readouterr().out


def test_a_changed_or_unlisted_file_is_refused(small_model):
    _, folder = small_model
    (folder / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match="notes.txt, which embedkit.save did not write"):
        load(folder)
    (folder / "notes.txt").unlink()
    np.save(folder / "arrays" / "0.npy", np.zeros(3), allow_pickle=False)
    with pytest.raises(ValueError, match="arrays/0.npy changed since the model was saved"):
        load(folder)


def test_a_newer_format_version_is_refused(small_model):
    _, folder = small_model
    _edit_manifest(folder, lambda m: m.update(format_version=FORMAT_VERSION + 1))
    with pytest.raises(ValueError, match=f"format version {FORMAT_VERSION + 1}, by a newer "
                                         "embedkit.*Upgrade embedkit"):
        load(folder)


def test_a_folder_that_is_not_a_model_is_refused(tmp_path):
    with pytest.raises(ValueError, match=f"{tmp_path} is not an embedkit model folder \\(it has "
                                         "no manifest.json\\)"):
        load(tmp_path)
    with pytest.raises(FileNotFoundError, match="missing does not exist"):
        load(tmp_path / "missing")
    (tmp_path / "manifest.json").write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="not an embedkit model manifest"):
        load(tmp_path)


def test_an_interrupted_save_leaves_no_model_folder(small_model, monkeypatch, tmp_path):
    """A crash in the middle of writing (simulated) leaves neither a half-written folder nor a
    temporary one, and an existing model folder at the path is left as it was."""
    pipe, folder = small_model
    before = (folder / "manifest.json").read_text()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        save(pipe, tmp_path / "new")
    with pytest.raises(OSError, match="disk full"):
        save(pipe, folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert (folder / "manifest.json").read_text() == before
    monkeypatch.undo()
    assert load(folder).predict(["the cat"]).shape == (1,)


def test_save_replaces_only_a_model_folder_at_one_swap(small_model, tmp_path):
    """A folder of the user's that holds a manifest.json of its own is not a model folder: save
    refuses it. A model folder is replaced whole; the old one stays until the swap."""
    pipe, folder = small_model
    mine = tmp_path / "site"
    mine.mkdir()
    (mine / "manifest.json").write_text('{"name": "my web app", "icons": []}')
    assert is_model_folder(folder) and not is_model_folder(mine) and not is_model_folder(tmp_path / "no")
    with pytest.raises(FileExistsError, match="is a folder that is not an embedkit model folder"):
        save(pipe, mine)
    assert json.loads((mine / "manifest.json").read_text())["name"] == "my web app"
    inode = folder.stat().st_ino
    save(pipe, folder)
    assert folder.stat().st_ino != inode and load(folder).predict(["the cat"]).shape == (1,)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "site"]  # no temporary left


# -- a load racing a republish (issue 49) ------------------------------------------------------
@pytest.fixture
def two_saves(sentences, tmp_path):
    """Two different TF-IDF + LR models, the first published as ``out/model`` the way `tune`
    publishes its result, and the real republish of the second over it."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from embedkit.storage.outputs import publish_folder

    old = make_pipeline(embedkit.TfidfEmbedder(), LogisticRegression()).fit(
        sentences, [0, 1] * 20)
    new = make_pipeline(embedkit.TfidfEmbedder(ngram_range=(1, 2)), LogisticRegression(C=10)).fit(
        sentences[::-1], [0, 0, 1, 1] * 10)
    out = tmp_path / "out"
    publish_folder(out, lambda folder: save(old, folder / "model"))
    return old, new, out, lambda: publish_folder(out, lambda folder: save(new, folder / "model"))


def _probe(model, sentences) -> np.ndarray:
    return model.predict_proba(sentences + ["an unseen phrase", ""])


@pytest.mark.parametrize("moment", ["after the checks", "after the first array"])
def test_a_model_republished_while_it_loads_is_the_new_one_never_a_mix(two_saves, sentences,
                                                                        monkeypatch, moment):
    """A real republish (`publish_folder` swapping in another save) at a fixed moment of `load`:
    after the checksums were checked, or once the first array was read. The load reads the
    folder again and returns the new model, predicting exactly as it does; before, it built a
    model from the old manifest and the new arrays."""
    import embedkit.storage.persist as persist
    from embedkit.storage._codec import Reader

    old, new, out, republish = two_saves
    assert not np.array_equal(_probe(old, sentences), _probe(new, sentences))
    calls = []
    if moment == "after the checks":
        check = persist._check_files

        def hooked(*args):
            seen = check(*args)
            if not calls:
                calls.append(republish())
            return seen

        monkeypatch.setattr(persist, "_check_files", hooked)
    else:
        file = Reader._file

        def hooked(self, rel):
            found = file(self, rel)
            if not calls:
                calls.append(republish())
            return found

        monkeypatch.setattr(Reader, "_file", hooked)
    loaded = load(out / "model")
    assert len(calls) == 1  # the republish happened inside the load
    np.testing.assert_array_equal(_probe(loaded, sentences), _probe(new, sentences))


def test_a_folder_republished_at_every_reading_is_a_clear_error(two_saves, monkeypatch):
    import embedkit.storage.persist as persist

    _, _, out, republish = two_saves
    check = persist._check_files

    def hooked(*args):
        seen = check(*args)
        republish()
        return seen

    monkeypatch.setattr(persist, "_check_files", hooked)
    with pytest.raises(ValueError, match="changed while loading, 3 times in a row .*load it "
                                         "again once that is done"):
        load(out / "model")


def test_loads_beside_a_process_that_republishes_get_the_old_or_the_new_model(two_saves,
                                                                               sentences):
    """The same race with nothing staged: another process republishes the two models in turn
    (real `embedkit.save` + the tune output swap) while this one loads; every load predicts
    exactly as one of the two saves."""
    old, new, out, _ = two_saves
    models = out.parent / "models"
    save(old, models / "old")
    save(new, models / "new")
    script = (
        "import sys, time; from embedkit import load, save; from embedkit.storage.outputs import "
        "publish_folder\n"
        "pipes = [load(sys.argv[1] + '/new'), load(sys.argv[1] + '/old')]\n"
        "end = time.monotonic() + float(sys.argv[3]); i = 0\n"
        "while time.monotonic() < end:\n"
        "    publish_folder(sys.argv[2], lambda f: save(pipes[i % 2], f / 'model')); i += 1\n"
        "print(i)\n")
    child = subprocess.Popen([sys.executable, "-c", script, str(models), str(out), "6"],
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    expected = [_probe(old, sentences), _probe(new, sentences)]
    loads = errors = 0
    while child.poll() is None:
        try:
            got = _probe(load(out / "model"), sentences)
        except ValueError as err:
            assert "changed while loading" in str(err)
            errors += 1
            continue
        loads += 1
        assert any(np.array_equal(got, e) for e in expected)
    stdout, stderr = child.communicate()
    assert child.returncode == 0, stderr
    assert int(stdout) > 10 and loads > 10, (stdout, loads, errors)


def test_a_manifest_nested_past_the_stack_is_not_a_model_folder(tmp_path):
    """100,000 nested lists: json's reader would exhaust Python's stack (RecursionError)."""
    folder = tmp_path / "deep"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"format": "embedkit-model", "format_version": 1, '
                                          '"files": {}, "root": ' + "[" * 100_000 + "]" * 100_000
                                          + "}")
    assert not is_model_folder(folder)
    with pytest.raises(ValueError, match=r"is not an embedkit model folder \(its manifest.json "
                                         "is not valid JSON, or nests deeper"):
        load(folder)
    from typer.testing import CliRunner

    from embedkit.cli import app

    (tmp_path / "in.csv").write_text("text\nhello\n")
    for args, said in ((["predict", folder, tmp_path / "in.csv", "-o", tmp_path / "p.csv"],
                        "nests deeper than a manifest does"),
                       (["tune", "-f", tmp_path / "in.csv", "-o", tmp_path], "did not write")):
        result = CliRunner().invoke(app, [str(a) for a in args])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert said in " ".join(result.output.replace("│", " ").split())
    # deep enough for the decoding (two frames a level), not for json's reader: a clear error
    depth = int(sys.getrecursionlimit() * 0.7)
    (folder / "manifest.json").write_text('{"format": "embedkit-model", "format_version": 1, '
                                          '"files": {}, "root": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(ValueError, match="could not rebuild the model from its manifest.json "
                                         r"\(RecursionError"):
        load(folder)


def test_cli_predict(small_model, tmp_path):
    from typer.testing import CliRunner

    from embedkit.cli import app

    pipe, folder = small_model
    pd.DataFrame({"id": [1, 2], "body": ["the cat sat", "rates rose"]}).to_csv(
        tmp_path / "in.csv", index=False)
    out = tmp_path / "predictions.csv"
    result = CliRunner().invoke(app, ["predict", str(folder), str(tmp_path / "in.csv"), "-o",
                                      str(out), "--text-column", "body", "--id-column", "id",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    got = pd.read_csv(out)
    assert got.id.tolist() == [1, 2]
    assert got.label.tolist() == pipe.predict(["the cat sat", "rates rose"]).tolist()
    result = CliRunner().invoke(app, ["predict", str(tmp_path), str(tmp_path / "in.csv"), "-o",
                                      str(tmp_path / "p.csv")])
    words = " ".join(result.output.replace("│", " ").split())  # rich wraps the error in a box
    assert result.exit_code == 2 and "is not an embedkit model folder" in words, result.output
    assert f"It holds the model folder {folder}: pass that." in words  # a tune folder's model/




def test_remote_code_is_refused_at_save_and_at_load(tmp_path):
    """No model folder runs code shipped with a model: an estimator with trust_remote_code=True
    is refused at save, and a manifest edited to ask for it is refused at load (before any model
    is loaded). The embedder needs no fitting for this: a Pipeline counts as fitted when its
    last step is."""
    from sklearn.linear_model import LogisticRegression

    head = LogisticRegression().fit(np.eye(2), [0, 1])
    risky = Pipeline([("features", embedkit.TransformerEmbedder(trust_remote_code=True)),
                      ("head", head)])
    with pytest.raises(ValueError, match="trust_remote_code=True; embedkit model folders never"):
        save(risky, tmp_path / "risky")
    assert not (tmp_path / "risky").exists()
    folder = save(risky.set_params(features__trust_remote_code=False), tmp_path / "model")
    text = (folder / "manifest.json").read_text()
    assert '"trust_remote_code": false' in text
    (folder / "manifest.json").write_text(text.replace('"trust_remote_code": false',
                                                       '"trust_remote_code": true'))
    with pytest.raises(ValueError, match="trust_remote_code=True; embedkit model folders never"):
        load(folder)


def test_every_public_class_is_trusted_under_the_name_it_is_saved_as():
    """The trusted list is derived from the package's exports: a new representation or head is
    loadable as soon as it is exported, and nothing names a class that no longer exists."""
    from embedkit import heads, representations
    from embedkit.storage._codec import _name_of, _resolve
    from embedkit.storage.persist import RENAMED, TRUSTED_TYPES

    classes = [getattr(heads, n) for n in heads.__all__] + [
        getattr(representations, n) for n in representations.__all__]
    assert len(classes) >= 23
    for cls in classes:
        name = _name_of(cls, TRUSTED_TYPES, "class", "test")
        assert name.startswith("embedkit.") and _resolve(name) is cls
    for name in TRUSTED_TYPES - set(RENAMED):
        if name.startswith("embedkit."):
            assert isinstance(_resolve(name), type), name
    for old, new in RENAMED.items():
        assert old in TRUSTED_TYPES and isinstance(_resolve(new), type)


# -- issue 63: a write fault in a serializer's own words is a WriteError ------------------------
LIMITED_SAVE = """
import json, resource, signal, sys
from pathlib import Path
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from embedkit import TfidfEmbedder, save
from embedkit.heads.mlp import MLPClassifier
from embedkit.storage.files import WriteError

weights = sys.argv[1] == "weights"  # else a vocabulary whose arrays pass the limit first
n = 40 if weights else 3000
docs = [f"film {i} was good" if i % 2 else f"plot {i} was bad" for i in range(n)]
y = [i % 2 for i in range(n)]
head = MLPClassifier(epochs=2, hidden_layer_sizes=(256,), random_state=0) if weights else \
    LogisticRegression()
pipe = make_pipeline(TfidfEmbedder(), head).fit(docs, y)
old = save(pipe, Path(sys.argv[2]) / "old")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
said = {}
for name in ("old", "new"):
    try:
        save(pipe, Path(sys.argv[2]) / name)
    except WriteError as err:
        chain, cause = [], err.__cause__
        while cause is not None:
            chain.append(f"{type(cause).__name__}: {cause}")
            cause = cause.__cause__
        said[name] = {"errno": err.errno, "message": str(err), "causes": chain}
print(json.dumps(said))
"""


@pytest.mark.parametrize("what, first_fault", [
    ("weights", "SafetensorError: Error while serializing: I/O error: File too large (os error 27)"),
    ("arrays", "requested and"),  # numpy's short write, which carries no errno
])
def test_a_file_size_limit_met_by_the_weights_or_an_array_is_a_write_error(tmp_path, what,
                                                                           first_fault):
    """A real ``ulimit -f`` (RLIMIT_FSIZE, SIGXFSZ ignored) met by safetensors' weights or by
    numpy's arrays: the same `WriteError` as any other file (it named neither before, and
    safetensors' SafetensorError ended ``embedkit tune`` in a traceback); the earlier model
    folder is left as it was, and no temporary folder is left."""
    done = subprocess.run([sys.executable, "-c", LIMITED_SAVE, what, str(tmp_path)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    for name in ("old", "new"):
        path = tmp_path / name
        assert said[name]["errno"] == 27, said
        assert said[name]["message"].startswith(
            f"could not write {path}: a file grew past the largest this process may write (the "
            "file-size limit, `ulimit -f`, or the file system's own) ([Errno 27] File too large). "
            f"Nothing was written: {path} was left as it was. Raise the limit"), said
        assert said[name]["causes"][0] == "OSError: [Errno 27] File too large", said
        assert first_fault in said[name]["causes"][-1], said
    before = load(tmp_path / "old")
    assert before.predict(["film 3 was good"]).tolist() == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old"]  # nothing half-written


def test_a_full_disk_met_by_the_weights_is_a_write_error(tmp_path, monkeypatch):
    """ENOSPC as safetensors reports it (its own exception, the OS error in its message) is the
    same `WriteError` a full disk is for every other file."""
    import safetensors.torch
    from safetensors import SafetensorError
    from sklearn.pipeline import make_pipeline

    from embedkit.heads.mlp import MLPClassifier
    from embedkit.storage.files import WriteError

    docs = [f"film {i} was good" if i % 2 else f"plot {i} was bad" for i in range(40)]
    pipe = make_pipeline(embedkit.TfidfEmbedder(), MLPClassifier(epochs=2, random_state=0)).fit(
        docs, [i % 2 for i in range(40)])
    written = []

    def full(tensors, filename, metadata=None):
        written.append(Path(filename).name)
        raise SafetensorError("Error while serializing: I/O error: No space left on device "
                              "(os error 28)")

    monkeypatch.setattr(safetensors.torch, "save_file", full)
    with pytest.raises(WriteError) as caught:
        save(pipe, tmp_path / "model")
    assert written == ["module.safetensors"] and caught.value.errno == 28
    assert str(caught.value).startswith(
        f"could not write {tmp_path / 'model'}: the disk is full (no space left on the device) "
        f"([Errno 28] No space left on device). Nothing was written: {tmp_path / 'model'} was left "
        "as it was. Free some space there, or write somewhere else.")
    assert not list(tmp_path.iterdir())
