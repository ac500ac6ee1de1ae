#!/usr/bin/env bash
# ctest zpp_demo_quick: tools/demo.sh BUILD --quick must exit 0, write both JSON files and,
# where matplotlib is installed, the three plots (bytes, not the simulation's CPU time), and end with one summary line per mode.
set -uo pipefail
root=$1
build=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail() {
  echo "demo_quick_test: $*" >&2
  tail -40 "$log" >&2
  exit 1
}

bash "$root/tools/demo.sh" "$build" --quick >"$log" 2>&1 || fail "demo.sh exited $?"
out="$build/demo-quick"
for file in zpp-bench.json bits.json; do
  [[ -s "$out/$file" ]] || fail "$out/$file missing"
done
if python3 -c "import matplotlib" 2>/dev/null || /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  for png in off_node_vs_size step_volume error_vs_bits; do  # the sim: no time plotted
    [[ -s "$out/$png.png" ]] || fail "$out/$png.png missing"
    grep -q "plot: $out/$png.png" "$log" || fail "the demo does not say where $png.png is"
  done
fi
# The last lines: one per mode, each with the volume saved and the error, said once.
(($(grep -c "^== summary" "$log") == 1)) || fail "the summary is not printed exactly once"
summary=$(tail -5 "$log")
for mode in plain qwz8 qwz8+hpz qgz8/4 zero++; do
  grep -qE "^${mode//+/\\+} +inter-node volume [0-9.]+ of plain's 3.000 per step \( *[0-9.]+% saved\); rel. L2 error: weights [0-9.]+%, gradients [0-9.]+%$" \
    <<<"$summary" || fail "no closing summary line for $mode"
done
grep -q "PROJECTION" "$log" || fail "no projection"
echo "demo_quick_test: ok"
