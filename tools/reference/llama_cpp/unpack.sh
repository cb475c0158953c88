#!/usr/bin/env bash
# On the GPU machine: takes one part that pack.sh made (carried there) into /tmp/llama-gpu; once
# every part is in, checks the whole against its hash and unpacks node-llama-cpp and llama.cpp's
# converter there, and writes /tmp/llama-gpu/env.sh, which puts the CUDA libraries the CUDA
# build links (libcudart, libcublas: the CUDA toolkit's or torch's) on LD_LIBRARY_PATH.
#   bash tools/reference/llama_cpp/unpack.sh [DIR/parts/partN]
set -euo pipefail
part=${1:+$(realpath -m "$1")}
dest=/tmp/llama-gpu
mkdir -p "$dest/parts"
if [ -n "$part" ]; then
  [ -d "$part" ] || { echo "unpack.sh: $part is not a folder" >&2; exit 1; }
  cp -r "$part/." "$dest/parts/"
fi
[ -x "$dest/parts/zstd/zstd" ] || { echo "unpack.sh: part1 (with zstd) must come first" >&2; exit 1; }
count=$(cat "$dest/parts/count")
have=$(ls "$dest/parts" | grep -c '^peer\.tar\.zst\.' || true)
if [ ! -d "$dest/node_modules" ]; then
  if [ "$have" -lt "$count" ]; then echo "unpack.sh: $have of $count parts in"; exit 0; fi
  cat "$dest"/parts/peer.tar.zst.* > "$dest/peer.tar.zst"
  [ "$(sha256sum "$dest/peer.tar.zst" | awk '{ print $1 }')" = "$(cat "$dest/parts/sha256")" ] ||
    { echo "unpack.sh: the parts put together do not match their hash" >&2; rm -f "$dest/peer.tar.zst"; exit 1; }
  LD_LIBRARY_PATH="$dest/parts/zstd" "$dest/parts/zstd/zstd" -d -q --long=27 -c "$dest/peer.tar.zst" | tar -C "$dest" -xf -
  rm -f "$dest/peer.tar.zst" "$dest"/parts/peer.tar.zst.*
fi
# The folders of the libraries the CUDA build links, wherever this machine keeps them.
libdirs=$( { ldconfig -p 2>/dev/null | awk '/lib(cudart|cublas|cuda|nvidia-ml)\.so/ { print $NF }';
             find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu \
               $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null) \
               \( -name 'libcudart.so.13*' -o -name 'libcublas.so.13*' -o -name 'libcublasLt.so.13*' \) 2>/dev/null; } |
           xargs -r -n1 dirname | sort -u | paste -sd: )
echo "export LD_LIBRARY_PATH=$libdirs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" > "$dest/env.sh"
echo "unpack.sh: node-llama-cpp in $dest/node_modules, the converter in $dest/llama.cpp; source $dest/env.sh (libraries from: ${libdirs:-none found})"
