#!/usr/bin/env bash
# On the GPU machine: llama.cpp's CUDA figures for one model folder (the bf16 one `gemma4 synth`
# writes) with the llama-bench that cuda_build.sh made, carried there as CARRIED (default
# .peers/llama/cuda/carry). Makes a GGUF of each type with the carried converter (beside the
# folder, kept for later calls), then, each type with flash attention off and on: llama-bench's
# prefill of P tokens (pp) and its decode of D tokens after a context of P (tg at depth P), the
# median of its reps (its first rep can run before the GPU's clock has risen, which its own
# warm-up does not always cover; the median, as bench.mjs's, leaves it out). Prints, as gpu_bench.sh does, a JSON line naming each run and one of its
# figures; exits non-zero if no run gave figures.
#   bash tools/reference/llama_cpp/cuda_bench.sh MODEL_DIR [--carried DIR] [--types bf16,q8_0]
#       [--prompt-tokens 512] [--decode-tokens 64] [--reps 5]
set -euo pipefail
here=$(dirname "$0")
model=$(realpath -m -s "${1:?usage: cuda_bench.sh MODEL_DIR [--carried DIR] [--types T,T] [--prompt-tokens P] [--decode-tokens D] [--reps R]}")
shift
carried=$here/../../../.peers/llama/cuda/carry types=bf16 P=512 D=64 reps=5
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { echo "cuda_bench.sh: $1 needs a value" >&2; exit 2; }
  case $1 in
    --carried) carried=$2 ;;
    --types) types=${2//,/ } ;;
    --prompt-tokens) P=$2 ;;
    --decode-tokens) D=$2 ;;
    --reps) reps=$2 ;;
    *) echo "cuda_bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
bench=$carried/llama-bench
[ -x "$bench" ] || { echo "cuda_bench.sh: $bench is missing (cuda_build.sh makes it; carry its folder)" >&2; exit 1; }
source "$here/common.sh"
libdirs=$(cuda_lib_dirs)
[ -z "$libdirs" ] || export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for type in $types; do make_gguf cuda_bench.sh "$model" "$type" "$carried/llama.cpp"; done
ok=0
for type in $types; do
  for fa in off on; do
    name="llama.cpp cuda (llama-bench), $type, flash attention $fa"
    echo "{\"run\": \"$name\"}"
    log="$model.$type.fa-$fa.log"
    # Prefill alone, then decode after a context of P; llama-bench warms up before each.
    if pp=$("$bench" -m "$model.$type.gguf" -ngl 99 -fa $fa -p "$P" -n 0 -r "$reps" -o jsonl 2> "$log") &&
       tg=$("$bench" -m "$model.$type.gguf" -ngl 99 -fa $fa -p 0 -n "$D" -d "$P" -r "$reps" -o jsonl 2>> "$log") &&
       python3 -c '
import json, statistics, sys
def last(s): return json.loads([l for l in s.split("\n") if l.startswith("{")][-1])
pp, tg = last(sys.argv[1]), last(sys.argv[2])
print(json.dumps({"prefill_tokens_per_s": statistics.median(pp["samples_ts"]),
                  "decode_tokens_per_s": statistics.median(tg["samples_ts"]),
                  "prompt_tokens": pp["n_prompt"], "decode_tokens": tg["n_gen"], "depth": tg["n_depth"],
                  "reps": len(pp["samples_ts"]), "prefill_all": pp["samples_ts"], "decode_all": tg["samples_ts"],
                  "backends": pp["backends"], "gpu": pp["gpu_info"]}))' "$pp" "$tg"; then
      ok=$((ok + 1))
    else
      echo "cuda_bench.sh: $name failed (its log: $log):" >&2
      tail -5 "$log" >&2
      echo "{\"run_failed\": \"$name\"}"
    fi
  done
done
[ "$ok" -gt 0 ]
