"""run.sh: a user's relative paths mean the folder they ran it in, and the first set-up prints one
line per step with pip's noise in a log (shown only when a step fails).

The path test runs the real environment (`embedkit predict` on a small saved model, a few
seconds); the set-up tests run run.sh against a stand-in interpreter that creates a stand-in
environment and answers pip with the warnings this machine's pip prints, so they take well under
a second and install nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).parents[1]
RUN = ROOT / "run.sh"


def _set_up(venv: Path) -> bool:
    """Whether run.sh would start straight away (its stamp matches), rather than reinstall."""
    import hashlib

    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + RUN.read_bytes()).hexdigest()[:16]
    stamp = venv / ".embedkit-setup"
    return stamp.exists() and stamp.read_text().strip() == want


def test_embedkit_reads_and_writes_relative_paths_from_the_callers_folder(tmp_path):
    if not _set_up(Path(sys.prefix)):  # never reinstall packages under a running test suite
        pytest.skip("pyproject.toml or run.sh changed since the last set-up: run ./run.sh once")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import embedkit

    texts = ["a great film", "a dull film", "great acting", "dull plot"] * 5
    labels = ["pos", "neg", "pos", "neg"] * 5
    model = make_pipeline(embedkit.TfidfEmbedder(), LogisticRegression()).fit(texts, labels)
    work = tmp_path / "somewhere else"  # a space too: every path is quoted
    (work / "data").mkdir(parents=True)
    embedkit.save(model, work / "my model")
    pd.DataFrame({"text": ["great", "dull"]}).to_csv(work / "data" / "new.csv", index=False)
    env = {**os.environ, "EMBEDKIT_VENV": str(Path(sys.prefix))}
    run = subprocess.run([str(RUN), "embedkit", "predict", "my model", "data/new.csv", "-o", "out.csv"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert pd.read_csv(work / "out.csv").label.tolist() == ["pos", "neg"]
    assert not (ROOT / "out.csv").exists()


# ----------------------------------------------------------------------------------------------
# set-up, against a stand-in interpreter
# ----------------------------------------------------------------------------------------------

#: what `python` does here: create a stand-in venv, fail `import torch`, answer pip with the
#: noise a real install prints (the machine's pip config, setuptools' editable-install warning)
_PYTHON = """\
#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"; cp "$0" "$3/bin/python"
  printf '#!/usr/bin/env bash\\necho "cwd=$PWD"; echo "args=$*"\\n' > "$3/bin/embedkit"
  chmod +x "$3/bin/python" "$3/bin/embedkit"; exit 0
fi
if [ "$1" = "-c" ]; then
  case "$2" in *torch*) exit 1 ;; *) exit 0 ;; esac
fi
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  echo "WARNING: Location 'file:///opt/pypi-more/simple/six/' is ignored: it is neither a file" >&2
  echo "SetuptoolsDeprecationWarning: BuildBackendWarning: editable install" >&2
  echo "Successfully installed $*"
  if [ -n "$FAIL_ON" ]; then
    case "$*" in *"$FAIL_ON"*) echo "ERROR: no matching distribution" >&2; exit 1 ;; esac
  fi
  exit 0
fi
exit 3
"""


@pytest.fixture
def stand_in(tmp_path):
    python = tmp_path / "python"
    python.write_text(_PYTHON)
    python.chmod(0o755)
    venv = tmp_path / "venv"

    def run(*args, cwd=tmp_path, fail_on=""):
        env = {**os.environ, "PYTHON": str(python), "EMBEDKIT_VENV": str(venv), "FAIL_ON": fail_on}
        return subprocess.run([str(RUN), *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=60)

    return run, venv


def test_first_set_up_prints_one_line_per_step_and_keeps_pip_noise_in_the_log(stand_in, tmp_path):
    run, venv = stand_in
    done = run("embedkit", "tune", "--file", "reviews.csv")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert all(line.startswith("[setup] ") for line in lines), lines
    assert [line.split()[1] for line in lines] == ["creating", "upgrading", "installing", "installing",
                                                   "done"]
    assert "torch 2.13.0 (CPU)" in lines[2] and "warn" not in done.stderr.lower()
    log = (venv / "setup.log").read_text()
    assert "is ignored" in log and "BuildBackendWarning" in log and "-e .[dev]" in log
    # the command ran in the caller's folder, with the user's arguments as given
    assert done.stdout.splitlines() == [f"cwd={tmp_path}", "args=tune --file reviews.csv"]
    # set up once: the next call prints nothing of its own
    again = run("embedkit", "datasets")
    assert again.returncode == 0 and again.stderr == ""


def test_a_failing_set_up_step_shows_its_log_and_stops(stand_in):
    run, venv = stand_in
    done = run("embedkit", "datasets", fail_on="-e .[dev]")
    assert done.returncode == 1 and "args=" not in done.stdout
    assert "[setup] failed: installing embedkit" in done.stderr
    assert "ERROR: no matching distribution" in done.stderr  # the log, in full
    assert not (venv / ".embedkit-setup").exists()  # so the next call tries again


def test_docs_output_folder_is_relative_to_the_caller(stand_in, tmp_path):
    run, venv = stand_in
    assert run("embedkit", "datasets").returncode == 0  # set up
    # the stand-in python records how sphinx was called instead of building
    (venv / "bin" / "python").write_text(textwrap.dedent("""\
        #!/usr/bin/env bash
        echo "cwd=$PWD"; echo "args=$*"
        """))
    done = run("docs", "site", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"cwd={ROOT}" in done.stdout and f"docs {tmp_path}/site" in done.stdout
    assert "-W" in done.stdout.split() and "-E" in done.stdout.split()
