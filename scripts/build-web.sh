#!/usr/bin/env bash
# Builds the browser/Node package into dist/: the four runtime builds ({plain, mtp} x {wall,
# profile}) as WebAssembly (clang 19 + binaryen, build-wasm/runtime/) and as one ES module each
# (web/entries/*, bundled by esbuild), their TypeScript declarations, the command line's module
# (build-wasm/gemma4.wasm, as gemma4-cli.wasm: what bin/gemma4.mjs runs in an installed package),
# and dist/manifest.json naming the nine artifacts by sha256 with the record of the sources that
# built them.
set -euo pipefail
cd "$(dirname "$0")/.."
builds=(gemma4 gemma4-mtp gemma4-profile gemma4-mtp-profile)
cmake -S . -B build-wasm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/wasm32-wasi.cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-wasm --target "${builds[@]/#/runtime_}" gemma4
rm -rf dist.partial
mkdir dist.partial
for b in "${builds[@]}"; do
  esbuild "web/entries/$b.mjs" --bundle --format=esm --platform=neutral --external:node:* --external:webgpu \
          --log-level=warning --outfile="dist.partial/$b.mjs"
  cp "build-wasm/runtime/$b.wasm" dist.partial/
  factory=$(sed -n 's/^export const \(create[A-Za-z0-9]*\) = .*/\1/p' "web/entries/$b.mjs")
  printf "import type { Gemma4Factory } from './gemma4-types.js';\nexport declare const %s: Gemma4Factory;\nexport default %s;\n" \
         "$factory" "$factory" > "dist.partial/$b.d.mts"
done
cp build-wasm/gemma4.wasm dist.partial/gemma4-cli.wasm
cp web/gemma4-types.d.ts dist.partial/gemma4-types.d.ts
node scripts/manifest.mjs write dist.partial
rm -rf dist
mv dist.partial dist
