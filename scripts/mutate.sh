#!/usr/bin/env bash
# Mutation testing: each mutant of scripts/mutants.txt is a one-line bug put
# into a scratch copy of the repository (build-mutate/src, never the real
# sources), which is rebuilt (build-mutate/build, kept between mutants and
# runs, so a rebuild is one file and the links) and tested. A mutant is
# killed when a test fails: first the tests its entry names, with
# --stop-on-failure; if they all pass, the whole suite before it is called
# survived.
#
#   scripts/mutate.sh              every mutant (the first run builds the copy
#                                  from nothing: about 10 minutes on 2 cores;
#                                  then a mutant its tests kill takes 1-20 s,
#                                  one they miss a whole suite, 3-5 minutes)
#   scripts/mutate.sh REGEX        the mutants whose name matches (a bash =~ regex)
#   scripts/mutate.sh --list       their names, files and tests, nothing run
#
# Prints each mutant's name, killed / survived / did not build, the test that
# killed it and the seconds it took, then `mutants killed: N/M`; exits 1 if
# one survived or did not build. A snippet that no longer occurs exactly once
# in its file stops the run before anything is built (the list cannot rot).
# With ccache installed (apt-get install ccache), putting a mutated file back
# is a cache hit, not a second compile. Not part of .ci/run: too slow.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LIST=$ROOT/scripts/mutants.txt
WORK=$ROOT/build-mutate
COPY=$WORK/src
BUILD=$WORK/build

only=""
list_only=false
case "${1:-}" in
  --list) list_only=true ;;
  -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) only=$1 ;;
esac

# The list: blocks of `name`, `file`, `tests`, optionally `build` (ninja
# targets that the tests need; mha_tests when not given), `from` and `to`,
# each keyword followed by its value (the rest of the line, leading spaces
# dropped). Parsed into parallel arrays.
names=() files=() tests=() targets=() froms=() tos=()
flush() {
  if [ -n "$name" ]; then
    if [ -z "$file" ] || [ -z "$test" ] || [ -z "$from" ] || [ -z "$to" ]; then
      echo "mutants.txt: mutant '$name' needs file, tests, from and to" >&2
      exit 2
    fi
    names+=("$name") files+=("$file") tests+=("$test") targets+=("${target:-mha_tests}")
    froms+=("$from") tos+=("$to")
  fi
  name="" file="" test="" target="" from="" to=""
}
name=""
flush
while IFS= read -r line || [ -n "$line" ]; do
  line=${line#"${line%%[![:space:]]*}"}  # leading spaces
  [ -z "$line" ] || [ "${line:0:1}" = "#" ] && continue
  key=${line%%[[:space:]]*}
  value=${line#"$key"}
  value=${value#"${value%%[![:space:]]*}"}
  case "$key" in
    name) flush; name=$value ;;
    file) file=$value ;;
    tests) test=$value ;;
    build) target=$value ;;
    from) from=$value ;;
    to) to=$value ;;
    *) echo "mutants.txt: unknown keyword '$key' in: $line" >&2; exit 2 ;;
  esac
done <"$LIST"
flush

# The selected mutants, and every snippet checked against the real sources.
selected=()
for i in "${!names[@]}"; do
  [ -z "$only" ] || [[ "${names[$i]}" =~ $only ]] || continue
  selected+=("$i")
done
if [ "${#selected[@]}" -eq 0 ]; then
  echo "no mutant matches '$only'" >&2
  exit 2
fi
bad=0
for i in "${selected[@]}"; do
  n=$(python3 - "$ROOT/${files[$i]}" "${froms[$i]}" <<'EOF'
import sys
try:
    print(open(sys.argv[1], encoding="utf-8").read().count(sys.argv[2]))
except OSError:
    print("no file")
EOF
)
  if [ "$n" != 1 ]; then
    echo "mutant ${names[$i]}: '${froms[$i]}'" >&2
    echo "  occurs $n times in ${files[$i]}, not once" >&2
    bad=1
  fi
done
[ "$bad" -eq 0 ] || exit 2
if $list_only; then
  for i in "${selected[@]}"; do
    printf '%-33s %-36s %s\n' "${names[$i]}" "${files[$i]}" "${tests[$i]}"
  done
  exit 0
fi

# The scratch copy: every file git knows (tracked, or new and not ignored),
# copied only where it differs, so that an unchanged file keeps the time
# its object was built at (and a mutant left by an interrupted run is put
# back and rebuilt).
mkdir -p "$COPY"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  if ! cmp -s "$f" "$COPY/$f"; then
    mkdir -p "$COPY/$(dirname "$f")"
    cp "$f" "$COPY/$f"
  fi
done
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S "$COPY" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    >/dev/null
fi
jobs=$(nproc)
echo "building the unmutated copy in $BUILD ..."
ninja -C "$BUILD" -j "$jobs" >"$WORK/build.log" 2>&1 || {
  tail -30 "$WORK/build.log"
  echo "the unmutated copy does not build" >&2
  exit 2
}

# Put the original back whatever happens (a mutant must never outlive its run).
current=""
restore() {
  if [ -n "$current" ]; then
    cp "$ROOT/$current" "$COPY/$current"
    current=""
  fi
}
trap restore EXIT

# The first failed test of the last ctest run, or nothing.
first_failed() {
  local log=$BUILD/Testing/Temporary/LastTestsFailed.log
  [ -f "$log" ] && head -1 "$log" | cut -d: -f2-
}

killed=0 survived=0 unbuilt=0 relink=false
start=$SECONDS
for i in "${selected[@]}"; do
  t0=$SECONDS
  f=${files[$i]}
  current=$f
  python3 - "$ROOT/$f" "$COPY/$f" "${froms[$i]}" "${tos[$i]}" <<'EOF'
import sys
src, dst, old, new = sys.argv[1:]
text = open(src, encoding="utf-8").read()
open(dst, "w", encoding="utf-8").write(text.replace(old, new, 1))
EOF
  verdict="" by=""
  what=${targets[$i]}
  [ "$what" != all ] || what="" relink=true
  # shellcheck disable=SC2086  # the targets are words
  if ! ninja -C "$BUILD" -j "$jobs" $what >"$WORK/mutant.log" 2>&1; then
    verdict="did not build"
  else
    rm -f "$BUILD/Testing/Temporary/LastTestsFailed.log"
    if ! (cd "$BUILD" && ctest -R "${tests[$i]}" --stop-on-failure --no-tests=error \
            -j "$jobs" --timeout 600 >"$WORK/ctest.log" 2>&1); then
      by=$(first_failed)
      if [ -n "$by" ]; then
        verdict=killed
      else  # no test failed, yet ctest did: no test matched the regex
        verdict="no tests"
        cp "$WORK/ctest.log" "$WORK/mutant.log"
      fi
    else
      # Everything is built with this mutant now: after it, everything is
      # built again without it, so no other mutant's tests run its programs.
      relink=true
      if ! ninja -C "$BUILD" -j "$jobs" >"$WORK/mutant.log" 2>&1; then
        verdict="did not build"
      elif ! (cd "$BUILD" && ctest --no-tests=error -j "$jobs" --timeout 600 \
                >"$WORK/ctest.log" 2>&1); then
        verdict=killed by="$(first_failed) (whole suite)"
      else
        verdict=survived
      fi
    fi
  fi
  restore
  if $relink; then
    ninja -C "$BUILD" -j "$jobs" >"$WORK/build.log" 2>&1
    relink=false
  fi
  case "$verdict" in
    killed) killed=$((killed + 1)) ;;
    survived) survived=$((survived + 1)) ;;
    *) unbuilt=$((unbuilt + 1)); cp "$WORK/mutant.log" "$WORK/${names[$i]}.log" ;;
  esac
  printf '%-33s %-13s %4ds  %s\n' "${names[$i]}" "$verdict" $((SECONDS - t0)) "$by"
done
# The copy rebuilt as it is, so that the next run starts from the originals.
ninja -C "$BUILD" -j "$jobs" >"$WORK/build.log" 2>&1 || true
total=${#selected[@]}
echo "$survived survived, $unbuilt did not build or ran no test, $((SECONDS - start)) s"
echo "mutants killed: $killed/$total"
[ "$killed" -eq "$total" ]
