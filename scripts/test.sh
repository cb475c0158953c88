#!/usr/bin/env bash
# The whole test suite: unit, golden and CLI tests (ctest), then a short run of every fuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
scripts/fuzz.sh "${G4_FUZZ_SECONDS:-20}"
(cd build && ctest --output-on-failure -j 2)
