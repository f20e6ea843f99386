#!/usr/bin/env bash
# The main job: install what is missing, build, and run every lesson in order.
#
#   scripts/lessons.sh [LESSON FLAGS]     e.g. scripts/lessons.sh --tiny
#
# The flags go to every lesson. Stops at the first lesson that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
lessons=$(cat build/lessons/order.txt)
for name in $lessons; do
  echo
  echo "######## lesson $name ########"
  "build/lessons/$name" "$@"
done
echo
echo "all $(echo "$lessons" | wc -w) lessons ran and passed their self-checks"
