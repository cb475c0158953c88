#!/usr/bin/env bash
# The whole test suite: a short run of every fuzzer, the Node tests (the WebAssembly CLI and
# JavaScript API on WebGPU through lavapipe, the demo page and smoke test in headless Chromium,
# the build manifest), then the unit, golden and CLI tests of the native build (ctest). Prints
# the time each stage took at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=()
stage() {  # stage NAME COMMAND...: runs the command, keeping its time
  local start=$SECONDS
  "${@:2}"
  stages+=("$(printf '%-12s %4d s' "$1" $((SECONDS - start)))")
}
native() { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build; }
# Two test files at a time: most of a file's time is one thread compiling kernels or waiting on
# a browser, so two share the CPUs well.
node_tests() { (source .lavapipe/env.sh && node --test --test-concurrency="${G4_TEST_JOBS:-2}" tests/js/); }
ctests() { (cd build && ctest --output-on-failure -j 2); }
report() {
  echo "time by stage:"
  printf '  %s\n' "${stages[@]}"
  echo "  total        $SECONDS s"
}
trap report EXIT
stage deps scripts/install-deps.sh
stage native native
stage wasm scripts/build-wasm.sh
stage web scripts/build-web.sh
stage lavapipe scripts/setup-lavapipe.sh
stage fuzz scripts/fuzz.sh "${G4_FUZZ_SECONDS:-20}" --parallel
stage node node_tests
stage ctest ctests
