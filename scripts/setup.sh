#!/usr/bin/env bash
# One command on a fresh machine: install what is needed, build, and generate with the bundled
# small model (testdata/models/e2b_mini: E2B's architecture at a tiny size, random weights).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
scripts/build-web.sh >/dev/null   # dist/: the browser and Node package (demo: node scripts/serve.mjs)
./build/gemma4 generate --model testdata/models/e2b_mini --prompt-ids 2,105,236,107,451,106,107,105,436,107 \
  --max-new-tokens 24 --json
