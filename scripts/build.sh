#!/usr/bin/env bash
# Configures and builds ferry into build/ (binaries in build/bin/).
# Environment: BUILD_DIR (default build), BUILD_TYPE (Release),
# FERRY_ENABLE_CUDA / FERRY_ENABLE_MPI / FERRY_BUILD_COMPILER (ON), JOBS (2),
# FERRY_CPU_ARCH (-march of the CPU backend's kernels; default native, the GPU
# kit x86-64-v3), TARGETS (space-separated; default: all).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build}
# ccache: paths under the checkout are hashed relative to it, so another
# clone of the repository (CI's) reuses this one's objects.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
cmake -S . -B "$build_dir" \
  -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DFERRY_BUILD_COMPILER="${FERRY_BUILD_COMPILER:-ON}" \
  -DFERRY_ENABLE_CUDA="${FERRY_ENABLE_CUDA:-ON}" \
  -DFERRY_ENABLE_MPI="${FERRY_ENABLE_MPI:-ON}" \
  ${FERRY_CPU_ARCH:+-DFERRY_CPU_ARCH="$FERRY_CPU_ARCH"} >/dev/null
targets=()
for t in ${TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "${JOBS:-2}" "${targets[@]}"
