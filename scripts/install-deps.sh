#!/usr/bin/env bash
# Installs everything ferry builds and tests with, on Debian 12, as root.
# Idempotent: when every package is present it only checks and returns (~1 s).
# What apt cannot provide it checks for and names: an apt source carrying
# LLVM/MLIR 22, and the CUDA 13 toolkit in /usr/local/cuda (skip that check
# with FERRY_ENABLE_CUDA=OFF to build without the CUDA backend).
set -euo pipefail

packages=(
  # build tools
  cmake make g++ git python3 ccache lld
  # the compiler: LLVM/MLIR 22 (mlir-22-tools is needed even for the headers:
  # MLIR's CMake package refuses to load without its tools); lit and FileCheck
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # configs, CLI, formatting
  libyaml-cpp-dev libfmt-dev libcli11-dev
  # executables, manifests, checksums and cache keys
  libflatbuffers-dev flatbuffers-compiler nlohmann-json3-dev libssl-dev libxxhash-dev
  # data: MLPerf HDF5 and TFRecord (tf.Example via protobuf)
  libhdf5-dev libprotobuf-dev protobuf-compiler
  # text: the BERT tokenizer's Unicode normalisation and character categories
  libutf8proc-dev
  # the CPU backend's GEMMs and collectives
  libopenblas-dev libopenmpi-dev openmpi-bin
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # the readers' fuzz targets (libFuzzer with AddressSanitizer and UBSan)
  clang-22 libclang-rt-22-dev libomp-22-dev
  # the TensorBoard test reads event files with python3-protobuf
  python3-protobuf
  # the golden test against PyTorch (never a build dependency); the virtual
  # environment of the checks against Hugging Face (scripts/hf-env.sh)
  python3-torch python3-numpy python3-venv
  # the GPU kit (scripts/gpu-kit.sh): its binaries' RUNPATH, its archive
  patchelf xz-utils
)

say() { echo "install-deps: $*"; }

# CMake's spellings of "off".
cuda_wanted=yes
case "${FERRY_ENABLE_CUDA:-ON}" in
  [Oo][Ff][Ff]|0|[Ff][Aa][Ll][Ss][Ee]|[Nn][Oo]|[Nn]) cuda_wanted=no ;;
esac

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    say "missing packages: ${missing[*]}"
    say "run this script as root (e.g. sudo bash scripts/install-deps.sh) to install them"
    exit 1
  fi
  say "installing ${#missing[@]} packages: ${missing[*]}"
  apt-get update -qq
  policy=$(apt-cache policy libmlir-22-dev 2>/dev/null || true)
  if ! grep -q "Candidate: [0-9]" <<<"$policy"; then
    say "error: no apt source offers libmlir-22-dev (LLVM/MLIR 22)."
    say "Add the LLVM project's Debian repository for bookworm (llvm-toolchain-bookworm-22) to"
    say "/etc/apt/sources.list.d/ with its signing key, then run this script again."
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  say "installed"
else
  say "all ${#packages[@]} packages present"
fi

if [[ $cuda_wanted == yes ]]; then
  nvcc=$(command -v nvcc || true)
  [[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
  if [[ -z "$nvcc" ]]; then
    say "error: the CUDA 13 toolkit was not found (no nvcc on PATH or in /usr/local/cuda/bin)."
    say "Install NVIDIA's CUDA 13 toolkit to /usr/local/cuda (it is not a Debian package), or set"
    say "FERRY_ENABLE_CUDA=OFF to build ferry without its CUDA backend."
    exit 1
  fi
  say "CUDA: $("$nvcc" --version | grep -o 'release [0-9.]*') ($nvcc)"
fi
