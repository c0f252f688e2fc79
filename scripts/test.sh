#!/usr/bin/env bash
# The README's second command (and what CI runs): install what is missing,
# build, and run every test with ctest (unit, lit, and gpu tests, which report
# "skipped" with the reason when no GPU is present).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "${JOBS:-2}"
