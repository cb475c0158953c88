#!/usr/bin/env bash
# On the GPU machine, after unpack.sh has taken every part: the llama.cpp peer's figures for one
# model folder (the bf16 one `gemma4 synth` writes): GGUFs made by llama.cpp's converter in bf16
# and q8_0 (beside the folder, kept for later calls), then bench.mjs on CUDA and on Vulkan, with
# flash attention on and off. Prints bench.mjs's JSON lines, each after a line naming the run.
#   bash tools/reference/llama_cpp/gpu_bench.sh MODEL_DIR [--prompt-tokens N] [--decode-tokens N] [--reps N]
set -euo pipefail
here=$(dirname "$0")
model=$(realpath -m -s "${1:?usage: gpu_bench.sh MODEL_DIR [bench.mjs options]}")
shift
peer=/tmp/llama-gpu
[ -f "$peer/env.sh" ] || { echo "gpu_bench.sh: $peer/env.sh is missing (unpack.sh every part first)" >&2; exit 1; }
source "$peer/env.sh"
for type in bf16 q8_0; do
  gguf="$model.$type.gguf"
  log="$model.$type.convert.log"
  # transformers reads the tokenizer where it can; where it refuses the placeholder one, the
  # stand-in reads it instead (the tokens' ids are all the peer uses).
  if [ ! -f "$gguf" ]; then
    if python3 "$here/to_gguf.py" --model "$model" --out "$gguf" --outtype "$type" --src "$peer/llama.cpp" > "$log" 2>&1; then
      echo "{\"converted\": \"$gguf\", \"with\": \"transformers\"}"
    elif python3 "$here/to_gguf.py" --model "$model" --out "$gguf" --outtype "$type" --src "$peer/llama.cpp" --standin >> "$log" 2>&1; then
      echo "{\"converted\": \"$gguf\", \"with\": \"the stand-in\"}"
    else
      tail -20 "$log" >&2; exit 1
    fi
  fi
  for gpu in cuda vulkan; do
    for fa in on off; do
      echo "{\"run\": \"llama.cpp $gpu, $type, flash attention $fa\"}"
      node "$here/bench.mjs" --gguf "$gguf" --gpu "$gpu" --flash-attention "$fa" --modules "$peer/node_modules" "$@" ||
        echo "{\"run_failed\": \"llama.cpp $gpu, $type, flash attention $fa\"}"
    done
  done
done
