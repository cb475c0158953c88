#!/usr/bin/env bash
# On the GPU machine, after unpack.sh has taken every part (and after `source .gpu/enter.sh`,
# whose Vulkan loader the Vulkan build needs): the llama.cpp peer's figures for one model folder
# (the bf16 one `gemma4 synth` writes). Makes a GGUF of each type with llama.cpp's converter
# (beside the folder, kept for later calls), runs one untimed pass that has the CUDA driver
# compile the build's kernels for this GPU (the build carries no H200 code, only PTX; the
# driver keeps what it compiles in /tmp/llama-gpu/cuda-cache), then bench.mjs: each type on
# CUDA with flash attention as llama.cpp decides, bf16 on CUDA without it, bf16 on Vulkan.
# Prints JSON lines, each run's after a line naming it; exits non-zero if no run gave figures.
#   bash tools/reference/llama_cpp/gpu_bench.sh MODEL_DIR [--types bf16,q8_0] [bench.mjs options]
set -euo pipefail
here=$(dirname "$0")
model=$(realpath -m -s "${1:?usage: gpu_bench.sh MODEL_DIR [--types T,T] [bench.mjs options]}")
shift
types=bf16
if [ "${1:-}" = --types ]; then types=${2//,/ }; shift 2; fi
peer=/tmp/llama-gpu
[ -f "$peer/env.sh" ] || { echo "gpu_bench.sh: $peer/env.sh is missing (unpack.sh every part first)" >&2; exit 1; }
source "$peer/env.sh"
source "$here/common.sh"
say() { echo "{\"$1\": \"$2\"}"; }
for type in $types; do make_gguf gpu_bench.sh "$model" "$type" "$peer/llama.cpp"; done
first=$(set -- $types; echo "$1")
start=$SECONDS
if node "$here/bench.mjs" --gguf "$model.$first.gguf" --gpu cuda --modules "$peer/node_modules" --reps 1 \
     --prompt-tokens 512 --decode-tokens 4 > /dev/null 2>&1; then
  say warmed "an untimed pass on CUDA, its kernels compiled for this GPU, in $((SECONDS - start)) s"
else
  say warm_up_failed "the untimed pass on CUDA failed after $((SECONDS - start)) s"
fi
ok=0
bench() {  # NAME bench.mjs-arguments...
  say run "$1"
  shift
  if node "$here/bench.mjs" --modules "$peer/node_modules" "$@"; then ok=$((ok + 1)); else say run_failed "$name"; fi
}
for type in $types; do
  name="llama.cpp cuda, $type, flash attention auto"; bench "$name" --gguf "$model.$type.gguf" --gpu cuda "$@"
done
name="llama.cpp cuda, $first, flash attention off"; bench "$name" --gguf "$model.$first.gguf" --gpu cuda --flash-attention off "$@"
name="llama.cpp vulkan, $first, flash attention auto"; bench "$name" --gguf "$model.$first.gguf" --gpu vulkan "$@"
[ "$ok" -gt 0 ]
