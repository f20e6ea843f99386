#!/usr/bin/env bash
# Checks one workbook exercise: builds workbook/NN_name.cpp with its checker
# and runs it against the core on the lesson's sizes, --tiny's, odd sizes and
# masks. Prints each case, then the first that fails (its shapes, the first
# wrong element, a hint) or "all N cases pass"; exits 0 only then.
#   scripts/check-exercise.sh 05        (or: softmax, 05_softmax, 5)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${MHA_BUILD_DIR:-build}
all=$(cd workbook && ls [0-9][0-9]_*.cpp | sed 's/\.cpp$//')
numbers=$(echo "$all" | cut -c1-2 | tr '\n' ' ' | sed 's/ $//')
if [ $# -ne 1 ]; then
  echo "usage: scripts/check-exercise.sh NN (one of: $numbers) or its name" >&2
  exit 2
fi
found=
for name in $all; do
  nn=${name%%_*}
  if [ "$1" = "$nn" ] || [ "$1" = "${nn#0}" ] || [ "$1" = "$name" ] ||
     [ "$1" = "${name#*_}" ]; then
    found=$name
  fi
done
if [ -z "$found" ]; then  # a part of one name only: "backward"
  part=$(echo "$all" | grep -F -- "$1" || true)
  if [ -n "$part" ] && [ "$(echo "$part" | wc -l)" -eq 1 ]; then found=$part; fi
fi
if [ -z "$found" ]; then
  echo "check-exercise: no exercise '$1'; one of $numbers (or a name: ls workbook)" >&2
  exit 2
fi
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cmake --build "$dir" --target "exercise_$found" > "$log" 2>&1; then
  grep -v '^\[[0-9]*/[0-9]*\]' "$log" >&2 || true
  echo "workbook/$found.cpp does not compile (the errors are above)" >&2
  exit 1
fi
exec "$dir/workbook/exercise_$found"
