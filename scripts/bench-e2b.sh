#!/usr/bin/env bash
# The E2B-shaped benchmark (on a machine with a GPU): random bf16 weights of E2B's shape and its
# assistant (gemma4 synth), their q4 and q8 artifacts (gemma4 export), then the WebGPU benchmark
# of each, with Dawn's validation on and off, one after the other in one run so their figures compare.
# usage: scripts/bench-e2b.sh [WORK_DIR [NATIVE_GEMMA4 [SCHEMES]]]   (defaults: /tmp/g4-e2b, build/gemma4, "q4")
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/g4-e2b}
native=${2:-build/gemma4}
schemes=${3:-q4}
mkdir -p "$work"
[ -f "$work/bf16/model.safetensors" ] || "$native" synth --shape e2b --out "$work/bf16"
[ -f "$work/bf16-assistant/model.safetensors" ] || "$native" synth --shape e2b-assistant --out "$work/bf16-assistant"
for q in $schemes; do
  [ -d "$work/$q" ] || "$native" export --model "$work/bf16" --assistant "$work/bf16-assistant" --quant "$q" -o "$work/$q"
  "$native" inspect --model "$work/$q" | tail -3
done
# Each model with Dawn's validation on (the default) and off (less host time per dispatch).
for m in bf16 $schemes; do
  assistant="$work/$m/assistant"
  [ "$m" = bf16 ] && assistant="$work/bf16-assistant"
  for v in on off; do
    echo "== $m, GPU validation $v"
    node bin/gemma4.mjs bench --model "$work/$m" --assistant "$assistant" --prompt-tokens 512 --decode-tokens 256 \
      --gpu-validation "$v"
  done
done
