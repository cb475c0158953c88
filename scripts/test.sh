#!/usr/bin/env bash
# The whole test suite: the Node tests (the WebAssembly CLI and JavaScript API on WebGPU through
# lavapipe, the demo page and smoke test in headless Chromium, the build manifest) and, beside
# them, a short run of every fuzzer, then the unit, golden and CLI tests of the native build
# (ctest). Prints the time each stage took at the end.
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
# The fuzzers and ctest need no GPU and run beside the Node tests, which leave a core idle much
# of their time (a file waits on lavapipe's one compiling thread, or on a browser). Their output
# is kept and printed once the Node tests are done.
side_dir=$(mktemp -d)
side() {  # side NAME COMMAND...: a stage beside the Node tests, its output in side_dir
  local start=$SECONDS rc=0
  "${@:2}" > "$side_dir/$1.log" 2>&1 || rc=$?
  printf '%-12s %4d s  (beside node)\n' "$1" $((SECONDS - start)) > "$side_dir/$1.time"
  return $rc
}
sides() { side fuzz scripts/fuzz.sh "${G4_FUZZ_SECONDS:-20}" --parallel && side ctest ctests; }
collect() {  # waits for the side stages, prints their output; fails where one failed
  local rc=0
  wait "$sides_pid" || rc=$?
  for name in fuzz ctest; do
    [ -f "$side_dir/$name.log" ] || continue
    echo "== $name"
    cat "$side_dir/$name.log"
    [ -f "$side_dir/$name.time" ] && stages+=("$(cat "$side_dir/$name.time")")
  done
  return $rc
}
report() {
  if [ -n "${sides_pid:-}" ]; then pkill -P "$sides_pid" 2>/dev/null; kill "$sides_pid" 2>/dev/null; fi
  echo "time by stage:"
  printf '  %s\n' "${stages[@]}"
  echo "  total        $SECONDS s"
  rm -rf "$side_dir"
}
trap report EXIT
stage deps scripts/install-deps.sh
stage native native
stage wasm scripts/build-wasm.sh
stage web scripts/build-web.sh
stage lavapipe scripts/setup-lavapipe.sh
sides &
sides_pid=$!
stage node node_tests
collect
sides_pid=
