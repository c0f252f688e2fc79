#!/usr/bin/env bash
# Trains bert-tiny for a few updates in each execution mode and prints the
# SHA-256 of the saved model and optimizer safetensors. Refactors that must not
# change numbers (issues 15 and 31) compare this table before and after.
# Modes: resident, phased (with and without a budget, with recompute),
# recompute, gradient accumulation, bf16, fp16, packed rows (data made from
# the Debian licence texts), 2 replicas and replicated tensor sharding (when
# ferry has MPI and mpirun is on PATH), SQuAD fine-tuning, and the CUDA
# backend under the simulator (when it was built). A mode that cannot run here
# prints why instead of a hash.
# Usage: scripts/weights-fingerprint.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build=${1:-build}
steps=${2:-3}
ferry="$build/bin/ferry"
inputs=test/e2e/Inputs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export FERRY_CACHE_DIR="$work/cache"

print_hashes() {
  local name=$1 save=$2
  local dir
  dir="$save/$(cat "$save/latest")"
  printf '%-14s model %s\n' "$name" "$(sha256sum "$dir/model.safetensors" | cut -d' ' -f1)"
  printf '%-14s optim %s\n' "$name" "$(sha256sum "$dir/optimizer.safetensors" | cut -d' ' -f1)"
}
# run NAME [LAUNCHER...] -- [ferry train ARGS...]
run() {
  local name=$1
  shift
  local launcher=()
  while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
  shift
  "${launcher[@]}" "$ferry" train configs/bert-tiny.yaml --no-cache \
    --steps "$steps" --log-every 0 --save "$work/$name" "$@" >/dev/null
  print_hashes "$name" "$work/$name"
}

run resident --
run phased -- --set execution.mode=phased
run phased-90M -- --set execution.mode=phased --set execution.device_memory_limit=90MiB
run recompute -- --set execution.recompute=layer
run phased-rc -- --set execution.mode=phased --set execution.recompute=layer
run accumulation -- --set execution.micro_batch_size=2
run bf16 -- --set training.precision=bf16
run fp16 -- --set training.precision=fp16

# Packed rows: up to 3 sequences a row, from the licence texts.
licences=/usr/share/common-licenses
if [[ -r $licences/Apache-2.0 && -r $licences/GPL-3 ]]; then
  mkdir -p "$work/text"
  cp "$licences/Apache-2.0" "$work/text/"
  python3 "$inputs/bert_tokenizer.py" vocab "$work/vocab.txt" "$licences/Apache-2.0" "$licences/GPL-3"
  "$build/bin/ferry-datagen" --from-text "$work/text" --vocab "$work/vocab.txt" -o "$work/packed-data" \
    --seq 128 --predictions 20 --dupe-factor 1 --seed 3 --pack --max-sequences-per-pack 3 >/dev/null
  run packed -- --set data.path="$work/packed-data" --set model.max_sequences_per_pack=3 \
    --set model.vocab_size="$(wc -l < "$work/vocab.txt")"
else
  printf '%-14s skipped: no %s/Apache-2.0 and GPL-3 to make packed data from\n' packed "$licences"
fi

# Replicas: ferry built with MPI, and Open MPI's mpirun (its flags below).
if command -v mpirun >/dev/null && mpirun --version 2>/dev/null | grep -q 'Open MPI' &&
  "$ferry" --version 2>/dev/null | grep -Eq '^ *mpi: *yes'; then
  mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)
  run replicas-2 "${mpi[@]}" -- --set execution.data_parallel=2
  run rts-2 "${mpi[@]}" -- --set execution.data_parallel=2 \
    --set execution.replicated_tensor_sharding=true --set execution.rts_min_elements=100
else
  printf '%-14s skipped: needs ferry built with MPI and Open MPI'"'"'s mpirun on PATH\n' replicas-2 rts-2
fi

# SQuAD fine-tuning: one epoch over the seven questions of
# test/e2e/Inputs/squad, 3 updates (STEPS does not apply) of 3 micro-batches of
# one window, the last update partial.
python3 "$inputs/squad_text.py" "$inputs/squad/tiny-train-v1.1.json" > "$work/squad-text.txt"
python3 "$inputs/bert_tokenizer.py" vocab "$work/squad-vocab.txt" "$work/squad-text.txt"
"$ferry" squad train configs/bert-tiny.yaml --no-cache --vocab "$work/squad-vocab.txt" \
  --data "$inputs/squad/tiny-train-v1.1.json" --set model.seq_length=128 --set model.vocab_size=600 \
  --set execution.micro_batch_size=1 --set training.global_batch_size=3 --doc-stride 32 \
  --max-query-length 32 --epochs 1 --log-every 0 --save "$work/squad" >/dev/null
print_hashes squad "$work/squad"

# The CUDA backend under the simulator (test/cudasim), when it was built.
if [[ -x "$build/bin/ferry-cudasim" ]]; then
  ferry="$build/bin/ferry-cudasim"
  export ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=0
  run sim-resident -- --set execution.backend=cuda
  run sim-phased -- --set execution.backend=cuda --set execution.mode=phased --set execution.device_memory_limit=90MiB
fi
