#!/usr/bin/env bash
# Builds and runs the whole test suite (doctest cases and lesson runs).
#
#   scripts/test.sh [CTEST ARGS]     e.g. scripts/test.sh -R softmax
#
# A filter that selects no test fails (--no-tests=error): a mistyped name
# never reports a pass. Ends with how long the tests took.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh fortunes-zh  # lessons 23, 24 and 25 (skipped without it)
scripts/build.sh
cd "${MHA_BUILD_DIR:-build}"
start=$(date +%s)
ctest --output-on-failure --no-tests=error -j "$(nproc)" "$@"
echo "tests ran in $(( $(date +%s) - start )) s"
