#!/usr/bin/env bash
# Configures (once) and builds the project in build/ (or $MHA_BUILD_DIR).
# Incremental after that. Ends with how long it took, so that a slower
# build shows.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${MHA_BUILD_DIR:-build}
start=$(date +%s)
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$dir"
echo "built in $(( $(date +%s) - start )) s ($dir/)"
