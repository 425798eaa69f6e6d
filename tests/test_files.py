"""embedkit.storage.files: every file or folder embedkit writes appears whole or not at all."""

from __future__ import annotations

import os
import shutil
import signal
import time
import uuid
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from embedkit.storage.files import atomic_path, publish, sweep


def test_atomic_path_keeps_the_old_file_on_error(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(KeyError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise KeyError("crash")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.txt"]
    with atomic_path(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new" and os.listdir(tmp_path) == ["out.txt"]


def test_atomic_path_swaps_a_folder_and_shows_the_old_one_before_removing_it(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "old.txt").write_text("old")
    seen = []
    with atomic_path(target, on_replaced=lambda old, new: seen.append(
            (sorted(os.listdir(old)), sorted(os.listdir(new))))) as tmp:
        assert tmp.name.startswith(f".out.{os.getpid()}-") and tmp.name.endswith(".tmp")
        tmp.mkdir()
        (tmp / "new.txt").write_text("new")
    assert seen == [(["old.txt"], ["new.txt"])]
    assert os.listdir(target) == ["new.txt"] and os.listdir(tmp_path) == ["out"]


# -- one publication of a folder, one sweeper of what killed runs left -------------------------
DEAD = 2 ** 22 + 12345  # above any process id Linux gives (pid_max is at most 2 ** 22)


def _leftover(target, pid: int, files: dict, kind: str = "tmp"):
    """A temporary of ``target`` as process ``pid`` would have left it, holding ``files``."""
    folder = target.with_name(f".{target.name}.{pid}-{uuid.uuid4().hex[:8]}.{kind}")
    folder.mkdir()
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_publish_builds_aside_and_swaps_in_or_leaves_the_old_folder(tmp_path):
    target = tmp_path / "out"
    assert publish(target, lambda tmp: (tmp / "a.txt").write_text("one")) == target
    seen = []

    def failing(tmp):
        seen.append(tmp)
        assert tmp.parent == tmp_path and tmp.name.startswith(f".out.{os.getpid()}-")
        (tmp / "a.txt").write_text("half")
        raise KeyError("crash")

    with pytest.raises(KeyError):
        publish(target, failing)
    assert (target / "a.txt").read_text() == "one" and os.listdir(tmp_path) == ["out"]
    assert not seen[0].exists()
    publish(target, lambda tmp: (tmp / "b.txt").write_text("two"))
    assert os.listdir(target) == ["b.txt"] and os.listdir(tmp_path) == ["out"]


def test_publish_reuses_a_folder_that_will_do_and_replaces_one_that_will_not(tmp_path):
    target = tmp_path / "cache"
    good = lambda folder: (folder / "data").is_file() and (folder / "data").read_text() == "ok"  # noqa: E731
    builds = []

    def build(tmp):
        builds.append(tmp)
        (tmp / "data").write_text("ok")

    publish(target, build, reuse=good)
    publish(target, build, reuse=good)
    assert len(builds) == 1  # the second found it
    (target / "data").write_text("damaged")
    publish(target, build, reuse=good)
    assert len(builds) == 2 and (target / "data").read_text() == "ok"
    assert os.listdir(tmp_path) == ["cache"]


def test_a_copy_another_process_published_during_the_build_is_the_one_kept(tmp_path):
    """Two processes building one cache folder at once: the first published stays, the second
    drops its own, whether the folder appears before its swap or is found by its rename."""
    target = tmp_path / "cache"
    good = lambda folder: (folder / "data").is_file()  # noqa: E731

    def theirs_first(tmp):
        other = tmp_path / "other"
        other.mkdir()
        (other / "data").write_text("theirs")
        os.replace(other, target)  # the other process's rename, while this one builds
        (tmp / "data").write_text("mine")

    publish(target, theirs_first, reuse=good)
    assert (target / "data").read_text() == "theirs" and os.listdir(tmp_path) == ["cache"]
    shutil.rmtree(target)
    rename = os.replace

    def theirs_just_before_mine(source, destination):
        if Path(destination) == target and not target.exists():  # their rename came first
            other = tmp_path / "other"
            other.mkdir()
            (other / "data").write_text("theirs")
            rename(other, target)
        return rename(source, destination)  # a rename onto a folder that is not empty: refused

    with mock.patch("os.replace", theirs_just_before_mine):
        publish(target, lambda tmp: (tmp / "data").write_text("mine"), reuse=good)
    assert (target / "data").read_text() == "theirs" and os.listdir(tmp_path) == ["cache"]
    with pytest.raises(OSError), mock.patch("os.replace", theirs_just_before_mine):
        shutil.rmtree(target)  # without reuse the refused rename is an error, as any other
        publish(target, lambda tmp: (tmp / "data").write_text("mine"))


def test_sweep_removes_dead_runs_leftovers_and_never_a_live_ones(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    _leftover(target, DEAD, {"part": "half"})
    _leftover(target, 10 ** 20, {"part": "a process id no system gives"})
    dead_file = target.with_name(f".{target.name}.{DEAD}-3d4e5f.probe")
    dead_file.write_text("")
    live = _leftover(target, os.getpid(), {"part": "in progress"})
    parent = _leftover(target, os.getppid(), {"part": "in progress"})
    other = _leftover(tmp_path / "outer", DEAD, {"part": "another target's"})
    sweep(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["out", live.name, parent.name, other.name])


def test_sweep_keeps_a_leftover_holding_a_file_found_nowhere_else(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    (target / "sub").mkdir()
    (target / "sub" / "deep.txt").write_text("deep")
    ours = {"board.md", "model"}
    copies = _leftover(target, DEAD, {"board.md": "half", "model/w": "x", ".model.77-ab.tmp/w": "x",
                                      "notes.txt": "mine", "sub/deep.txt": "deep"})
    os.link(target / "notes.txt", copies / "linked.txt")  # the same file, under another name
    os.link(target / "notes.txt", target / "linked.txt")
    only = _leftover(target, DEAD, {"board.md": "half", "notes.txt": "changed since"})
    lost = _leftover(target, DEAD, {"gone.txt": "the user deleted it from out/ since"})
    tmp_of_theirs = _leftover(target, DEAD, {".gone.txt.77-ab.tmp": "not a temporary of ours"})
    sweep(target, ours=ours)
    assert not copies.exists()
    assert only.exists() and lost.exists() and tmp_of_theirs.exists()
    sweep(target)  # every file ours (a cache built again): nothing is kept
    assert os.listdir(tmp_path) == ["out"]


def test_sweep_puts_back_a_folder_a_killed_swap_left_aside(tmp_path):
    """Where the system has no atomic exchange, the old folder is renamed aside first: a kill
    before the new one is renamed in leaves no folder, and the next sweep puts the old back."""
    target = tmp_path / "out"
    old = _leftover(target, DEAD, {"a.txt": "old"}, kind="old")
    half = _leftover(target, DEAD, {"a.txt": "new, not yet swapped in"})
    sweep(target, ours={"a.txt"})
    assert (target / "a.txt").read_text() == "old" and not old.exists() and not half.exists()
    assert os.listdir(tmp_path) == ["out"]


def _publish_forever(target, start: int):
    """Publish folders whose two files hold the same generation number, one after another."""
    for generation in range(start, start + 10_000):
        def build(tmp, g=generation):
            (tmp / "first").write_text(str(g))
            for k in range(20):  # some files between the two: a kill lands inside the build too
                (tmp / f"filler{k}").write_bytes(os.urandom(1 << 12))
            (tmp / "second").write_text(str(g))
        publish(target, build, ours={"first", "second", *(f"filler{k}" for k in range(20))})


def test_a_kill_at_any_moment_leaves_the_old_folder_or_the_new_and_the_next_publish_sweeps(tmp_path):
    """A child publishing in a loop is killed (SIGKILL) at seeded random moments: the folder
    is always one whole generation, and what the dead children left goes with the next publish.
    Kills go on until more than five landed mid-publish (a leftover) and more than five
    generations were seen, at most 200: on busy cores fewer of twenty kills land inside a write."""
    target = tmp_path / "out"
    publish(target, lambda tmp: [(tmp / n).write_text("0") for n in ("first", "second")])
    rng = np.random.default_rng(0)
    generations, leftovers, trial = set(), 0, 0
    while (len(generations) <= 5 or leftovers <= 5) and trial < 200:
        trial += 1
        pid = os.fork()
        if pid == 0:  # the child: publish until killed
            try:
                _publish_forever(target, 1 + trial * 10_000)
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.01, 0.15))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        leftovers += len(os.listdir(tmp_path)) > 1
        first, second = (target / "first").read_text(), (target / "second").read_text()
        assert first == second
        generations.add(first)
    assert len(generations) > 5 and leftovers > 5  # kills at many moments
    publish(target, lambda tmp: (tmp / "first").write_text("last"))
    assert os.listdir(tmp_path) == ["out"] and os.listdir(target) == ["first"]


# -- rows that do not match the header (issue 49) ----------------------------------------------
