#!/usr/bin/env bash
# Builds llama.cpp's own benchmark, llama-bench, for CUDA on the H200 (sm_90a) from the checkout
# fetch.sh makes (DIR/llama.cpp, the release node-llama-cpp ships), on any machine with CUDA
# 13.0's nvcc (the GPU machine's driver, 580, runs CUDA 13.0 code; node-llama-cpp's prebuilt
# CUDA build carries the H200's kernels only as PTX from a later CUDA, which that driver refuses).
# ggml and llama are linked in statically; CUDA's runtime, cuBLAS and NCCL (which llama.cpp links
# where it finds it) come from the machine it runs on; no OpenMP or OpenSSL (fewer libraries to
# find there). Then puts what the GPU machine needs, llama-bench and the converter, into
# DIR/cuda/carry: carry that folder in one call and run cuda_bench.sh there.
#   tools/reference/llama_cpp/cuda_build.sh [DIR] [--build BUILD_DIR] [--jobs N]
set -euo pipefail
dir=$(dirname "$0")/../../../.peers/llama
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then dir=$1; shift; fi
dir=$(realpath -m "$dir")
build=$dir/cuda/build
jobs=$(nproc)
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { echo "cuda_build.sh: $1 needs a value" >&2; exit 2; }
  case $1 in
    --build) build=$(realpath -m "$2") ;;
    --jobs) jobs=$2 ;;
    *) echo "cuda_build.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
src=$dir/llama.cpp
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -f "$src/tools/llama-bench/llama-bench.cpp" ] || { echo "cuda_build.sh: $src lacks llama.cpp's source (run fetch.sh)" >&2; exit 1; }
[ -x "$nvcc" ] || { echo "cuda_build.sh: no nvcc (looked for CUDACXX, nvcc on PATH, $nvcc)" >&2; exit 1; }
mkdir -p "$build"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a-real -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=OFF > "$build/cmake.log" 2>&1 ||
  { echo "cuda_build.sh: cmake failed in $build (its log: $build/cmake.log):" >&2; tail -20 "$build/cmake.log" >&2; exit 1; }
ninja -C "$build" -j "$jobs" llama-bench
carry=$dir/cuda/carry
rm -rf "$carry.partial" && mkdir -p "$carry.partial/llama.cpp"
cp "$build/bin/llama-bench" "$carry.partial/"
strip "$carry.partial/llama-bench"
cp -r "$src/convert_hf_to_gguf.py" "$src/conversion" "$src/gguf-py" "$src/LICENSE" "$carry.partial/llama.cpp/"
git -C "$src" rev-parse HEAD > "$carry.partial/llama.cpp/COMMIT" 2>/dev/null || true
rm -rf "$carry" && mv "$carry.partial" "$carry"
# The libraries it needs beyond glibc's, C++'s and the driver's: the GPU machine must have them.
needs=$(ldd "$carry/llama-bench" | awk '{ print $1 }' |
        grep -v -E '^(linux-vdso|/lib64/ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda)\.so' | paste -sd' ' || true)
echo "cuda_build.sh: $(du -sh "$carry" | cut -f1) in $carry; llama-bench needs ${needs:-no other library}"
