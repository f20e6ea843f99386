#!/usr/bin/env bash
# Builds everything with AddressSanitizer + UBSan in build-asan/ and runs the
# whole test suite (which runs every lesson at --tiny and at the default
# sizes) under it. Any finding stops the program and fails its test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ ! -f build-asan/CMakeCache.txt ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMHA_SANITIZE=ON
fi
cmake --build build-asan
cd build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure --no-tests=error -j "$(nproc)" "$@"
