# Sourced on the GPU machine by unpack.sh and cuda_bench.sh: llama.cpp's CUDA builds link
# libcudart.so.13 and libcublas.so.13 (and cuda_build.sh's, libnccl.so.2); where the loader's
# cache lacks any, cuda_lib_dirs prints the folders that hold them (the CUDA toolkit's, or the
# wheels torch brings), joined by ':' (nothing where the cache has them all). It never fails:
# a folder that is not there is skipped.
cuda_lib_dirs() {
  local cache missing=0 lib roots=() r
  cache=$(ldconfig -p 2>/dev/null || true)
  for lib in libcudart.so.13 libcublas.so.13 libnccl.so.2; do
    grep -qF "$lib" <<< "$cache" || missing=1
  done
  [ "$missing" = 1 ] || return 0
  for r in /usr/local/cuda*/ $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true); do
    [ -d "$r" ] && roots+=("$r")
  done
  [ ${#roots[@]} -gt 0 ] || return 0
  { find "${roots[@]}" \( -name 'libcudart.so.13*' -o -name 'libcublas.so.13*' -o -name 'libcublasLt.so.13*' \
         -o -name 'libnccl.so.2*' \) 2>/dev/null || true; } |
    { xargs -r -n1 dirname || true; } | { xargs -r -n1 realpath || true; } | sort -u | paste -sd:
}
