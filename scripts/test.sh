#!/usr/bin/env bash
# Builds and runs the test suite (doctest cases and lesson runs).
#
#   scripts/test.sh [--all] [CTEST ARGS]     e.g. scripts/test.sh -R softmax
#
# Without --all the long tests (label "long": each lesson's default run and what
# reads it, the exercises' commands, the training lessons' seed sweeps, a real
# browser) are left out, and a filter says how many of them it matched; CI runs
# --all. A filter that selects no test fails (--no-tests=error): a mistyped name
# never reports a pass. Ends with how long the tests took.
set -euo pipefail
cd "$(dirname "$0")/.."
which=(-LE long)
what="the quick suite (--all adds the long tests)"
args=()
for a in "$@"; do
  if [[ "$a" == "--all" ]]; then
    which=()
    what="every test"
  else
    args+=("$a")
  fi
done
scripts/install-deps.sh fortunes-zh  # lessons 23, 24 and 25 (skipped without it)
scripts/build.sh
cd "${MHA_BUILD_DIR:-build}"
total() { ctest -N "$@" | sed -n 's/^Total Tests: //p'; }
if (( ${#which[@]} && ${#args[@]} )); then  # a filter: does it match long tests?
  quick=$(total "${which[@]}" "${args[@]}")
  long=$(( $(total "${args[@]}") - quick ))
  if (( long > 0 && quick == 0 )); then
    echo "scripts/test.sh ${args[*]}: only long tests match; run scripts/test.sh --all ${args[*]}" >&2
    exit 1
  elif (( long > 0 )); then
    echo "(${long} long tests that match are left out; --all runs them)"
  fi
fi
start=$(date +%s)
ctest --output-on-failure --no-tests=error -j "$(nproc)" "${which[@]}" "${args[@]}"
echo "tests ran in $(( $(date +%s) - start )) s: ${what}"
