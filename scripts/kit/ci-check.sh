#!/usr/bin/env bash
# CI's proof of the GPU kit without a GPU (scripts/gpu-kit.sh --check;
# docs/gpu-kit.md): unpacks the archive into a fresh directory and checks
#  1. every kit binary's libraries, with only the kit's lib/ on the path:
#     each resolves inside the kit, or is one the GPU machine provides;
#  2. the real CUDA module loads where there is no GPU and no NCCL: `ferry
#     devices` says there is no device, cleanly;
#  3. with the simulator's CUDA module and GPU tests (non-ASan builds of
#     the same sources, the race checker on) in place of the real ones:
#     every GPU test's ferry commands, compile-only, find their executables
#     in the kit's cache with the kit's ferry (no compiler); then the kit's
#     run.sh end to end at reduced sizes: probe, tests (a quick set, named
#     below) and speed must pass, anchor, correctness and sanitizer skip (no
#     transformers, no compute-sanitizer here), and summary.md and
#     results.json say so.
#
#   ci-check.sh ARCHIVE KIT_BUILD_DIR
set -euo pipefail
archive=$1 kitbuild=$2
say() { echo "gpu-kit check: $*"; }
tmp=$(mktemp -d /tmp/ferry-gpu-kit-check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
tar -xJf "$archive" -C "$tmp"
kit=$tmp/ferry-gpu-kit
say "unpacked $(du -sh "$kit" | cut -f1) in $(( $(date +%s) - start )) s"

# The libraries the GPU machine provides (the one list: allowed-libraries.txt).
allowed=$(<"$(dirname "$0")/allowed-libraries.txt")
bad=0 checked=0
for f in "$kit"/bin/* "$kit"/lib/*; do
  [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == "177ELF" ]] || continue
  checked=$((checked + 1))
  libs=$(env -u LD_LIBRARY_PATH ldd "$f" || true)
  while read -r line; do
    name=${line%% *}
    [[ -z "$name" ]] && continue
    if [[ "$line" == *"=> not found"* ]]; then
      [[ "$name" =~ $allowed ]] || { say "$f: $name not found"; bad=1; }
    elif [[ "$line" == *"=> /"* ]]; then
      path=${line#*=> }; path=${path%% (*}
      [[ "$path" == "$kit"/* || "$name" =~ $allowed ]] ||
        { say "$f: $name resolves outside the kit ($path)"; bad=1; }
    fi
  done <<<"$libs"
done
((bad == 0)) || { say "error: libraries outside the kit and the allowed set"; exit 1; }
say "ldd: $checked binaries resolve inside the kit or to glibc, libstdc++, libgcc_s, the driver, cuBLAS/cuBLASLt"
if env -u LD_LIBRARY_PATH ldd "$kit/bin/libferry-backend-cuda.so" | grep -q libnccl; then
  say "error: the CUDA module links NCCL"; exit 1
fi

devices=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64 "$kit/bin/ferry" devices 2>&1) || {
  say "error: ferry devices failed with the real CUDA module:"; echo "$devices"; exit 1; }
echo "$devices" | sed 's/^/  /'
grep -q '^cuda: none (' <<<"$devices" ||
  { say "error: ferry devices did not report the missing GPU cleanly"; exit 1; }
say "the real CUDA module loads without a GPU and without NCCL"

# The kit's ferry has no compiler: a config missing from the cache is named
# with the fix, not compiled.
miss=$(FERRY_CACHE_DIR=$tmp/empty-cache "$kit/bin/ferry" train "$kit/configs/bert-tiny.yaml" \
  --steps 1 2>&1) && { say "error: the kit's ferry ran a config that is not in its cache"; exit 1; }
grep -q "built without the compiler .*, and the executable is not in the executable cache" <<<"$miss" ||
  { say "error: a cache miss in the kit's ferry did not say what to do:"; echo "$miss"; exit 1; }
say "a config missing from the cache is refused with the fix"

cp "$kitbuild/bin/libferry-backend-cuda-sim.so" "$kit/bin/libferry-backend-cuda.so"
cp "$kitbuild/bin/ferry-gpu-tests-sim" "$kit/bin/ferry-gpu-tests"

# Every GPU test's ferry commands, compile-only, with the kit's ferry (no
# compiler) and the paths run.sh gives: each must find its executable in the
# kit's cache. The replicated and tensor-parallel tests start their ranks
# with mpirun, and the kit's ferry has no MPI (the GPU machines have none):
# they run in the cuda-sim suite only.
replicated='CudaTraining.DataParallel*:CudaTraining.Replicas*:CudaTraining.ShardedPhased*'
replicated+=':CudaTraining.TensorParallel*:CudaTraining.SequenceParallel*'
ln -sfn "$kit" /tmp/ferry-gpu-kit
rm -rf /tmp/ferry-gpu-kit-runs && mkdir -p /tmp/ferry-gpu-kit-runs
sweep=$(FERRY_TEST_COMPILE_ONLY=1 FERRY_CACHE_DIR=$kit/cache FERRY_SOURCE_DIR=/tmp/ferry-gpu-kit \
  FERRY_TEST_TMPDIR=/tmp/ferry-gpu-kit-runs FERRY_BINARY_DIR=$kit/bin \
  LD_LIBRARY_PATH=/usr/local/cuda/lib64 "$kit/bin/ferry-gpu-tests" \
  --gtest_filter="CudaTraining.*:-$replicated" 2>&1 || true)
hits=$(cat /tmp/ferry-gpu-kit-runs/*.out 2>/dev/null | grep -c 'was in the executable cache' || true)
if grep -q 'not in the executable cache' <<<"$sweep" || ((hits == 0)); then
  say "error: a GPU test's executable is missing from the kit's cache ($hits hits):"
  grep -B2 -A2 'not in the executable cache' <<<"$sweep" | head -40
  exit 1
fi
say "every GPU test's ferry command ($hits) finds its executable in the kit's cache"

# The check itself, at reduced sizes. Its tests step runs the quick GPU
# tests and a representative set of the training tests end to end through
# the kit's ferry and the simulated module (every kernel test also runs
# under the race checker in ctest's cuda-sim.race suite, every training test
# under ASan in cuda-sim; both would take CI half an hour more here).
quick='CudaDevice.*:CudaBackend.*:NcclGroup.*:NcclLibrary.*:CudaKernels.Gemm*:CudaKernels.LtGemm*'
quick+=':CudaKernels.ElementWise:CudaKernels.LayerNormForwardAndBackward:CudaDeterminism.SortRowsByKeyIsStable'
quick+=':CudaAttention.LeadingKeysMaskedWithMinusInfinity:CudaBf16Storage.GemmInstrReadsAndWritesBf16Operands'
quick+=':CudaTraining.Fp32MatchesTheCpuBackend:CudaTraining.PhasedEqualsResident'
quick+=':CudaTraining.ResumeIsBitExact:CudaTraining.ProfileReportsKernelsStreamsAndLaunches'
out=$tmp/out
start=$(date +%s)
rc=0
GTEST_FILTER=${FERRY_KIT_CHECK_TESTS:-$quick} \
  "$kit/run.sh" "$out" --sizes small --budget "${FERRY_KIT_CHECK_BUDGET:-1500}" || rc=$?
say "run.sh --sizes small took $(( $(date +%s) - start )) s (exit $rc)"
cat "$out/summary.md"
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
files = os.listdir(out)
r = json.load(open(os.path.join(out, "results.json")))["steps"]
want = {"probe": "ok", "tests": "ok", "speed": "ok", "anchor": "skipped",
        "correctness": "skipped", "sanitizer": "skipped"}
bad = [f"{s}: {r.get(s, {}).get('status')} (want {w}; {r.get(s, {}).get('reason', '')})"
       for s, w in want.items() if r.get(s, {}).get("status") != w]
t = r.get("tests", {})
if not t.get("passed") or t.get("failed"):
    bad.append(f"tests: {t.get('passed')} passed, failed {t.get('failed')}")
if len(files) > 8:
    bad.append(f"{len(files)} files in OUTDIR (at most 8): {files}")
if bad:
    print("gpu-kit check: error:\n  " + "\n  ".join(bad))
    sys.exit(1)
print(f"gpu-kit check: ok ({t['passed']} GPU tests passed under the simulator, "
      f"{len(t['skipped'])} skipped; {len(files)} files in OUTDIR)")
PY
