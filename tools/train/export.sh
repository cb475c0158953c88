#!/usr/bin/env bash
# Turns the GPU stages' output into the committed demo pair: `gemma4 export` to q8, a byte-for-byte
# check that the exported tensors are those the goldens were computed from, and the goldens beside
# them.
#   tools/train/export.sh FROM [ARTIFACT]
# FROM: a folder of demo.tgz.NN parts (gpu_run.sh) or a work folder (target/, assistant/, goldens/,
# tokenizer/). ARTIFACT: default testdata/models/demo (replaced only when everything succeeded).
# GEMMA4 names the native CLI (default build/gemma4). Prints the work folder that holds the bf16
# checkpoints (for `gemma4 accuracy` and re-exports).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
from=${1:?usage: export.sh FROM [ARTIFACT]}
art=${2:-$root/testdata/models/demo}
gemma4=${GEMMA4:-$root/build/gemma4}
work=$from
if compgen -G "$from/demo.tgz.*" >/dev/null; then
  work="$from/unpacked"
  rm -rf "$work" && mkdir -p "$work"
  cat "$from"/demo.tgz.* | tar -xzf - -C "$work"
fi
for f in target/model.safetensors assistant/model.safetensors goldens/q8_hashes.json goldens/golden.json \
         goldens/assistant_golden.json tokenizer/golden.json; do
  [ -f "$work/$f" ] || { echo "$work/$f: missing" >&2; exit 1; }
done
tmp="$art.partial"
rm -rf "$tmp"
"$gemma4" export --model "$work/target" --assistant "$work/assistant" --quant q8 -o "$tmp"
python3 "$root/tools/train/check_export.py" --hashes "$work/goldens/q8_hashes.json" --artifact "$tmp"
cp "$work/goldens/golden.json" "$tmp/golden.json"
cp "$work/goldens/assistant_golden.json" "$tmp/assistant/golden.json"
cp "$work/tokenizer/golden.json" "$tmp/tokenizer_golden.json"
rm -rf "$art"
mv "$tmp" "$art"
echo "$art: $(find "$art" -type f -printf '%s\n' | awk '{s += $1} END {print s}') bytes"
echo "bf16 checkpoints: $work"
