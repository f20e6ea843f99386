#!/usr/bin/env bash
# The main job: install what is missing, build, and run every lesson in order.
#
#   scripts/lessons.sh [LESSON FLAGS]     e.g. scripts/lessons.sh --tiny
#
# The flags go to every lesson. Stops at the first lesson that fails, and
# ends with how long they all took.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh fortunes-zh  # lessons 23, 24 and 25: the Tang poems (tang300)
scripts/build.sh
lessons=$(cat build/lessons/order.txt)
start=$(date +%s%N)
for name in $lessons; do
  echo
  echo "######## lesson $name ########"
  "build/lessons/$name" "$@"
done
tenths=$(( ($(date +%s%N) - start) / 100000000 ))
echo
echo "all $(echo "$lessons" | wc -w) lessons ran and passed their self-checks in" \
     "$((tenths / 10)).$((tenths % 10)) s"
