#!/usr/bin/env bash
# Builds and runs the test suite (doctest cases and lesson runs).
#
#   scripts/test.sh [--all] [CTEST ARGS]     e.g. scripts/test.sh -R softmax
#
# Without --all the long tests (label "long": every lesson at its default sizes
# and what reads those runs, the exercises' commands, the training lessons' seed
# sweeps, a real browser) are left out; CI runs --all. A filter that selects no
# test fails (--no-tests=error): a mistyped name never reports a pass. Ends with
# how long the tests took.
set -euo pipefail
cd "$(dirname "$0")/.."
which=(-LE long)
what="the quick suite (--all adds the long tests)"
if [[ "${1:-}" == "--all" ]]; then
  shift
  which=()
  what="every test"
fi
scripts/install-deps.sh fortunes-zh  # lessons 23, 24 and 25 (skipped without it)
scripts/build.sh
cd "${MHA_BUILD_DIR:-build}"
total() { ctest -N "$@" | sed -n 's/^Total Tests: //p'; }
if (( ${#which[@]} && $# )) && [[ "$(total "${which[@]}" "$@")" == 0 ]] \
   && [[ "$(total "$@")" != 0 ]]; then
  echo "scripts/test.sh $*: only long tests match; run scripts/test.sh --all $*" >&2
  exit 1
fi
start=$(date +%s)
ctest --output-on-failure --no-tests=error -j "$(nproc)" "${which[@]}" "$@"
echo "tests ran in $(( $(date +%s) - start )) s: ${what}"
