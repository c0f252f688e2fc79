#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main
# job: train configs/bert-tiny.yaml on the CPU backend for 40 updates, printing
# the loss and throughput every 5.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh
echo
build/bin/ferry train configs/bert-tiny.yaml --log-every 5
