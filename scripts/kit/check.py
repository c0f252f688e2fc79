#!/usr/bin/env python3
"""The GPU kit's check (run.sh is its entry point; docs/gpu-kit.md).

Runs, in order of priority, each step under its own timeout so that a step
that fails or hangs costs only its own share of the budget:

  probe        the GPU, driver, clocks and memory (nvidia-smi), the cuBLAS,
               cuBLASLt and NCCL found, ldd of every kit binary with nothing
               missing, `ferry devices`, the commit the kit was built from
  tests        the GPU tests (bin/ferry-gpu-tests, JSON output; no ctest)
  speed        ferry's cases in bench/cases.json (bert-large at seq 128 and
               512: resident with graph replay, direct, phased), median and
               p90 samples/s, MFU against the datasheet and a bf16 matmul
               measured here, phased/resident, replay/direct, device peak
               measured/planned, host<->device bandwidth against the phased
               model's 50 GB/s, `ferry plan --model`; then --profile's time
               per kernel from a short direct run
  anchor       Hugging Face BertForPreTraining eager (bf16 autocast) at the
               same shapes (skipped without transformers)
  correctness  Hugging Face BertForPreTraining (fp32, eval) on ferry's own
               weights and samples against `ferry eval` on the GPU and the
               CPU within 1e-4, and Hugging Face's WordPiece against `ferry
               tokenize` (hf_check.py; skipped without transformers)
  sanitizer    compute-sanitizer memcheck and racecheck on the kernel tests
               (probed first; skipped where it is missing or refused)

Writes at most 8 files into OUTDIR: summary.md, results.json and logs.
Python's standard library only (the GPU machine's python3 runs it); torch
and transformers are used where they import.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

KIT = os.path.dirname(os.path.abspath(__file__))
STEPS = ["probe", "tests", "speed", "anchor", "correctness", "sanitizer"]
# Shares of the whole budget (6 minutes by default), in priority order.
SHARES = {"probe": 0.05, "tests": 0.33, "speed": 0.32, "anchor": 0.12,
          "correctness": 0.11, "sanitizer": 0.07}
# Dense bf16 datasheet peak of the H100 SXM and the H200 (the same SM).
DATASHEET_BF16 = 989e12
PHASED_LINK_MODEL = 50e9  # bytes/s each way, what `ferry plan` assumes


def cuda_library_dirs():
    """The CUDA toolkit's lib64, then pip's NVIDIA wheels' lib directories
    (cuBLAS, NCCL) of this python."""
    libs = ["/usr/local/cuda/lib64"]
    try:
        import site
        for base in site.getsitepackages() + [site.getusersitepackages()]:
            nvidia = os.path.join(base, "nvidia")
            if os.path.isdir(nvidia):
                for name in sorted(os.listdir(nvidia)):
                    lib = os.path.join(nvidia, name, "lib")
                    if os.path.isdir(lib):
                        libs.append(lib)
    except Exception:  # a python without site-packages
        pass
    return libs


def environment(out):
    """The kit's run environment: its libraries first, then the machine's
    CUDA toolkit and pip's NVIDIA wheels; paths the tests and the cache
    keys see identically on every machine (/tmp/ferry-gpu-kit)."""
    env = dict(os.environ)
    libs = [os.path.join(KIT, "lib")] + cuda_library_dirs()
    if env.get("LD_LIBRARY_PATH"):
        libs.append(env["LD_LIBRARY_PATH"])
    env["LD_LIBRARY_PATH"] = ":".join(libs)
    link = "/tmp/ferry-gpu-kit"
    if os.path.islink(link) or not os.path.exists(link):
        if os.path.islink(link):
            os.unlink(link)
        os.symlink(KIT, link)
    env["FERRY_SOURCE_DIR"] = link
    env["FERRY_BINARY_DIR"] = os.path.join(KIT, "bin")
    env["FERRY_TEST_TMPDIR"] = "/tmp/ferry-gpu-kit-runs"
    env["FERRY_CACHE_DIR"] = os.path.join(KIT, "cache")
    env.pop("FERRY_TEST_COMPILE_ONLY", None)
    os.makedirs(env["FERRY_TEST_TMPDIR"], exist_ok=True)
    return env


def run(cmd, env, timeout, log=None, cwd=None):
    """Runs `cmd` in its own process group; returns (rc, output, seconds).
    rc 124 on timeout (the group is killed)."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, cwd=cwd or KIT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True,
                         shell=isinstance(cmd, str))
    try:
        out, _ = p.communicate(timeout=max(1, timeout))
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = 124
    text = out.decode(errors="replace")
    if log is not None:
        log.write(f"$ {cmd if isinstance(cmd, str) else ' '.join(cmd)}\n")
        log.write(text)
        log.write(f"[exit {rc}, {time.monotonic() - start:.1f} s]\n\n")
        log.flush()
    return rc, text, time.monotonic() - start


def elf_files():
    found = []
    for d in ("bin", "lib"):
        base = os.path.join(KIT, d)
        for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    found.append(path)
    return found


def step_probe(env, budget, out):
    r = {}
    with open(os.path.join(out, "probe.log"), "w") as log:
        info = os.path.join(KIT, "KIT_INFO")
        r["kit"] = open(info).read().strip() if os.path.exists(info) else "?"
        if shutil.which("nvidia-smi"):
            rc, text, _ = run(["nvidia-smi", "--query-gpu=name,driver_version,"
                               "memory.total,clocks.max.sm,clocks.max.mem,"
                               "clocks.sm,power.limit", "--format=csv,noheader"],
                              env, 20, log)
            r["gpu"] = text.strip() if rc == 0 else f"nvidia-smi failed ({rc})"
            run(["nvidia-smi"], env, 20, log)
        else:
            r["gpu"] = "no nvidia-smi"
        # The libraries the loader finds, and their versions (ctypes).
        r["libraries"] = libraries(env, log)
        missing = []
        for path in elf_files():
            rc, text, _ = run(["ldd", path], env, 20, log)
            for line in text.splitlines():
                if "not found" in line:
                    name = line.split()[0]
                    missing.append(f"{os.path.basename(path)}: {name}")
        r["ldd_missing"] = missing
        rc, text, _ = run([os.path.join(KIT, "bin", "ferry"), "devices"], env,
                          30, log)
        r["ferry_devices"] = text.strip()
        r["ferry_devices_rc"] = rc
    ok = not missing and r["ferry_devices_rc"] == 0
    r["status"] = "ok" if ok else "failed"
    if missing:
        r["reason"] = "libraries not found: " + ", ".join(missing)
    elif r["ferry_devices_rc"] != 0:
        r["reason"] = "ferry devices failed"
    return r


def libraries(env, log):
    """cuBLAS, cuBLASLt and NCCL as this machine's loader finds them."""
    import ctypes
    found = {}
    # ctypes follows this process's LD_LIBRARY_PATH only at start: look
    # through the same directories by hand.
    dirs = env["LD_LIBRARY_PATH"].split(":")

    def locate(soname):
        for d in dirs:
            p = os.path.join(d, soname)
            if os.path.exists(p):
                return os.path.realpath(p)
        return None

    for key, soname in (("cublas", "libcublas.so.13"),
                        ("cublasLt", "libcublasLt.so.13"),
                        ("nccl", "libnccl.so.2")):
        path = locate(soname)
        if not path:
            found[key] = "not found"
            continue
        try:
            lib = ctypes.CDLL(path)
            if key == "nccl":
                v = ctypes.c_int()
                lib.ncclGetVersion(ctypes.byref(v))
                c = v.value
                found[key] = f"{c // 10000}.{c // 100 % 100}.{c % 100} ({path})"
            elif key == "cublasLt":
                lib.cublasLtGetVersion.restype = ctypes.c_size_t
                c = lib.cublasLtGetVersion()
                found[key] = f"{c // 10000}.{c // 100 % 100}.{c % 100} ({path})"
            else:
                parts = []
                for prop in (0, 1, 2):  # MAJOR, MINOR, PATCH
                    v = ctypes.c_int()
                    lib.cublasGetProperty(prop, ctypes.byref(v))
                    parts.append(str(v.value))
                found[key] = ".".join(parts) + f" ({path})"
        except (OSError, AttributeError) as e:
            found[key] = f"{path}: {e}"
    log.write(json.dumps(found, indent=2) + "\n")
    return found


def step_tests(env, budget, out):
    # gtest's own JSON report stays outside OUTDIR (8 files at most there):
    # results.json keeps what it says.
    report = os.path.join(env["FERRY_TEST_TMPDIR"], "tests.json")
    if os.path.exists(report):
        os.remove(report)
    with open(os.path.join(out, "tests.log"), "w") as log:
        cmd = [os.path.join(KIT, "bin", "ferry-gpu-tests"),
               f"--gtest_output=json:{report}"]
        rc, text, seconds = run(cmd, env, budget, log)
    r = {"rc": rc}
    if os.path.exists(report):
        data = json.load(open(report))
        failed, skipped, passed = [], [], 0
        for suite in data.get("testsuites", []):
            for t in suite.get("testsuite", []):
                name = f"{suite['name']}.{t['name']}"
                if t.get("failures"):
                    failed.append(name)
                elif t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                    skipped.append(name)
                else:
                    passed += 1
        r.update(passed=passed, failed=failed, skipped=skipped)
        # The cuBLASLt paths the epilogue test reports.
        r["gemm_paths"] = re.findall(r"\[ PATH     \] (.*)", text)
    if rc == 124:
        r["status"], r["reason"] = "timeout", f"still running after {budget:.0f} s"
    elif rc == 0 and r.get("passed"):
        r["status"] = "ok"
    else:
        r["status"] = "failed"
        r["reason"] = (f"{len(r.get('failed', []))} failed" if "failed" in r
                       else f"exit {rc}, no JSON report")
    return r


def torch_cuda():
    try:
        import torch
        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def measured_rates(log):
    """A bf16 8192^3 matmul and pinned host<->device copies, with torch."""
    torch = torch_cuda()
    if not torch:
        return {"reason": "torch with CUDA is not importable"}
    r = {}
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t = time.perf_counter()
    reps = 20
    for _ in range(reps):
        a @ b
    torch.cuda.synchronize()
    r["bf16_matmul_flops"] = 2 * n ** 3 * reps / (time.perf_counter() - t)
    size = 256 << 20
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(size, dtype=torch.uint8, device="cuda")
    for name, copy in (("h2d", lambda: dev.copy_(host, non_blocking=True)),
                       ("d2h", lambda: host.copy_(dev, non_blocking=True))):
        copy()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(5):
            copy()
        torch.cuda.synchronize()
        r[f"pinned_{name}_bytes_per_s"] = 5 * size / (time.perf_counter() - t)
    log.write(json.dumps(r) + "\n")
    return r


def step_speed(env, budget, out, sizes):
    cases_file = os.path.join(KIT, "bench", f"cases-{sizes}.json")
    if not os.path.exists(cases_file):
        return {"status": "failed", "reason": f"{cases_file} is missing"}
    spec = json.load(open(cases_file))
    deadline = time.monotonic() + budget
    r = {"cases": [], "sizes": sizes}
    with open(os.path.join(out, "speed.log"), "w") as log:
        rates = measured_rates(log)
        r["measured"] = rates
        ferry = os.path.join(KIT, "bin", "ferry")
        for c in spec["cases"]:
            left = deadline - time.monotonic()
            if left < 5:
                r["cases"].append({"case": c["case"], "status": "timeout"})
                continue
            metrics = os.path.join(env["FERRY_TEST_TMPDIR"], c["case"] + ".jsonl")
            if os.path.exists(metrics):
                os.remove(metrics)
            cmd = [ferry, "train", os.path.join(KIT, "bench", c["fxe"]),
                   "--steps", str(spec["warmup"] + spec["steps"]),
                   "--log-every", "0", "--metrics", metrics] + c.get("args", [])
            rc, text, seconds = run(cmd, env, left, log)
            row = {"case": c["case"], "rc": rc, "seconds": round(seconds, 1)}
            if rc == 0 and os.path.exists(metrics):
                rows = [json.loads(l) for l in open(metrics)][spec["warmup"]:]
                rate = [x["samples_per_s"] for x in rows]
                row["median_samples_per_s"] = statistics.median(rate)
                row["p90_samples_per_s"] = sorted(rate)[
                    min(len(rate) - 1, int(0.9 * len(rate)))]
                # p90 of the step time is the 10th percentile of the rate.
                row["p10_samples_per_s"] = sorted(rate)[int(0.1 * len(rate))]
                link = [x.get("host_link_bytes", 0) for x in rows]
                row["host_link_bytes_per_step"] = statistics.median(link)
                flops = c["flops_per_sample"] * row["median_samples_per_s"]
                row["mfu_datasheet"] = flops / DATASHEET_BF16
                if "bf16_matmul_flops" in rates:
                    row["mfu_measured_matmul"] = flops / rates["bf16_matmul_flops"]
                m = re.search(r"device memory: peak (\S+ \S+) measured, "
                              r"(\S+ \S+) planned", text)
                if m:
                    row["device_peak_measured"], row["device_peak_planned"] = m.groups()
                row["status"] = "ok"
            else:
                row["status"] = "timeout" if rc == 124 else "failed"
            plan = os.path.join(KIT, "bench", c.get("plan", ""))
            if c.get("plan") and os.path.exists(plan):
                m = re.findall(r"(H100|H200)[^\n]*?([0-9][0-9,.]*) samples/s",
                               open(plan).read())
                row["plan_model_samples_per_s"] = {k: v for k, v in m}
            r["cases"].append(row)
        by = {x["case"]: x for x in r["cases"]}
        ratios = {}
        for c in spec["cases"]:
            base = c.get("compare_to")
            a, b = by.get(c["case"], {}), by.get(base or "", {})
            if base and "median_samples_per_s" in a and "median_samples_per_s" in b:
                ratios[f"{c['case']} / {base}"] = (
                    a["median_samples_per_s"] / b["median_samples_per_s"])
        r["ratios"] = ratios
        if "pinned_h2d_bytes_per_s" in rates:
            r["host_link_vs_model"] = {
                k: rates[f"pinned_{k}_bytes_per_s"] / PHASED_LINK_MODEL
                for k in ("h2d", "d2h")}
        # --profile's time per kernel: a short direct run of its own.
        prof = spec.get("profile")
        left = deadline - time.monotonic()
        if prof and left > 5:
            cmd = [ferry, "train", os.path.join(KIT, "bench", prof["fxe"]),
                   "--steps", str(prof.get("steps", 3)), "--log-every", "0",
                   "--profile", "--set", "execution.cuda_graphs=false"]
            rc, text, _ = run(cmd, env, left, log)
            at = text.find("CUDA backend profile")
            r["profile"] = (text[at:][:6000] if at >= 0 else text[-3000:]) \
                if rc == 0 else f"exit {rc}"
    failed = [x["case"] for x in r["cases"] if x["status"] != "ok"]
    r["status"] = "ok" if not failed else "failed"
    if failed:
        r["reason"] = "cases not ok: " + ", ".join(failed)
    return r


def step_anchor(env, budget, out, sizes):
    script = os.path.join(KIT, "bench", "pytorch_bert_gpu.py")
    try:
        import transformers  # noqa: F401
    except Exception as e:
        return {"status": "skipped", "reason": f"transformers is not importable ({e})"}
    if not torch_cuda():
        return {"status": "skipped", "reason": "torch has no CUDA device"}
    spec = json.load(open(os.path.join(KIT, "bench", f"cases-{sizes}.json")))
    a = spec.get("anchor")
    if not a:
        return {"status": "skipped", "reason": f"no anchor case for sizes {sizes}"}
    with open(os.path.join(out, "anchor.log"), "w") as log:
        rc, text, _ = run([sys.executable, script] + a["args"], env, budget, log)
    if rc != 0:
        return {"status": "timeout" if rc == 124 else "failed", "reason": f"exit {rc}"}
    line = json.loads(text.strip().splitlines()[-1])
    line["status"] = "ok"
    line["compares_with"] = a["compares_with"]
    line["note"] = a["note"]
    return line


def step_correctness(env, budget, out, sizes):
    """hf_check.py: Hugging Face BertForPreTraining (fp32, eval) on ferry's
    own weights and samples against `ferry eval` on the GPU and the CPU,
    within 1e-4; and the tokenizers' WordPiece against `ferry tokenize`."""
    bench = os.path.join(KIT, "bench")
    cmd = [sys.executable, os.path.join(KIT, "hf_check.py"),
           "--ferry", os.path.join(KIT, "bin", "ferry"),
           "--cpu-fxe", os.path.join(bench, "hf-cpu.fxe"),
           "--cuda-fxe", os.path.join(bench, "hf-cuda.fxe"),
           "--timeout", str(max(10, int(budget / 3)))]
    with open(os.path.join(out, "correctness.log"), "w") as log:
        rc, text, _ = run(cmd, env, budget, log)
    if rc == 124:
        return {"status": "timeout", "reason": f"still running after {budget:.0f} s"}
    try:
        r = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"status": "failed", "reason": f"hf_check.py exit {rc}, no JSON line"}
    r.setdefault("status", "failed" if rc else "ok")
    return r


def step_sanitizer(env, budget, out, sizes):
    tool = shutil.which("compute-sanitizer") or (
        "/usr/local/cuda/bin/compute-sanitizer"
        if os.path.exists("/usr/local/cuda/bin/compute-sanitizer") else None)
    if not tool:
        return {"status": "skipped", "reason": "compute-sanitizer is not installed"}
    tests = os.path.join(KIT, "bin", "ferry-gpu-tests")
    r = {"tools": {}}
    deadline = time.monotonic() + budget
    with open(os.path.join(out, "sanitizer.log"), "w") as log:
        rc, text, _ = run([tool, "--version"], env, 20, log)
        if rc != 0:
            return {"status": "skipped", "reason": f"compute-sanitizer --version: exit {rc}"}
        for kind in ("memcheck", "racecheck"):
            left = deadline - time.monotonic()
            if left < 5:
                r["tools"][kind] = "no time left"
                continue
            rc, text, _ = run([tool, "--tool", kind, "--error-exitcode", "3",
                               tests, "--gtest_filter=CudaKernels.*:CudaAttention.*"],
                              env, left, log)
            if "not supported" in text or "permission" in text.lower():
                r["tools"][kind] = "refused by this machine"
            else:
                r["tools"][kind] = {0: "clean", 3: "errors found", 124: "timeout"}.get(
                    rc, f"exit {rc}")
    bad = [k for k, v in r["tools"].items() if v in ("errors found",) or str(v).startswith("exit")]
    r["status"] = "failed" if bad else "ok"
    return r


def summary(results, out):
    lines = ["# ferry GPU kit check", ""]
    probe = results["steps"].get("probe", {})
    lines += [f"- kit: {probe.get('kit', '?')}", f"- date: {results['date']}",
              f"- GPU: {probe.get('gpu', '?')}",
              f"- command: {results['command']}", ""]
    lines += ["| step | status | seconds | note |", "|---|---|---|---|"]
    for s in STEPS:
        r = results["steps"].get(s)
        if not r:
            continue
        lines.append(f"| {s} | {r['status']} | {r.get('seconds', 0):.0f} | "
                     f"{r.get('reason', '')} |")
    p = results["steps"].get("probe", {})
    if p:
        lines += ["", "## probe", ""]
        for k, v in p.get("libraries", {}).items():
            lines.append(f"- {k}: {v}")
        lines.append("- ferry devices: " + p.get("ferry_devices", "").replace("\n", "; "))
    t = results["steps"].get("tests", {})
    if "passed" in t:
        lines += ["", "## tests", "",
                  f"{t['passed']} passed, {len(t['failed'])} failed, "
                  f"{len(t['skipped'])} skipped"]
        lines += [f"- failed: {n}" for n in t["failed"]]
        lines += [f"- GEMM path: {g}" for g in t.get("gemm_paths", [])]
    sp = results["steps"].get("speed", {})
    if sp.get("cases"):
        lines += ["", "## speed", "",
                  "| case | median samples/s | p10 | p90 | MFU (datasheet) | "
                  "MFU (measured matmul) | device peak measured / planned | "
                  "`ferry plan --model` samples/s |",
                  "|---|---|---|---|---|---|---|---|"]
        for c in sp["cases"]:
            model = ", ".join(f"{k} {v}" for k, v in
                              c.get("plan_model_samples_per_s", {}).items())
            if c.get("status") != "ok":
                lines.append(f"| {c['case']} | {c.get('status')} | | | | | | {model} |")
                continue
            lines.append(
                f"| {c['case']} | {c['median_samples_per_s']:.1f} | "
                f"{c['p10_samples_per_s']:.1f} | {c['p90_samples_per_s']:.1f} | "
                f"{c['mfu_datasheet']:.3f} | "
                f"{c.get('mfu_measured_matmul', float('nan')):.3f} | "
                f"{c.get('device_peak_measured', '?')} / "
                f"{c.get('device_peak_planned', '?')} | {model} |")
        for k, v in sp.get("ratios", {}).items():
            lines.append(f"- {k}: {v:.3f}")
        for k, v in sp.get("measured", {}).items():
            lines.append(f"- measured {k}: {v:.4g}" if isinstance(v, float)
                         else f"- measured {k}: {v}")
        for k, v in sp.get("host_link_vs_model", {}).items():
            lines.append(f"- pinned {k} / the phased model's 50 GB/s: {v:.2f}")
        if sp.get("profile"):
            lines += ["", "`--profile` of a short direct run (per kernel class):",
                      "", "```"] + sp["profile"].splitlines()[:40] + ["```"]
    a = results["steps"].get("anchor", {})
    if a.get("status") == "ok":
        lines += ["", "## anchor", "",
                  f"Hugging Face {a.get('mode')}: {a['samples_per_s']:.1f} "
                  f"samples/s ({a['note']}; compare with {a['compares_with']})"]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description="ferry's GPU check (docs/gpu-kit.md)")
    ap.add_argument("out", help="output directory (at most 8 files)")
    ap.add_argument("--only", nargs="+", choices=STEPS)
    ap.add_argument("--sizes", choices=["full", "small"], default="full")
    ap.add_argument("--budget", type=float, default=360.0,
                    help="seconds for all the steps (default 360)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    env = environment(a.out)
    results_path = os.path.join(a.out, "results.json")
    results = {"steps": {}}
    if a.only and os.path.exists(results_path):
        results = json.load(open(results_path))
    results["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    results["command"] = " ".join(["run.sh"] + sys.argv[1:])
    chosen = a.only or STEPS
    total = sum(SHARES[s] for s in chosen)
    for s in STEPS:
        if s not in chosen:
            continue
        budget = a.budget * SHARES[s] / total
        start = time.monotonic()
        try:
            if s == "probe":
                r = step_probe(env, budget, a.out)
            elif s == "tests":
                r = step_tests(env, budget, a.out)
            elif s == "speed":
                r = step_speed(env, budget, a.out, a.sizes)
            else:
                r = globals()[f"step_{s}"](env, budget, a.out, a.sizes)
        except Exception as e:  # a step's own error is its result
            r = {"status": "failed", "reason": f"{type(e).__name__}: {e}"}
        r["seconds"] = time.monotonic() - start
        r["budget_seconds"] = budget
        results["steps"][s] = r
        print(f"{s}: {r['status']} ({r['seconds']:.0f} s)"
              + (f": {r['reason']}" if r.get("reason") else ""), flush=True)
        with open(results_path, "w") as f:
            json.dump(results, f, indent=2, default=str)
    summary(results, a.out)
    print(f"wrote {a.out}/summary.md and {a.out}/results.json")
    bad = [s for s in chosen if results["steps"][s]["status"] in ("failed", "timeout")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
