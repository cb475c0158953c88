# Sourced on the GPU machine by unpack.sh, gpu_bench.sh and cuda_bench.sh.

# llama.cpp's CUDA builds link libcudart.so.13 and libcublas.so.13 (and cuda_build.sh's,
# libnccl.so.2); where the loader's cache lacks any, cuda_lib_dirs prints the folders that hold them (the CUDA toolkit's, or the
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

# make_gguf WHO MODEL TYPE SRC: MODEL.TYPE.gguf from the folder MODEL with the converter in SRC
# (kept beside the folder for later calls; nothing to do where it is there). transformers reads
# the tokenizer where it can; where it refuses, the stand-in reads it (the tokens' ids are all
# the peer uses), and the line printed says so with transformers' last words. A conversion that
# fails ends the script, naming its log. WHO names the script in errors.
make_gguf() {
  local who=$1 model=$2 type=$3 src=$4 here
  local gguf="$model.$type.gguf" log="$model.$type.convert.log" why commit
  here=$(dirname "${BASH_SOURCE[0]}")
  [ -f "$gguf" ] && return 0
  commit=$(cat "$src/COMMIT" 2>/dev/null || true)
  commit=${commit:+, \"llama_cpp\": \"$commit\"}
  if python3 "$here/to_gguf.py" --model "$model" --out "$gguf" --outtype "$type" --src "$src" > "$log" 2>&1; then
    echo "{\"converted\": \"$gguf\", \"with\": \"transformers\"$commit}"
  else
    why=$(grep -v '^to_gguf.py:' "$log" | tail -1 | tr -d '"\\' | cut -c1-200)
    python3 "$here/to_gguf.py" --model "$model" --out "$gguf" --outtype "$type" --src "$src" --standin >> "$log" 2>&1 ||
      { echo "$who: converting $model to $type failed (its log: $log):" >&2; tail -20 "$log" >&2; exit 1; }
    echo "{\"converted\": \"$gguf\", \"with\": \"the stand-in\", \"transformers_failed\": \"$why\"$commit}"
  fi
}
