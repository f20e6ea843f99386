#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan in
# build-fuzz/, then runs each for SECONDS (default 30) from its committed
# seed corpus (fuzz/corpus/<target>/, copied, so that the commit stays as it
# is). A crash, a leak, a sanitizer report, an input taking over 2 s or
# 2 GB, or an exception other than std::invalid_argument fails the run; the
# input that did it is left in build-fuzz/findings/ and named here.
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]   targets: npy state_dict masks
#                                            model tokens corpus vocab lesson_flags
#                                            forward_flags
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -ge 1 ] ||
  { echo "fuzz.sh: SECONDS must be a whole number from 1, not '$seconds'" >&2; exit 2; }
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(npy state_dict masks model tokens corpus vocab lesson_flags forward_flags)
scripts/install-deps.sh clang-14 libfuzzer-14-dev
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMHA_FUZZ=ON
fi
cmake --build build-fuzz
mkdir -p build-fuzz/findings
failed=()
for t in "${targets[@]}"; do
  [ -x "build-fuzz/fuzz/fuzz_$t" ] || { echo "fuzz.sh: no target '$t'" >&2; exit 2; }
  dict=$PWD/fuzz/npy.dict mask=0
  [[ "$t" == *flags ]] && dict=$PWD/fuzz/flags.dict mask=3  # the programs' own lines: muted
  [[ "$t" == corpus || "$t" == vocab ]] && dict=$PWD/fuzz/text.dict  # UTF-8, JSON, '%' 
  work=$PWD/build-fuzz/corpus/$t
  rm -rf "$work" && mkdir -p "$work" && cp fuzz/corpus/"$t"/* "$work"/
  echo "== fuzz_$t: $seconds s from $(ls fuzz/corpus/"$t" | wc -l) seeds"
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
       "build-fuzz/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=2 -rss_limit_mb=2048 \
       -max_len=4096 -dict="$dict" -close_fd_mask=$mask -print_final_stats=1 \
       -artifact_prefix="$PWD/build-fuzz/findings/$t-" "$work" > "build-fuzz/fuzz_$t.log" 2>&1; then
    failed+=("$t")
    echo "fuzz.sh: fuzz_$t FOUND something (build-fuzz/fuzz_$t.log):" >&2
    grep -E "ERROR|SUMMARY|Test unit written|terminate|deadly" "build-fuzz/fuzz_$t.log" | head -8 >&2
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build-fuzz/fuzz_$t.log" |
      tr '\n' ' ' | sed 's/^/   /'; echo
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in ${failed[*]}; inputs in build-fuzz/findings/" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets, $seconds s each, nothing found"
