"""pipelines/benchmarks/device_check.py: the one call that measures every device cell keeps to
its limit, records each cell as it ends, and plans commands that exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.benchmarks import device_check


def test_the_plan_names_every_cell_with_a_script_that_exists(capsys, tmp_path):
    device_check.main(["--dry-run", "--output", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("not measured here: peers on the GPU")
    assert [line.split(" ")[0] for line in lines[1:]] == [c[0] for c in device_check.CELLS]
    for name, command, seconds in device_check.commands(tmp_path, quick=False):
        assert Path(command[1]).exists() and command[-2] == "--output"
        assert str(tmp_path / name) in command[-1] and seconds > 0
    assert sum(c[3] for c in device_check.CELLS[:3]) <= 8 * 60  # the claims fit 8 device minutes
    quick = dict((name, command) for name, command, _ in device_check.commands(tmp_path, quick=True))
    assert "cpu" in quick["bench-gpu"] and "--quick" in quick["tune-trec-3m"]
    rerun = device_check.commands(tmp_path, quick=False, cells=["bench-gpu", "tune-trec-3m"])
    assert [name for name, _, _ in rerun] == ["tune-trec-3m", "bench-gpu"]  # in the plan's order
    with pytest.raises(SystemExit, match="no cell \\['bench-cpu'\\]; the cells are tune-trec-3m"):
        device_check.main(["--dry-run", "--cells", "bench-cpu"])


def test_cells_run_in_order_within_the_limit_and_each_is_recorded_as_it_ends(tmp_path, monkeypatch):
    """Three real child processes: one that ends, one that would run past the limit (stopped
    there), and one for which no time is left (not started)."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "quick.py").write_text("import sys; print('done', sys.argv[1:])\n")
    (scripts / "slow.py").write_text("import time; print('slow', flush=True); time.sleep(60)\n")
    monkeypatch.setattr(device_check, "HERE", scripts)
    monkeypatch.setattr(device_check, "CELLS", (
        ("first", "quick.py", ["--a"], 1, ["--a"]),
        ("second", "slow.py", [], 2, []),
        ("third", "quick.py", [], 60, []),
    ))
    rows = device_check.run(tmp_path / "out", limit=4.0)
    assert [r["status"] for r in rows] == ["ok", "stopped at the limit", "not started"]
    assert "done ['--a', '--output'" in rows[0]["tail"] and rows[1]["seconds"] < 10
    logged = [json.loads(line) for line in (tmp_path / "out" / "device_check.jsonl").read_text().splitlines()]
    assert [r["cell"] for r in logged] == ["first", "second", "third"]
