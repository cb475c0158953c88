#!/usr/bin/env bash
# Packs the llama.cpp peer that fetch.sh fetched (DIR, default .peers/llama) for a GPU machine
# with no registry: node-llama-cpp with its CUDA and Vulkan builds and llama.cpp's converter,
# one tar compressed with zstd and cut into parts of MB MiB (default 25: a part and the working
# tree, 34 MB of it the test models, fit in one call's 64 MiB), each in a folder
# DIR/parts/partN of its own; part1 also holds zstd and its libraries. Carry the parts to the GPU
# machine one a call, part1 first, and run unpack.sh PART there after each.
#   tools/reference/llama_cpp/pack.sh [DIR] [MB]
set -euo pipefail
dir=$(realpath -m "${1:-$(dirname "$0")/../../../.peers/llama}")
mb=${2:-25}
source "$(dirname "$0")/../../../scripts/carry_parts.sh"
[ -d "$dir/node_modules/@node-llama-cpp/linux-x64-cuda" ] && [ -f "$dir/llama.cpp/convert_hf_to_gguf.py" ] ||
  { echo "pack.sh: $dir lacks node-llama-cpp or llama.cpp (run fetch.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$dir/parts"
carry_zstd "$dir/parts/part1/zstd"
# The CPU build and the source bundle stay behind: the GPU machine runs CUDA or Vulkan, and the
# converter comes from the checkout.
tar -C "$dir" -cf - --exclude=node_modules/node-llama-cpp/llama/gitRelease.bundle \
    --exclude=node_modules/@node-llama-cpp/linux-x64 node_modules \
    llama.cpp/convert_hf_to_gguf.py llama.cpp/conversion llama.cpp/gguf-py llama.cpp/LICENSE |
  zstd -19 -T0 -q --long=27 -o "$tmp/peer.tar.zst"
split -b "${mb}M" -d -a 2 "$tmp/peer.tar.zst" "$tmp/peer.tar.zst."
n=0
for chunk in "$tmp"/peer.tar.zst.*; do
  n=$((n + 1))
  mkdir -p "$dir/parts/part$n"
  mv "$chunk" "$dir/parts/part$n/"
done
echo "$n" > "$dir/parts/part1/count"
sha256sum "$tmp/peer.tar.zst" | awk '{ print $1 }' > "$dir/parts/part1/sha256"
du -sh "$dir"/parts/part*
