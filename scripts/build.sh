#!/usr/bin/env bash
# Configures and builds ferry into build/ (binaries in build/bin/).
# Environment: BUILD_DIR (default build), BUILD_TYPE (Release),
# FERRY_ENABLE_CUDA / FERRY_ENABLE_MPI / FERRY_BUILD_COMPILER (ON), JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" \
  -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DFERRY_BUILD_COMPILER="${FERRY_BUILD_COMPILER:-ON}" \
  -DFERRY_ENABLE_CUDA="${FERRY_ENABLE_CUDA:-ON}" \
  -DFERRY_ENABLE_MPI="${FERRY_ENABLE_MPI:-ON}" >/dev/null
cmake --build "$build_dir" -j "${JOBS:-2}"
