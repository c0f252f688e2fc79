#!/usr/bin/env bash
# CPU training throughput: ferry's CPU backend against PyTorch eager fp32 on
# the same model and step, measured in the same run (a benchmark, not a test).
#
#   bash bench/cpu_throughput.sh            # bert-mini, seq 128, batch 32
#   STEPS=20 WARMUP=5 bash bench/cpu_throughput.sh
#
# Both sides: 4 layers, hidden 256, 4 heads, FFN 1024, vocabulary 30522,
# seq 128, 20 predictions, batch 32 in one micro-batch, dropout 0.1, AdamW
# (lr 1e-3, betas 0.9/0.999, eps 1e-6, weight decay 0.01 off for biases and
# LayerNorm) after clip-by-global-norm 1.0, fp32, 2 threads. Reported: the
# median samples/s over STEPS steps after WARMUP steps. PyTorch runs only if
# `import torch` works (Debian: python3-torch) and must use the same OpenBLAS
# as ferry (libopenblas0-pthread; the script prints which BLAS torch loaded).
set -euo pipefail
cd "$(dirname "$0")/.."

# Both sides run with the same OpenMP settings. Passive waiting matters on 2
# cores, where idle OpenMP threads spinning take the cores OpenBLAS's threads
# need (ferry sets it itself when unset; PyTorch does not): see
# docs/benchmarks.md for both sides under each policy.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

steps=${STEPS:-10}
warmup=${WARMUP:-3}
threads=${THREADS:-2}
ferry=${FERRY:-build/bin/ferry}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

if [[ ! -x $ferry ]]; then
  echo "bench: $ferry not found; build first (bash scripts/build.sh)" >&2
  exit 1
fi

echo "== ferry (CPU backend), bert-mini, seq 128, batch 32, $threads threads, OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "$ferry" train configs/bert-mini.yaml \
  --steps $((steps + warmup)) --log-every 0 --metrics "$out/ferry.jsonl" \
  --set training.global_batch_size=32 --set execution.micro_batch_size=32 \
  --set model.seq_length=128 --set model.max_predictions=20 \
  --set model.hidden_dropout=0.1 --set model.attention_dropout=0.1 \
  --set training.optimizer.name=adamw --set training.optimizer.lr=1e-3 \
  --set training.optimizer.weight_decay=0.01 --set training.optimizer.clip_norm=1.0 \
  --set training.lr_schedule.kind=constant >/dev/null
ferry_rate=$(python3 - "$out/ferry.jsonl" "$warmup" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rates = [r["samples_per_s"] for r in rows[int(sys.argv[2]):]]
print(f"{statistics.median(rates):.2f}")
PY
)
echo "ferry    median $ferry_rate samples/s"

find_torch() {
  torch_python=""
  for py in python3 /usr/bin/python3; do
    if "$py" -c "import torch" 2>/dev/null; then torch_python=$py; return; fi
  done
}
find_torch
# The reference needs Debian's PyTorch and the same OpenBLAS ferry uses
# (Debian's default libblas3 is the slow reference BLAS, which would flatter
# ferry). As root, install them; otherwise say how.
if [[ -z $torch_python || ! -e /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ]] &&
   [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  echo "bench: installing python3-torch libopenblas0-pthread for the PyTorch reference"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch libopenblas0-pthread >/dev/null
  find_torch
fi
if [[ -z $torch_python ]]; then
  echo "pytorch  not importable (apt-get install python3-torch libopenblas0-pthread); no ratio"
  exit 0
fi
echo "== PyTorch eager fp32, same model and step"
OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "$torch_python" bench/pytorch_bert.py \
  --layers 4 --hidden 256 --heads 4 --ffn 1024 --vocab 30522 --seq 128 \
  --predictions 20 --batch 32 --warmup "$warmup" --steps "$steps" \
  --threads "$threads" --dropout 0.1 >"$out/torch.json"
torch_rate=$(python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["samples_per_s_median"])' "$out/torch.json")
blas=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["blas"])' "$out/torch.json")
echo "pytorch  median $torch_rate samples/s   (BLAS: $blas)"
python3 -c "import sys; print(f'ratio    ferry / pytorch = {float(sys.argv[1]) / float(sys.argv[2]):.2f}x')" "$ferry_rate" "$torch_rate"
