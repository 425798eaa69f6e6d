"""Shared fixtures: real data, loaded once per session, sliced small."""

from __future__ import annotations

import collections
import os

import numpy as np
import pandas as pd
import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

#: short English documents every representation can fit on with default parameters
SENTENCES = [
    "the cat sat on the mat", "the dog sat on the log", "a cat and a dog played in the garden",
    "stocks fell sharply as markets opened", "the bank raised interest rates again",
    "investors sold shares after the profit warning", "the team won the final match",
    "the striker scored twice in the second half", "fans cheered as the players celebrated",
    "the new phone has a faster chip", "software updates fixed the security flaw",
    "the film won an award for best director", "the actor starred in a new comedy",
    "voters elected a new prime minister", "the government announced a tax plan",
    "parliament debated the new law", "the cat chased the dog around the garden",
    "markets rallied after the bank cut rates", "the coach praised the team defence",
    "the singer released a new album this week", "the minister resigned after the vote",
    "a new chip makes the laptop faster", "the dog slept on the mat all day",
    "shares rose as profits beat forecasts", "the match ended in a draw",
    "critics praised the film and its music", "the election campaign started today",
    "engineers built a faster network", "the player signed a new contract",
    "the album topped the charts", "rates and taxes worry investors",
    "the garden was full of flowers", "the law passed after a long debate",
    "the laptop battery lasts all day", "the band played a new song",
    "the team lost the first match", "the company reported record profit",
    "the cat and the dog are friends", "users complained about the update",
    "the director is filming a sequel",
]


#: files of many cheap, independent tests, handed to the workers one test at a time to balance
#: them; every other file runs whole on one worker (`./run.sh test` uses pytest-xdist's
#: loadgroup), so its module- and session-scoped fixtures (model loads, a Dask cluster, a tuning
#: run) are built once, not once per worker
SPREAD = {"tests/test_contract.py", "tests/test_hostile.py"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        file = item.nodeid.split("::")[0]
        if file not in SPREAD and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(file))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """Under ``--dist loadgroup`` a grouped test's id ends with its group (``...@group``);
    where a pytest / pytest-xdist pair silently drops it (pytest 9.2 with pytest-xdist 3.8),
    every worker would build every file's session fixtures: stop before any test runs."""
    grouped = [i for i in ids if i.split("::")[0] not in SPREAD]
    if node.config.getoption("dist", "no") == "loadgroup" and grouped and not any(
            "@" in i for i in grouped):
        pytest.exit(f"pytest-xdist did not group the tests by xdist_group under pytest "
                    f"{pytest.__version__}; install the versions pyproject.toml's dev extra pins",
                    returncode=3)


@pytest.fixture(scope="session")
def sentences():
    return list(SENTENCES)


@pytest.fixture(scope="session")
def bbc():
    from embedkit.data.datasets import load_dataset

    return load_dataset("bbc-news")


@pytest.fixture(scope="session")
def bbc_split(bbc):
    """Stratified 80/20 split of the full BBC News corpus (seed 0)."""
    from sklearn.model_selection import train_test_split

    train, test = train_test_split(bbc, test_size=0.2, stratify=bbc.label, random_state=0)
    return train, test


@pytest.fixture(scope="session")
def corpus():
    """Two topics with a fixed random word order: a few hundred short documents (the static
    embedders' training tests; `test_io.py` has a `corpus` of its own, which wins there)."""
    rng = np.random.default_rng(0)
    pets = "cat dog pet animal puppy kitten fur paw vet leash".split()
    money = "stock bond market price trade bank fund share profit loss".split()
    docs = []
    for i in range(300):
        vocab = pets if i % 2 == 0 else money
        docs.append(" ".join(rng.choice(vocab, size=12)))
    return docs


@pytest.fixture(scope="session")
def tweets():
    """A stratified slice of vader-tweets: 600 training and 300 test tweets."""
    from sklearn.model_selection import train_test_split

    from embedkit.data.datasets import load_dataset

    df = load_dataset("vader-tweets")
    train, rest = train_test_split(df, train_size=600, stratify=df["label"], random_state=0)
    test, _ = train_test_split(rest, train_size=300, stratify=rest["label"], random_state=0)
    return (train["text"].to_numpy(object), train["label"].to_numpy(),
            test["text"].to_numpy(object), test["label"].to_numpy())


@pytest.fixture(scope="session")
def labels():
    """Three classes for the 24-row batches of ``_sequence_data.random_sequences`` / ``random_ids``."""
    return np.arange(24) % 3


@pytest.fixture(scope="session")
def negation():
    """``(train, test)`` of ``_sequence_data.negation_data``: 500 and 300 seeded reviews."""
    from _sequence_data import negation_data

    return negation_data(500, seed=0), negation_data(300, seed=1)


def _write_glove_text(path, words, vectors, opener=open):
    with opener(path, "wt", encoding="utf-8") as fh:
        for w, v in zip(words, vectors, strict=True):
            fh.write(w + " " + " ".join(f"{x:.6f}" for x in v) + "\n")
    return path


@pytest.fixture(scope="session")
def write_glove_text():
    """``write(path, words, vectors, opener=open)``: a GloVe text file (opener: gzip.open, ...)."""
    return _write_glove_text


@pytest.fixture()
def toy_vectors(tmp_path):
    """A 4-word, 2-d GloVe text file and its ``{word: vector}``."""
    words = ["a", "b", "c", "d"]
    vectors = np.array([[1, 0], [0, 1], [1, 1], [2, -1]], dtype=np.float32)
    return _write_glove_text(tmp_path / "toy.txt", words, vectors), dict(zip(words, vectors, strict=True))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="session")
def _blas_threads():
    """Under pytest-xdist each worker keeps BLAS / OpenMP to one thread: the workers already
    share the cores, and a spinning thread pool per worker on top slows small matrix work by an
    order of magnitude."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    from threadpoolctl import threadpool_limits

    # the share a parent gives its worker: what embedkit's thread policy (`plan_threads`, the
    # Tuner's, compare's) reads as this process's cores
    os.environ["OMP_NUM_THREADS"] = "1"
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(autouse=True)
def _torch_threads():
    """Every test starts with one torch intra-op thread: tiny test models run fastest, and
    steadiest on a shared machine, on one. Set before each test, not once per session: a test
    that leaves two behind (a benchmark's ``--threads``) would otherwise make every later torch
    test on its worker spin two OpenMP threads against the other worker, 40-80 s for a
    one-second fit."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dev dependency
        yield
        return
    torch.set_num_threads(1)
    yield


def _hostile_stats() -> dict:
    """``test_hostile.STATS`` where this process ran that file, else an empty dict."""
    import sys

    hostile = sys.modules.get("test_hostile") or sys.modules.get("tests.test_hostile")
    return getattr(hostile, "STATS", None) or {}


#: the hostile-input counts the pytest-xdist workers sent back (`pytest_testnodedown`)
_GATHERED: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


def pytest_sessionfinish(session):
    """A pytest-xdist worker hands its hostile-input counts to the controller."""
    if hasattr(session.config, "workeroutput") and _hostile_stats():
        session.config.workeroutput["hostile"] = {k: dict(v) for k, v in _hostile_stats().items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for name, counts in getattr(node, "workeroutput", {}).get("hostile", {}).items():
        _GATHERED[name].update(counts)


def pytest_terminal_summary(terminalreporter):
    """The hostile-input suite's counts per estimator, when it ran (here or in the workers)."""
    stats = _hostile_stats() or _GATHERED
    if not stats:
        return
    keys = ("cases", "finite outputs", "clear errors", "unexpected")
    terminalreporter.section("hostile-input cases per estimator")
    terminalreporter.write_line(f"{'estimator':<26}" + "".join(f"{k:>16}" for k in keys))
    for name in sorted(stats):
        terminalreporter.write_line(f"{name:<26}" + "".join(f"{stats[name][k]:>16}" for k in keys))
    total = {k: sum(s[k] for s in stats.values()) for k in keys}
    terminalreporter.write_line(f"{'total':<26}" + "".join(f"{total[k]:>16}" for k in keys))


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """One headless Chromium per session (tests/_browser.py installs it where it is missing)."""
    from _browser import start_chromium

    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


@pytest.fixture
def reviews() -> pd.DataFrame:
    """A review export: two text columns, a categorical and a numeric one, with missing values,
    beside the label and a split column."""
    return pd.DataFrame({
        "title": ["Lovely dress", "Poor fit", "Great colour", None, "Too small",
                  "Soft and warm", "Cheap zip", "Perfect"],
        "body": ["fits well and looks great on me", "the seams came apart after one wash",
                 "bright and soft fabric, very happy", "returned it the same day it came",
                 "runs two sizes small, order up", "lovely for the cold mornings",
                 "the zip broke within the week", ""],
        "department": ["Dresses", "Tops", "Dresses", "Tops", None, "Knits", "Tops", " "],
        "age": [34, 51, None, 28, 45, 62, 39, 30],
        "stars": ["5", "2", "4", "1", "2", "5", "1", "5"],
        "label": [1, 0, 1, 0, 0, 1, 0, 1],
        "split": ["train"] * 6 + ["test"] * 2,
    })
