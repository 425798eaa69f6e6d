"""embedkit.storage.files: every file or folder embedkit writes appears whole or not at all."""

from __future__ import annotations

import os

import pytest

from embedkit.storage.files import atomic_path


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


# -- rows that do not match the header (issue 49) ----------------------------------------------
