#!/usr/bin/env bash
# The verdict's named breaks (issue 46 item 6), each applied by hand to a copy of the source
# and run against the fast test named for it, which must fail; and the hand-made mutants of
# Null.threshold_log10, which mutmut does not mutate (a property: mutmut 3 leaves decorated
# functions alone; scripts/mutation.sh), against the verdict's fast tests.
#
#   bash scripts/verdict-breaks.sh      exit 1 when a break or mutant passes its tests
#
# Each runs in a copy of src/ and tests/ under $BREAKS_DIR (default /tmp/recitation-breaks):
# the working tree is never edited. About a minute and a half on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-$REPO/.venv/bin/python}
WORK=${BREAKS_DIR:-/tmp/recitation-breaks}
failed=0

# break NAME FILE OLD NEW TEST...: NEW replaces OLD (exactly once) in a copy of FILE; the
# named tests must fail
break_() {
  local name=$1 file=$2 old=$3 new=$4
  shift 4
  rm -rf "$WORK" && mkdir -p "$WORK"
  cp -r src tests pyproject.toml "$WORK"/
  "$PY" - "$WORK/$file" "$old" "$new" <<'PY'
import sys
path, old, new = sys.argv[1:]
text = open(path, encoding="utf-8").read()
if text.count(old) != 1:
    sys.exit(f"{path}: the line to break is not there once: {old!r}")
open(path, "w", encoding="utf-8").write(text.replace(old, new))
PY
  if (cd "$WORK" && PYTHONPATH="$WORK/src" "$PY" -m pytest -q -x -p no:cacheprovider \
        -o addopts= -m "not slow and not model" "$@" >/dev/null 2>&1); then
    echo "NOT CAUGHT  $name (${*})"
    failed=1
  else
    echo "caught      $name"
  fi
}

D=src/recitation/verdict/decide.py
V=tests/verdict/test_verdict.py
# the control: unbroken, the tests pass (so a break is caught by its test, not by the copy)
rm -rf "$WORK" && mkdir -p "$WORK" && cp -r src tests pyproject.toml "$WORK"/
(cd "$WORK" && PYTHONPATH="$WORK/src" "$PY" -m pytest -q -p no:cacheprovider -o addopts= \
   -m "not slow and not model" $V tests/verdict/test_verdict_texts.py >/dev/null 2>&1) ||
  { echo "the unbroken copy fails its tests: nothing to check" >&2; exit 2; }
break_ "Bonferroni dropped (cut = ALPHA)" $D "cut = ALPHA / m" "cut = ALPHA" \
  "$V::test_break_bonferroni_dropped"
break_ "threshold exclusive (p < alpha / m)" $D "if t[2] <= cut]" "if t[2] < cut]" \
  "$V::test_break_bonferroni_threshold_is_inclusive_at_the_boundary"
break_ "controls rule off by one (controls > 1)" $D \
  "_with_controls if i.controls else" "_with_controls if i.controls > 1 else" \
  "$V::test_break_controls_rule_off_by_one"
break_ "reproduction beyond controls that reproduced none, whatever p" $D \
  'if any(t[0] == "extraction" for t in hits):' \
  'if any(t[0] == "extraction" for t in hits) or any(p[0].reproduced > p[1].reproduced == 0 for p in (i.prefix, i.recap) if p is not None):' \
  "$V::test_break_reproduction_beyond_zero_controls_is_not_enough"

T=src/recitation/verdict/types.py
ORIG='return math.log10(self.alpha / self.n) if self.n else None'
for new in 'return math.log10(self.alpha * self.n) if self.n else None' \
           'return math.log10(self.alpha / self.n) if not self.n else None' \
           'return math.log10(self.alpha / self.n) if self.n else ""' \
           'return None' \
           'return math.log(self.alpha / self.n) if self.n else None' \
           'return math.log10(self.n / self.alpha) if self.n else None'; do
  break_ "Null.threshold_log10: $new" $T "$ORIG" "$new" \
    tests/verdict/test_verdict_texts.py $V
done
rm -rf "$WORK"
exit $failed
