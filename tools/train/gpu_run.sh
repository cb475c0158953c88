#!/usr/bin/env bash
# The GPU part of the demo pair's training, for a machine with a CUDA GPU, torch, transformers 5.17
# and tokenizers 0.23 but maybe no network: a smoke run of every stage at a tiny size (stops here
# if it fails), then the real run; packs what the real run made into OUT as demo.tgz.NN parts of
# at most 15 MiB (export.sh reads them back).
#   tools/train/gpu_run.sh OUT [CORPUS] [run_stages.py options]
# CORPUS: corpus.jsonl.gz from corpus.py (default: beside this script). Run from the repository
# root (goldens.py and tokenizer.py read tools/reference and testdata/tokenizer there).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: gpu_run.sh OUT [CORPUS] [options]}
corpus=${2:-$here/corpus.jsonl.gz}
shift $(( $# >= 2 ? 2 : 1 ))
work=${WORK:-$(mktemp -d)}
export PYTHONUNBUFFERED=1
mkdir -p "$out" "$work/smoke" "$work/full"
cp "$corpus" "$work/smoke/corpus.jsonl.gz" && cp "$corpus" "$work/full/corpus.jsonl.gz" || exit 1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
python3 -c 'import torch, transformers, tokenizers; print("torch", torch.__version__, "transformers", transformers.__version__, "tokenizers", tokenizers.__version__)'
python3 "$here/run_stages.py" --work "$work/smoke" --smoke || { echo "smoke run failed: the real run was not started"; exit 1; }
python3 "$here/run_stages.py" --work "$work/full" "$@"
rc=$?
parts=()
for d in tokenizer target assistant goldens reports; do [ -e "$work/full/$d" ] && parts+=("$d"); done
if [ ${#parts[@]} -gt 0 ]; then
  tar -C "$work/full" -czf - "${parts[@]}" | split -b 15m -d - "$out/demo.tgz."
  ls -l "$out"
fi
exit $rc
