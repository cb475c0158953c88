#!/usr/bin/env bash
# Builds the C++ core and CLI for WebAssembly (wasm32-wasi, clang 19) into build-wasm/gemma4.wasm,
# which bin/gemma4.mjs runs in Node.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-wasm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/wasm32-wasi.cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-wasm --target gemma4 ops_compare
