# Sourced by the scripts that carry something too large for one call to the GPU machine in parts
# (chromium-pack.sh / chromium-unpack.sh, tools/reference/llama_cpp/pack.sh / unpack.sh): the
# GPU machine has no zstd, so part1 brings one.

# carry_zstd DIR: zstd and the libraries it links (not glibc's) into DIR, for the unpacking there.
carry_zstd() {
  mkdir -p "$1"
  cp /usr/bin/zstd "$1/"
  { ldd /usr/bin/zstd | awk '$3 ~ /^\// { print $3 }' | grep -v -E '/(libc|libm|ld-linux[^/]*)\.so' || true; } |
    xargs -r -I{} cp -L {} "$1/"
}

# take_part WHO DEST [PART]: copies the folder PART (one part carried here) into DEST/parts and
# checks that part1, with its zstd, is in; without PART, only checks. WHO names the script in
# errors. Then `carried_zstd DEST ARGS...` runs that zstd.
take_part() {
  local who=$1 dest=$2 part=${3:-}
  mkdir -p "$dest/parts"
  if [ -n "$part" ]; then
    [ -d "$part" ] || { echo "$who: $part is not a folder" >&2; exit 1; }
    cp -r "$part/." "$dest/parts/"
  fi
  [ -x "$dest/parts/zstd/zstd" ] || { echo "$who: part1 (with zstd) must come first" >&2; exit 1; }
}
carried_zstd() {
  local dest=$1
  shift
  LD_LIBRARY_PATH="$dest/parts/zstd" "$dest/parts/zstd/zstd" "$@"
}
