#!/usr/bin/env bash
# Fetches the llama.cpp peer from the npm registry into DIR (default .peers/llama, ignored by git):
# node-llama-cpp and its prebuilt llama.cpp builds for Linux x64 (CPU, CUDA, Vulkan), and, from
# the source bundle that package carries, llama.cpp's own GGUF converter (DIR/llama.cpp). Only a
# machine with the registry runs it; pack.sh then carries what the GPU machine needs.
#   tools/reference/llama_cpp/fetch.sh [DIR]
set -euo pipefail
version=3.22.1
dir=$(realpath -m "${1:-$(dirname "$0")/../../../.peers/llama}")
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{ "private": true }' > "$dir/package.json"
# The platform builds by name, and no others (node-llama-cpp lists every platform's as optional);
# no install scripts (node-llama-cpp's would look for a build to download or make).
npm install --prefix "$dir" --no-audit --no-fund --omit=optional --ignore-scripts \
  "node-llama-cpp@$version" "@node-llama-cpp/linux-x64@$version" \
  "@node-llama-cpp/linux-x64-cuda@$version" "@node-llama-cpp/linux-x64-vulkan@$version"
rm -rf "$dir/llama.cpp"
git -c advice.detachedHead=false clone -q "$dir/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$dir/llama.cpp"
echo "fetch.sh: node-llama-cpp $version in $dir/node_modules; llama.cpp $(jq -r .tag "$dir/node_modules/node-llama-cpp/llama/llama.cpp.info.json" 2>/dev/null || echo '?') in $dir/llama.cpp"
