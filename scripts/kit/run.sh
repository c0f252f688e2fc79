#!/usr/bin/env bash
# The GPU kit's one command (docs/gpu-kit.md), run on the GPU machine from
# the unpacked kit:
#
#   ferry-gpu-kit/run.sh OUTDIR [--only STEP ...] [--sizes full|small]
#                               [--budget SECONDS]
#
# STEP: probe tests speed anchor correctness sanitizer (the default: all, in
# that order, 6 minutes in all, each under its own timeout). OUTDIR gets at
# most 8 files: summary.md, results.json and the steps' logs. --only reruns
# chosen steps after a fix; their results replace those steps' in an
# existing results.json. --sizes small is CI's simulated run (bert-tiny
# shapes instead of bert-large).
set -euo pipefail
kit=$(cd "$(dirname "$0")" && pwd)
exec python3 "$kit/check.py" "$@"
