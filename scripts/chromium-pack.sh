#!/usr/bin/env bash
# Packs this machine's Chromium (Debian's, /usr/lib/chromium) for a GPU machine that has no
# registry: the browser, the files beside it that it reads, the libraries it links (not glibc's)
# and playwright-core, compressed into parts small enough for one transfer each:
#   .chromium/part1, .chromium/part2, .chromium/part3   (about 58, 45 and 28 MB)
# Copy the parts to the GPU machine one at a time, part1 first, and run
# `bash scripts/chromium-unpack.sh PART` there after each (it keeps what it took in
# /tmp/chromium-gpu); after the last, /tmp/chromium-gpu/chromium runs the browser. Takes a few
# minutes (zstd -19). OUT_DIR's part1..3 folders are replaced; nothing else in it is touched.
#   scripts/chromium-pack.sh [OUT_DIR]   (default .chromium)
set -euo pipefail
out=$(realpath -m "${1:-$(dirname "$0")/../.chromium}")
source "$(dirname "$0")/carry_parts.sh"
cd "$(dirname "$0")/.."
src=/usr/lib/chromium
[ -x "$src/chromium" ] || { echo "chromium-pack: $src/chromium is missing (apt-get install chromium)" >&2; exit 1; }
[ -d node_modules/playwright-core ] || { echo "chromium-pack: node_modules/playwright-core is missing (npm ci)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out/part1" "$out/part2" "$out/part3"
mkdir -p "$out/part2" "$out/part3" "$tmp/lib"
carry_zstd "$out/part1/zstd"
# The libraries the browser links, but glibc's, which the machine has.
{ ldd "$src/chromium" | awk '$3 ~ /^\// { print $3 }' | grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' || true; } |
  xargs -r -I{} cp -L {} "$tmp/lib/"
tar -C "$tmp/lib" -cf - . | zstd -19 -T0 -q -o "$out/part1/libs.tar.zst"
zstd -19 -T0 -q --long=27 -o "$tmp/chromium.zst" "$src/chromium"
split -n 2 "$tmp/chromium.zst" "$tmp/chromium.zst."   # two halves
mv "$tmp/chromium.zst.aa" "$out/part1/"
mv "$tmp/chromium.zst.ab" "$out/part2/"
tar -C node_modules -cf - playwright-core | zstd -19 -T0 -q -o "$out/part2/playwright-core.tar.zst"
(cd "$src" && tar -cf - chrome_100_percent.pak chrome_crashpad_handler icudtl.dat libEGL.so libGLESv2.so libvulkan.so.1 \
   locales/en-US.pak resources.pak snapshot_blob.bin v8_context_snapshot.bin libvk_swiftshader.so vk_swiftshader_icd.json) |
  zstd -19 -T0 -q -o "$out/part3/files.tar.zst"
chromium --version > "$out/part3/version.txt" 2>/dev/null || true
du -sh "$out"/part*
