#!/usr/bin/env bash
# Compiles every config in configs/ in the execution modes the tests use and
# keeps what `ferry inspect` prints of each executable (schedule, buffers,
# arena plan) and its HTML report (phase timeline, memory over the schedule),
# less what names the format, size, checksum and build. A change to
# the executable's encoding (issue 31) must leave this table equal.
# Usage: scripts/inspect-fingerprint.sh [BUILD_DIR] [OUT_DIR]
#   OUT_DIR keeps each executable's stripped inspect output, for diffing.
set -euo pipefail
build=${1:-build}
out=${2:-}
ferry="$build/bin/ferry"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -n $out ]] && mkdir -p "$out"

# The lines naming the file's format, size and checksum go; the build's
# version is masked where it shares a line with the plan (the HTML's note).
strip() {
  grep -vE 'ferry executable, format|compiled by|checksum' |
    sed -E 's/ferry [0-9]+\.[0-9]+\.[0-9]+ \([0-9a-f]+\)/ferry VERSION/g' || true
}
one() {
  local name=$1 config=$2
  shift 2
  "$ferry" compile "$config" --no-cache -o "$work/$name.fxe" "$@" >/dev/null
  "$ferry" inspect "$work/$name.fxe" | strip > "$work/$name.txt"
  "$ferry" inspect "$work/$name.fxe" --html -o "$work/$name.html" >/dev/null
  strip < "$work/$name.html" | sed "s|$work/||g" > "$work/$name.html.txt"
  printf '%-28s %s %s\n' "$name" "$(sha256sum < "$work/$name.txt" | cut -c1-16)" \
    "$(sha256sum < "$work/$name.html.txt" | cut -c1-16)"
  [[ -n $out ]] && cp "$work/$name.txt" "$work/$name.html.txt" "$out/"
  return 0
}

printf '%-28s %-16s %s\n' executable inspect html
for config in configs/*.yaml; do
  base=$(basename "$config" .yaml)
  one "$base" "$config"
  one "$base-phased" "$config" --set execution.mode=phased
  one "$base-cuda" "$config" --set execution.backend=cuda
  one "$base-cuda-phased" "$config" --set execution.backend=cuda --set execution.mode=phased
done
tiny=configs/bert-tiny.yaml
one tiny-recompute $tiny --set execution.recompute=layer
one tiny-phased-recompute $tiny --set execution.mode=phased --set execution.recompute=layer
one tiny-phased-90M $tiny --set execution.mode=phased --set execution.device_memory_limit=90MiB
one tiny-phased-noprefetch $tiny --set execution.mode=phased --set execution.prefetch=false
one tiny-accumulation $tiny --set execution.micro_batch_size=2
one tiny-bf16 $tiny --set training.precision=bf16
one tiny-bf16-phased $tiny --set training.precision=bf16 --set execution.mode=phased
one tiny-fp16 $tiny --set training.precision=fp16
one tiny-unfused $tiny --set execution.fusion=false
one tiny-packed $tiny --set model.max_sequences_per_pack=3
one tiny-packed-phased $tiny --set model.max_sequences_per_pack=3 --set execution.mode=phased
one tiny-dp2 $tiny --set execution.data_parallel=2
one tiny-rts2 $tiny --set execution.data_parallel=2 --set execution.replicated_tensor_sharding=true
one tiny-rts2-phased $tiny --set execution.data_parallel=2 --set execution.replicated_tensor_sharding=true --set execution.mode=phased
one tiny-squad $tiny --set model.task=squad
one tiny-squad-phased $tiny --set model.task=squad --set execution.mode=phased
one tiny-lamb-cuda-bf16 $tiny --set execution.backend=cuda --set training.precision=bf16 --set training.optimizer.name=lamb
one large-phased-h100 configs/bert-large.yaml --set execution.backend=cuda --set execution.mode=phased --set execution.target=h100
