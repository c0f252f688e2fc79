#!/usr/bin/env bash
# GPU benchmarks of issue 7: samples/s and model-FLOP utilisation of ferry's
# CUDA backend for bert-base and bert-large at seq 128 and 512, resident and
# phased (device budget below weights + optimizer state: a quarter for
# bert-large, half for bert-base), beside
# PyTorch (transformers BertForPreTraining, bf16 autocast, eager and
# torch.compile) in the same run, on one GPU. Split into cases so each
# command fits the GPU machine's 10-minute limit:
#
#   bench/gpu_throughput.sh prepare                 # here (has the compiler):
#                                                   # compile every case to bench/out/*.fxe
#   bench/gpu_throughput.sh run CASE [CASE...]      # on the GPU machine
#   bench/gpu_throughput.sh list                    # the cases
#   bench/gpu_throughput.sh prepare-kit             # the GPU kit's: bert-large
#                                                   # resident and phased only
#
# CASE = MODEL-SEQ-MODE with MODEL base|large, SEQ 128|512, MODE
# resident|phased|direct|eager|compile, e.g. large-128-resident
# large-128-eager. `direct` runs the resident executable with
# execution.cuda_graphs=false (every kernel launched from the host, every
# step), against which `resident` (CUDA-graph replay) shows what the
# launches cost.
# Results: one JSON line per case on stdout and in bench/out/results.jsonl.
# MFU = model FLOPs (6 x parameters x tokens + 12 x layers x hidden x seq x
# tokens for attention) per second over the H200's 989 TFLOP/s dense bf16.
# Not yet run on a GPU (no GPU in the session that wrote it).
set -euo pipefail
cd "$(dirname "$0")/.."
FERRY=${FERRY:-build/bin/ferry}
OUT=${OUT:-bench/out}
STEPS=${STEPS:-20}
WARMUP=${WARMUP:-5}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"

params() { [[ $1 == base ]] && echo 110111042 || echo 336232258; } # ferry inspect
layers() { [[ $1 == base ]] && echo 12 || echo 24; }
hidden() { [[ $1 == base ]] && echo 768 || echo 1024; }
config() { [[ $2 == 128 ]] && echo "configs/bert-$1.yaml" || echo "configs/bert-$1-512.yaml"; }
# Global batch 512 (the issue's phased comparison). Resident: micro-batches
# of 64 at seq 128 and 16 at seq 512; phased, under a quarter of weights +
# moments, a quarter of that (activations must fit beside the staging).
micro() { [[ $1 == 128 ]] && echo 64 || echo 16; }
phased_micro() { [[ $1 == 128 ]] && echo 16 || echo 4; }

compile_case() { # MODEL SEQ MODE
  local m=$1 s=$2 mode=$3
  local mb; [[ $mode == phased ]] && mb=$(phased_micro "$s") || mb=$(micro "$s")
  # Resident keeps every activation (12.7 GiB planned at seq 128 and 512,
  # far inside the card): recomputing a layer would cost a quarter of the
  # step. Phased recomputes, so the activations fit beside the staging.
  local sets=(--set execution.backend=cuda --set training.precision=bf16
    --set training.global_batch_size=512 --set execution.micro_batch_size="$mb")
  if [[ $mode == phased ]]; then
    sets+=(--set execution.recompute=layer)
    # Below fp32 weights + Adam moments (12 bytes per parameter): a quarter
    # for bert-large (the issue's target); half for bert-base, whose word
    # embedding update (embedding, gradient, tied gradient, two moments: 447
    # MiB) does not fit a quarter (315 MiB) until that update is chunked.
    local divisor=4; [[ $m == base ]] && divisor=2
    local budget=$(( $(params "$m") * 12 / divisor ))
    sets+=(--set execution.mode=phased --set execution.device_memory_limit="$budget")
  fi
  "$FERRY" compile "$(config "$m" "$s")" "${sets[@]}" -o "$OUT/$m-$s-$mode.fxe"
  "$FERRY" plan "$(config "$m" "$s")" "${sets[@]}" --model > "$OUT/$m-$s-$mode.plan.txt"
}

run_case() { # CASE
  IFS=- read -r m s mode <<< "$1"
  local tokens_per_sample=$s
  local flops_per_sample=$(( 6 * $(params "$m") * s + 12 * $(layers "$m") * $(hidden "$m") * s * s ))
  local line
  case $mode in
    resident|phased|direct)
      local exe=$mode run=(); [[ $mode == direct ]] && exe=resident &&
        run=(--set execution.cuda_graphs=false)
      "$FERRY" train "$OUT/$m-$s-$exe.fxe" --steps $((STEPS + WARMUP)) --log-every 0 \
          "${run[@]}" --metrics "$OUT/$m-$s-$mode.jsonl" > "$OUT/$m-$s-$mode.log"
      line=$("$PYTHON" - "$OUT/$m-$s-$mode.jsonl" "$WARMUP" "$flops_per_sample" "$m" "$s" "$mode" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])][int(sys.argv[2]):]
rate = statistics.median(r["samples_per_s"] for r in rows)
link = statistics.median(r.get("host_link_bytes", 0) for r in rows)
print(json.dumps({"case": f"{sys.argv[4]}-{sys.argv[5]}-{sys.argv[6]}", "system": "ferry",
                  "samples_per_s": rate, "mfu": rate * int(sys.argv[3]) / 989e12,
                  "host_link_bytes_per_step": link}))
PY
)
      ;;
    eager|compile)
      local flag=(); [[ $mode == compile ]] && flag=(--compile)
      local json
      json=$("$PYTHON" bench/pytorch_bert_gpu.py --model "$m" --seq "$s" \
          --batch "$(micro "$s")" --steps "$STEPS" --warmup "$WARMUP" "${flag[@]}")
      line=$("$PYTHON" -c "import json,sys; r=json.loads(sys.argv[1]); print(json.dumps({'case': '$1', 'system': 'pytorch-' + r['mode'], 'samples_per_s': r['samples_per_s'], 'mfu': r['samples_per_s'] * $flops_per_sample / 989e12}))" "$json")
      ;;
    *) echo "unknown mode in case $1" >&2; exit 2 ;;
  esac
  echo "$line" | tee -a "$OUT/results.jsonl"
}

cases() {
  for m in base large; do for s in 128 512; do for mode in resident direct phased eager compile; do
    echo "$m-$s-$mode"; done; done; done
}

case "${1:-}" in
  prepare)
    for m in base large; do for s in 128 512; do for mode in resident phased; do
      compile_case "$m" "$s" "$mode"; done; done; done
    ls -la "$OUT"/*.fxe ;;
  prepare-kit)
    for s in 128 512; do for mode in resident phased; do
      compile_case large "$s" "$mode"; done; done ;;
  run) shift; for c in "$@"; do run_case "$c"; done ;;
  list) cases ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2 ;;
esac
