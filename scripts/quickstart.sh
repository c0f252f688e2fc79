#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main
# job. For now the main job compiles configs/bert-tiny.yaml and prints a
# summary of its IR; training on the CPU backend arrives with the next issue.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh
echo
build/bin/ferry train configs/bert-tiny.yaml --log-every 5
