#!/usr/bin/env bash
# Builds the GPU kit (docs/gpu-kit.md): everything the GPU check needs on a
# GPU machine that has no compiler, in one compressed archive, whose path is
# the last line printed.
#
#   scripts/gpu-kit.sh           build the kit (build/gpu-kit.tar.xz)
#   scripts/gpu-kit.sh --check   and then prove it here, without a GPU: the
#                                archive's size, every binary's libraries,
#                                the real CUDA module loading with no GPU and
#                                no NCCL, and the kit's run.sh end to end at
#                                reduced sizes with the simulator's module
#                                and GPU tests swapped in
#
# It needs the full build (BUILD_DIR, default build/: its ferry has the
# compiler, which fills the kit's executable cache and compiles the
# benchmark executables). The kit itself is a runtime-only build in
# KIT_BUILD_DIR (default build-kit/), for a portable CPU (x86-64-v3),
# without MPI (the GPU machines have none).
#
# Environment: BUILD_DIR, KIT_BUILD_DIR, JOBS, KIT_MAX_MIB (24).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
full=${BUILD_DIR:-build}
kitbuild=${KIT_BUILD_DIR:-build-kit}
check=no
[[ "${1:-}" == "--check" ]] && check=yes
max_mib=${KIT_MAX_MIB:-24}
say() { echo "gpu-kit: $*" >&2; }

[[ -x "$full/bin/ferry" && -e "$full/bin/libferry-compiler.so" ]] || {
  say "error: $full/bin/ferry with the compiler is missing: run scripts/build.sh first"
  exit 1
}

# 1. The kit's binaries: a runtime-only build for x86-64-v3, no MPI.
targets="ferry ferry-run ferry-backend-cuda ferry-gpu-tests ferry-datagen"
[[ $check == yes ]] && targets+=" ferry-gpu-kit-sim"
say "building $targets in $kitbuild (FERRY_CPU_ARCH=x86-64-v3)"
BUILD_DIR=$kitbuild FERRY_BUILD_COMPILER=OFF FERRY_ENABLE_MPI=OFF \
  FERRY_CPU_ARCH=x86-64-v3 TARGETS="$targets" bash scripts/build.sh >/dev/null

# 2. The tree: binaries, what the tests and the check read.
stage=$kitbuild/stage/ferry-gpu-kit
rm -rf "$kitbuild/stage"
mkdir -p "$stage"/{bin,lib,bench,cache,test/e2e}
for f in ferry libferry-run.so libferry-backend-cuda.so ferry-gpu-tests ferry-datagen; do
  cp "$kitbuild/bin/$f" "$stage/bin/"
done
cp -r configs "$stage/"
cp -r test/e2e/Inputs "$stage/test/e2e/"
cp scripts/kit/run.sh scripts/kit/check.py scripts/kit/hf_check.py "$stage/"
cp bench/pytorch_bert_gpu.py "$stage/bench/"
commit=$(git rev-parse --short=12 HEAD)
dirty=$(git status --porcelain --untracked-files=no | head -1)
printf 'commit %s%s, built %s on %s\n' "$commit" "${dirty:+ (with uncommitted changes)}" \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(. /etc/os-release && echo "$PRETTY_NAME")" \
  > "$stage/KIT_INFO"

# 3. Shared libraries: every one the binaries load, except the ones the GPU
# machine provides (glibc, libstdc++, libgcc_s, the driver, cuBLAS/cuBLASLt,
# cudart, NCCL). RUNPATH $ORIGIN/../lib on the binaries, $ORIGIN on the
# libraries.
# The set, as a regular expression over sonames, is kept in one file.
allowed=$(<scripts/kit/allowed-libraries.txt)
for b in "$stage"/bin/*; do
  libs=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64 ldd "$b")
  while read -r name _ path _; do
    [[ -z "$name" || "$name" =~ $allowed || "$path" != /* ]] && continue
    [[ -e "$stage/lib/$name" ]] || cp -L "$path" "$stage/lib/$name"
  done <<<"$libs"
done
command -v patchelf >/dev/null || { say "error: patchelf is missing (scripts/install-deps.sh)"; exit 1; }
for b in "$stage"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib:$ORIGIN' "$b"; done
for l in "$stage"/lib/*; do patchelf --set-rpath '$ORIGIN' "$l"; done

# 4. The executables the check runs: bert-large at seq 128 and 512, resident
# and phased, as bench/gpu_throughput.sh compiles them, and bert-tiny
# shapes for the simulated run (--sizes small).
FERRY=$full/bin/ferry OUT=$stage/bench bash bench/gpu_throughput.sh prepare-kit >/dev/null
"$full/bin/ferry" compile configs/bert-tiny.yaml --no-cache \
  --set execution.backend=cuda --set training.precision=bf16 \
  --set model.vocab_size=200 --set model.hidden_size=32 --set model.ffn_size=64 \
  --set model.seq_length=32 --set model.max_predictions=5 \
  --set training.global_batch_size=4 --set execution.micro_batch_size=2 \
  -o "$stage/bench/tiny-resident.fxe" >/dev/null
"$full/bin/ferry" compile configs/bert-tiny.yaml --no-cache \
  --set execution.backend=cuda --set training.precision=bf16 \
  --set model.vocab_size=200 --set model.hidden_size=32 --set model.ffn_size=64 \
  --set model.seq_length=32 --set model.max_predictions=5 \
  --set training.global_batch_size=4 --set execution.micro_batch_size=2 \
  --set execution.mode=phased --set execution.recompute=layer \
  --set execution.device_memory_limit=800KiB \
  -o "$stage/bench/tiny-phased.fxe" >/dev/null
# The correctness step's model (hf_check.py): small, fp32, for each backend.
hf_sets=(--no-cache --set training.precision=fp32 --set model.vocab_size=1000
  --set model.hidden_size=64 --set model.num_heads=2 --set model.ffn_size=256
  --set model.seq_length=64 --set model.max_predictions=10
  --set training.global_batch_size=8 --set execution.micro_batch_size=8)
"$full/bin/ferry" compile configs/bert-tiny.yaml "${hf_sets[@]}" \
  -o "$stage/bench/hf-cpu.fxe" >/dev/null
"$full/bin/ferry" compile configs/bert-tiny.yaml "${hf_sets[@]}" \
  --set execution.backend=cuda -o "$stage/bench/hf-cuda.fxe" >/dev/null
python3 scripts/kit/cases.py "$stage/bench"

# 5. The executable cache: exactly what the GPU tests compile, by the tests
# themselves in compile-only mode (their checks fail then, by design), with
# the paths the kit's run.sh gives them (/tmp/ferry-gpu-kit, a link to the
# kit), so that their cache keys are the kit's.
ln -sfn "$root/$stage" /tmp/ferry-gpu-kit
mkdir -p /tmp/ferry-gpu-kit-runs
FERRY_TEST_COMPILE_ONLY=1 FERRY_CACHE_DIR=$root/$stage/cache \
  FERRY_SOURCE_DIR=/tmp/ferry-gpu-kit FERRY_TEST_TMPDIR=/tmp/ferry-gpu-kit-runs \
  FERRY_BINARY_DIR=$root/$full/bin \
  "$kitbuild/bin/ferry-gpu-tests" --gtest_filter='CudaTraining.*' \
  > "$kitbuild/prefill.log" 2>&1 || true
entries=$(find "$stage/cache" -name '*.fxc' | wc -l)
compiled=$(grep -c -- '--compile-only:' "$kitbuild/prefill.log" || true)
if ((entries == 0)); then
  say "error: the tests compiled nothing into the kit's cache (see $kitbuild/prefill.log)"
  exit 1
fi
say "executable cache: $entries entries from $compiled compile-only runs of the GPU tests"

# 6. The archive.
archive=$full/gpu-kit.tar.xz
tar -C "$kitbuild/stage" -cf - ferry-gpu-kit | xz -T2 -6 > "$archive.tmp"
mv "$archive.tmp" "$archive"
bytes=$(stat -c %s "$archive")
say "archive: $archive, $(( bytes / 1024 )) KiB (bound ${max_mib} MiB)"
if (( bytes > max_mib * 1024 * 1024 )); then
  say "error: the kit is larger than ${max_mib} MiB"
  exit 1
fi

if [[ $check == yes ]]; then
  bash scripts/kit/ci-check.sh "$archive" "$kitbuild" >&2
fi
echo "$root/$archive"
