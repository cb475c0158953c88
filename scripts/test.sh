#!/usr/bin/env bash
# The whole test suite: a short run of every fuzzer, the Node tests (the WebAssembly CLI and
# JavaScript API on WebGPU through lavapipe, the demo page and smoke test in headless Chromium,
# the build manifest), then the unit, golden and CLI tests of the native build (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
scripts/build-wasm.sh
scripts/build-web.sh
scripts/setup-lavapipe.sh
scripts/fuzz.sh "${G4_FUZZ_SECONDS:-20}"
(source .lavapipe/env.sh && node --test tests/js/)
(cd build && ctest --output-on-failure -j 2)
