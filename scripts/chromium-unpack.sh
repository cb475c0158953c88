#!/usr/bin/env bash
# On the GPU machine: takes one part that scripts/chromium-pack.sh made (carried there) into
# /tmp/chromium-gpu; once all three are in, puts the browser together, with a launcher
# /tmp/chromium-gpu/chromium that finds its libraries, and links playwright-core into the
# checkout's node_modules. Without a part, only checks and links (for later calls).
#   bash scripts/chromium-unpack.sh [.chromium/partN]
set -euo pipefail
part=${1:+$(realpath -m "$1")}
source "$(dirname "$0")/carry_parts.sh"
cd "$(dirname "$0")/.."
dest=/tmp/chromium-gpu
take_part chromium-unpack "$dest" "$part"
z() { carried_zstd "$dest" "$@"; }
if [ ! -x "$dest/browser/chromium" ] && [ -f "$dest/parts/chromium.zst.aa" ] && [ -f "$dest/parts/chromium.zst.ab" ]; then
  mkdir -p "$dest/browser" "$dest/lib"
  cat "$dest/parts/chromium.zst.aa" "$dest/parts/chromium.zst.ab" | z -d -q --long=27 -f -o "$dest/browser/chromium"
  chmod +x "$dest/browser/chromium"
  z -d -q -c "$dest/parts/libs.tar.zst" | tar -C "$dest/lib" -xf -
  rm -f "$dest/parts/chromium.zst.aa" "$dest/parts/chromium.zst.ab"
fi
if [ -f "$dest/parts/files.tar.zst" ] && [ ! -f "$dest/browser/resources.pak" ] && [ -d "$dest/browser" ]; then
  z -d -q -c "$dest/parts/files.tar.zst" | tar -C "$dest/browser" -xf -
fi
if [ -f "$dest/parts/playwright-core.tar.zst" ] && [ ! -d "$dest/node_modules/playwright-core" ]; then
  mkdir -p "$dest/node_modules"
  z -d -q -c "$dest/parts/playwright-core.tar.zst" | tar -C "$dest/node_modules" -xf -
fi
if [ -f "$dest/browser/resources.pak" ] && [ -d "$dest/node_modules/playwright-core" ]; then
  [ -d node_modules/playwright-core ] && [ ! -L node_modules/playwright-core ] ||
    { mkdir -p node_modules && ln -sfn "$dest/node_modules/playwright-core" node_modules/playwright-core; }
  printf '#!/bin/sh\nexport LD_LIBRARY_PATH=%s/lib\nexec %s/browser/chromium "$@"\n' "$dest" "$dest" > "$dest/chromium"
  chmod +x "$dest/chromium"
  missing=$(LD_LIBRARY_PATH="$dest/lib" ldd "$dest/browser/chromium" | grep "not found" || true)
  [ -z "$missing" ] || { echo "chromium-unpack: libraries missing: $missing" >&2; exit 1; }
  echo "chromium-unpack: $dest/chromium is ready"
else
  echo "chromium-unpack: $(ls "$dest/parts" | tr '\n' ' ')taken; more parts to come"
fi
