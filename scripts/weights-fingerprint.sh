#!/usr/bin/env bash
# Trains bert-tiny for a few updates in each execution mode and prints the
# SHA-256 of the saved model and optimizer safetensors. Refactors that must not
# change numbers (issue 15) compare this table before and after.
# Usage: scripts/weights-fingerprint.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build=${1:-build}
steps=${2:-3}
ferry="$build/bin/ferry"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {
  local name=$1
  shift
  FERRY_CACHE_DIR="$work/cache" "$ferry" train configs/bert-tiny.yaml --no-cache \
    --steps "$steps" --log-every 0 --save "$work/$name" "$@" >/dev/null
  local dir
  dir="$work/$name/$(cat "$work/$name/latest")"
  printf '%-10s model %s\n' "$name" "$(sha256sum "$dir/model.safetensors" | cut -c1-16)"
  printf '%-10s optim %s\n' "$name" "$(sha256sum "$dir/optimizer.safetensors" | cut -c1-16)"
}
run resident
run phased --set execution.mode=phased
run phased-90M --set execution.mode=phased --set execution.device_memory_limit=90MiB
run recompute --set execution.recompute=layer
run bf16 --set training.precision=bf16
run fp16 --set training.precision=fp16
run phased-rc --set execution.mode=phased --set execution.recompute=layer
# The CUDA backend under the simulator (test/cudasim), when it was built.
if [[ -x "$build/bin/ferry-cudasim" ]]; then
  ferry="$build/bin/ferry-cudasim"
  export ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=0
  run sim-resident --set execution.backend=cuda
  run sim-phased --set execution.backend=cuda --set execution.mode=phased --set execution.device_memory_limit=90MiB
fi
