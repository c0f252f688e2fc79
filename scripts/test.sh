#!/usr/bin/env bash
# The README's second command (and what CI runs): install what is missing,
# build, and run every test with ctest (unit, lit, and gpu tests, which report
# "skipped" with the reason when no GPU is present), the checks against
# Hugging Face's libraries among them (scripts/hf-env.sh installs those from
# PyPI first).
#
# Then the GPU kit (scripts/gpu-kit.sh --check, docs/gpu-kit.md): a
# runtime-only build (-DFERRY_BUILD_COMPILER=OFF, as on a GPU host without
# LLVM) of what a GPU machine runs, packed and checked here under the CUDA
# simulator. It also proves the runtime has no MLIR/LLVM dependency. Skip it
# with FERRY_TEST_GPU_KIT=OFF; without CUDA (FERRY_ENABLE_CUDA=OFF) the
# runtime-only build is made and checked alone (FERRY_TEST_RUNTIME_ONLY=OFF
# skips that).
#
# After them it builds the readers' libFuzzer targets and runs each for 30 s
# (scripts/fuzz.sh; FERRY_TEST_FUZZ=OFF skips it).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

cuda=yes
case "${FERRY_ENABLE_CUDA:-ON}" in
  [Oo][Ff][Ff]|0|[Ff][Aa][Ll][Ss][Ee]|[Nn][Oo]|[Nn]) cuda=no ;;
esac

echo "== full build and tests =="
bash scripts/build.sh
# The checks against Hugging Face (test/hf/) run in a virtual environment of
# pinned PyPI packages over Debian's torch (scripts/hf-env.sh); without PyPI
# it says why and those tests are skipped with the reason (FERRY_HF=OFF skips
# them on purpose).
bash scripts/hf-env.sh
# ctest runs JOBS tests at once, and each lit suite as many as there are
# cores: one OpenMP/OpenBLAS thread per process keeps them from
# oversubscribing the cores (test/lit.cfg.py says the same for lit).
(cd "${BUILD_DIR:-build}" && OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" \
   ctest --output-on-failure -j "${JOBS:-2}")

# The runtime-only ferry in $1: no MLIR or LLVM linked, and `ferry compile`
# says the compiler is not built in.
check_runtime_only() {
  # Captured first: `ldd | grep -q` under pipefail can fail by SIGPIPE exactly
  # when grep finds a match.
  local libs message
  libs=$(ldd "$1/ferry")
  if grep -qiE 'libMLIR|libLLVM' <<<"$libs"; then
    echo "error: the runtime-only ferry links MLIR or LLVM:" >&2
    grep -iE 'libMLIR|libLLVM' <<<"$libs" >&2
    exit 1
  fi
  message=$("$1/ferry" compile configs/bert-tiny.yaml 2>&1 || true)
  if [[ "$message" == *"built without the compiler"* ]]; then
    echo "runtime-only build: ok (no MLIR/LLVM linked; compile says it is not built in)"
  else
    echo "error: the runtime-only ferry did not report that the compiler is not built in" >&2
    exit 1
  fi
}

if [[ $cuda == yes && "${FERRY_TEST_GPU_KIT:-ON}" != "OFF" ]]; then
  echo "== GPU kit (runtime-only build, checked under the simulator) =="
  start=$(date +%s)
  bash scripts/gpu-kit.sh --check
  check_runtime_only "${KIT_BUILD_DIR:-build-kit}/bin"
  echo "GPU kit: built and checked in $(( $(date +%s) - start )) s"
elif [[ "${FERRY_TEST_RUNTIME_ONLY:-ON}" != "OFF" ]]; then
  echo "== runtime-only build (no MLIR) =="
  BUILD_DIR=build-runtime-only FERRY_BUILD_COMPILER=OFF \
    TARGETS="ferry ferry-run" bash scripts/build.sh >/dev/null
  check_runtime_only build-runtime-only/bin
fi

# Every reader under libFuzzer with ASan and UBSan (docs/reliability.md); skip
# with FERRY_TEST_FUZZ=OFF. The run is repeatable (a fixed seed and count,
# about 30 s for the slowest target), so a commit passes or fails here the
# same way every time; new faults are found by the long runs of
# scripts/fuzz.sh, and each one's input joins test/fuzz/corpus/.
if [[ "${FERRY_TEST_FUZZ:-ON}" != "OFF" ]]; then
  TOOLS_DIR="${BUILD_DIR:-build}/bin" FERRY_FUZZ_RUNS="${FERRY_FUZZ_RUNS:-15000}" \
    FERRY_FUZZ_SEED="${FERRY_FUZZ_SEED:-1}" bash scripts/fuzz.sh
fi
