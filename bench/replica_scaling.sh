#!/usr/bin/env bash
# Replica scaling on the CPU backend (a benchmark, not a test): the same
# bert-mini step trained by one process and by N = 2 replicas under mpirun,
# with and without replicated tensor sharding, and tensor parallelism (T = 2
# alone, with sequence parallelism, and T = 2 x D = 2 with and without RTS,
# 4 processes on 2 cores: correctness, not speed), measured in the same run.
#
#   bash bench/replica_scaling.sh            # STEPS=10 WARMUP=3 BATCH=32
#
# bert-mini (4 layers, hidden 256, vocabulary 30522), seq 128, global batch
# BATCH in micro-batches of BATCH/2, AdamW, fp32. The machine's cores are
# shared out: one process gets them all (OMP threads = CORES), each of the
# N replicas CORES/N. Reported per configuration: the median samples/s of
# the global batch over STEPS updates after WARMUP, the bytes each replica
# sends in collectives per update (ferry's ring count), and the time rank 0
# spent in collective kernels (ferry train --profile), as a share of the
# step.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

steps=${STEPS:-10}
warmup=${WARMUP:-3}
batch=${BATCH:-32}
cores=${CORES:-$(nproc)}
ferry=${FERRY:-build/bin/ferry}
mpirun=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe --bind-to none}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [[ ! -x $ferry ]]; then
  echo "bench: $ferry not found; build first (bash scripts/build.sh)" >&2
  exit 1
fi

common=(configs/bert-mini.yaml --steps $((steps + warmup)) --log-every 0 --profile
  --set training.global_batch_size=$batch --set execution.micro_batch_size=$((batch / 2))
  --set training.optimizer.name=adamw --set training.lr_schedule.kind=constant)

# run NAME PROCESSES [--set ...]: trains, then prints one table row (the
# --set given override data_parallel = PROCESSES).
run() {
  local name=$1 n=$2
  shift 2
  local threads=$((cores / n))
  ((threads >= 1)) || threads=1
  local launch=()
  ((n > 1)) && launch=($mpirun -np "$n" -x OMP_NUM_THREADS=$threads -x OPENBLAS_NUM_THREADS=$threads -x OMP_WAIT_POLICY)
  OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "${launch[@]}" "$ferry" train "${common[@]}" \
    --set execution.data_parallel="$n" --metrics "$out/$name.jsonl" "$@" > "$out/$name.out"
  python3 - "$out/$name.jsonl" "$out/$name.out" "$warmup" "$name" "$n" "$threads" "$steps" <<'PY'
import json, re, statistics, sys
path, log, warmup, name, n, threads, steps = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
rate = statistics.median(r["samples_per_s"] for r in rows[int(warmup):])
text = open(log).read()
sent = re.search(r"collectives: (.*) sent per rank", text)
seconds = share = 0.0
for kernel in ("all_reduce", "reduce_scatter", "all_gather"):
    m = re.search(rf"^{kernel}\s+\d+\s+([0-9.]+)\s+([0-9.]+)%", text, re.M)
    if m:
        seconds += float(m.group(1))
        share += float(m.group(2))
units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
per_update = "-"
if sent:
    value, unit = sent.group(1).split()
    per_update = f"{float(value) * units[unit] / len(rows) / 2**20:.1f} MiB"
timing = f"{seconds:.2f} s ({share:.1f}% of kernel time)" if sent else "-"
print(f"| {name} | {n} x {threads} threads | {rate:.2f} | {per_update} | {timing} |")
PY
}

echo "bert-mini, seq 128, global batch $batch, $cores cores, OMP_WAIT_POLICY=$OMP_WAIT_POLICY, median of $steps updates after $warmup"
echo "| configuration | processes | samples/s | sent per rank per update | time in collectives (rank 0) |"
echo "|---|---|---|---|---|"
run one-process 1
run data-parallel 2
run sharded 2 --set execution.replicated_tensor_sharding=true
run sharded-phased 2 --set execution.replicated_tensor_sharding=true \
  --set execution.mode=phased --set execution.device_memory_limit=256MiB
run tensor-parallel 2 --set execution.data_parallel=1 --set execution.tensor_parallel=2
run sequence-parallel 2 --set execution.data_parallel=1 --set execution.tensor_parallel=2 \
  --set execution.sequence_parallel=true
run tensor-x-data-parallel 4 --set execution.data_parallel=2 --set execution.tensor_parallel=2
run tensor-x-sharded 4 --set execution.data_parallel=2 --set execution.tensor_parallel=2 \
  --set execution.replicated_tensor_sharding=true
