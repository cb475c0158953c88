#!/usr/bin/env bash
# On the GPU machine: takes one part that pack.sh made (carried there) into /tmp/llama-gpu; once
# every part is in, checks the whole against its hash and unpacks node-llama-cpp and llama.cpp's
# converter there (into a folder of its own, moved into place when complete), and writes
# /tmp/llama-gpu/env.sh: the folders of the CUDA libraries the CUDA build links (libcudart,
# libcublas: the CUDA toolkit's or torch's) on LD_LIBRARY_PATH where the loader's cache lacks
# them, and a cache for the kernels the CUDA driver compiles from the build's PTX.
#   bash tools/reference/llama_cpp/unpack.sh [DIR/parts/partN]
set -euo pipefail
part=${1:+$(realpath -m "$1")}
source "$(dirname "$0")/../../../scripts/carry_parts.sh"
dest=/tmp/llama-gpu
take_part unpack.sh "$dest" "$part"
count=$(cat "$dest/parts/count")
have=$(ls "$dest/parts" | grep -c '^peer\.tar\.zst\.' || true)
if [ ! -d "$dest/node_modules" ]; then
  if [ "$have" -lt "$count" ]; then echo "unpack.sh: $have of $count parts in"; exit 0; fi
  cat "$dest"/parts/peer.tar.zst.* > "$dest/peer.tar.zst"
  [ "$(sha256sum "$dest/peer.tar.zst" | awk '{ print $1 }')" = "$(cat "$dest/parts/sha256")" ] ||
    { echo "unpack.sh: the parts put together do not match their hash" >&2; rm -f "$dest/peer.tar.zst"; exit 1; }
  rm -rf "$dest/unpacking" && mkdir "$dest/unpacking"
  carried_zstd "$dest" -d -q --long=27 -c "$dest/peer.tar.zst" | tar -C "$dest/unpacking" -xf -
  rm -rf "$dest/llama.cpp" && mv "$dest/unpacking/llama.cpp" "$dest/llama.cpp"
  mv "$dest/unpacking/node_modules" "$dest/node_modules"
  rm -rf "$dest/unpacking" "$dest/peer.tar.zst" "$dest"/parts/peer.tar.zst.*
fi
source "$(dirname "$0")/common.sh"
libdirs=$(cuda_lib_dirs)
{
  [ -z "$libdirs" ] || echo "export LD_LIBRARY_PATH=$libdirs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
  echo "export CUDA_CACHE_PATH=$dest/cuda-cache CUDA_CACHE_MAXSIZE=4294967296"
} > "$dest/env.sh"
echo "unpack.sh: node-llama-cpp in $dest/node_modules, the converter in $dest/llama.cpp; source $dest/env.sh (CUDA libraries: ${libdirs:-as the loader finds them})"
