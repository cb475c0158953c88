#!/usr/bin/env bash
# One command on a fresh machine: install what is needed, build (native, WebAssembly and dist/),
# and generate text with the bundled demo pair (testdata/models/demo: a small Gemma 4 trained on
# the State of the Union addresses, with its MTP assistant), printing the reply and, on stderr,
# the speeds and the speculative counters.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
scripts/build-web.sh >/dev/null   # dist/: the browser and Node package (demo: npm run demo)
cmake --build build-wasm --target gemma4 >/dev/null   # the Node CLI's module (bin/gemma4.mjs), packed too
./build/gemma4 generate --model testdata/models/demo --assistant testdata/models/demo/assistant \
  --prompt "What should Congress do this year?" --chat --max-new-tokens 48
