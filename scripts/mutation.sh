#!/usr/bin/env bash
# Mutation testing of the verdict's statistics (issue 46 item 6), with mutmut: each target
# module is mutated and every mutant run against that module's chosen FAST test files (no
# real model, no `slow` marker), so that a run takes minutes. Not in CI (docs/developing.md,
# "Mutation testing", gives the last results and the time each module took).
#
#   bash scripts/mutation.sh                  every target of scripts/mutation-targets.txt
#   bash scripts/mutation.sh "PATH[::FUNC,...] TEST_FILE ..."   only the targets given
#
# Each target runs in a copy of the working tree (src/, tests/, pyproject.toml) under
# $MUTATION_DIR (default: /tmp/recitation-mutation), so the repository gets no mutants/
# folder. Its results go to docs/mutation-results.json (the other targets' results are
# kept), and scripts/mutation_records.py writes the "Mutation testing" section of
# docs/developing.md from them and from scripts/mutation-equivalent.toml. The exit status
# is 1 when a module's score is below 90% of its non-equivalent mutants.
# MUTATION_JOBS: mutmut's worker processes (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-$REPO/.venv/bin/python}
MUTMUT=$(dirname "$PY")/mutmut
WORK=${MUTATION_DIR:-/tmp/recitation-mutation}
JOBS=${MUTATION_JOBS:-2}
RECORDS="$PY $REPO/scripts/mutation_records.py"

[[ -x $MUTMUT ]] || { echo "mutmut is not installed: bash scripts/setup.sh dev" >&2; exit 2; }
if (($#)); then
  targets=("$@")
else
  mapfile -t targets < <(grep -v -e '^\s*#' -e '^\s*$' scripts/mutation-targets.txt)
fi

for target in "${targets[@]}"; do
  read -r spec tests <<<"$target"
  path=${spec%%::*}
  [[ -f $path ]] || { echo "no such module: $path" >&2; exit 2; }
  for t in $tests; do [[ -f $t ]] || { echo "no such test file: $t" >&2; exit 2; }; done
  dir=$WORK/$(echo "$spec" | tr '/:,.' '____')
  rm -rf "$dir" && mkdir -p "$dir"
  cp -r src tests "$dir"/
  find "$dir" \( -name __pycache__ -o -name '*.egg-info' \) -prune -exec rm -rf {} +
  { cat pyproject.toml; echo; $RECORDS config "$target"; } >"$dir/pyproject.toml"
  mapfile -t globs < <($RECORDS globs "$target" | grep -v "^$" || true)
  echo "== $spec against $tests (log: $dir/mutmut.log)"
  start=$(date +%s)
  # mutmut exits 0 with survivors too; a failing clean run (a test failing unmutated) stops
  (cd "$dir" && "$MUTMUT" run --max-children "$JOBS" "${globs[@]}" >mutmut.log 2>&1) || {
    echo "mutmut failed on $spec; the end of $dir/mutmut.log:" >&2
    tail -c 3000 "$dir/mutmut.log" >&2
    exit 1
  }
  seconds=$(($(date +%s) - start))
  echo "   ${seconds} s"
  $RECORDS collect "$dir" "$target" "$seconds"
done
$RECORDS write
