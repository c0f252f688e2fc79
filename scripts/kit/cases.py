#!/usr/bin/env python3
"""Writes the GPU kit's speed cases (scripts/gpu-kit.sh; read by check.py):
bench/cases-full.json (bert-large at seq 128 and 512, resident with CUDA-graph
replay, direct launches, phased under a quarter of the training state) and
bench/cases-small.json (bert-tiny shapes, for CI's simulated run).

Model FLOPs per sample, as bench/gpu_throughput.sh counts them: 6 x
parameters x tokens, plus 12 x layers x hidden x seq^2 for attention.

  cases.py BENCH_DIR
"""
import json
import os
import sys


def flops(params, layers, hidden, seq):
    return 6 * params * seq + 12 * layers * hidden * seq * seq


def cases(prefix, fxe, seqs, params, layers, hidden):
    out = []
    for s in seqs:
        name = f"{prefix}-{s}" if len(seqs) > 1 or prefix == "large" else prefix
        f = flops(params, layers, hidden, s)
        out += [
            {"case": f"{name}-resident", "fxe": fxe(s, "resident"),
             "flops_per_sample": f, "compare_to": f"{name}-direct",
             "plan": fxe(s, "resident").replace(".fxe", ".plan.txt")},
            {"case": f"{name}-direct", "fxe": fxe(s, "resident"),
             "args": ["--set", "execution.cuda_graphs=false"],
             "flops_per_sample": f},
            {"case": f"{name}-phased", "fxe": fxe(s, "phased"),
             "flops_per_sample": f, "compare_to": f"{name}-resident",
             "plan": fxe(s, "phased").replace(".fxe", ".plan.txt")},
        ]
    return out


def main():
    bench = sys.argv[1]
    # bert-large: 336,232,258 parameters (`ferry inspect`), 24 layers, 1024.
    full = {
        "warmup": 3, "steps": 10,
        "cases": cases("large", lambda s, m: f"large-{s}-{m}.fxe", [128, 512],
                       336232258, 24, 1024),
        "profile": {"fxe": "large-128-resident.fxe", "steps": 3},
        "anchor": {
            "args": ["--model", "large", "--seq", "128", "--batch", "64",
                     "--accumulate", "8", "--optimizer", "lamb",
                     "--steps", "5", "--warmup", "2"],
            "compares_with": "large-128-resident",
            "note": "transformers BertForPreTraining eager, bf16 autocast; "
                    "as ferry's case: seq 128, global batch 512 as 8 "
                    "micro-batches of 64, gradients clipped to norm 1, LAMB "
                    "(bert-large.yaml's optimizer; PyTorch's written with "
                    "foreach ops, ferry's its own kernels)"},
    }
    # The simulated run's shapes (scripts/gpu-kit.sh compiles them): 2
    # layers, hidden 32, vocabulary 200 (padded), seq 32; the parameter
    # count only scales the reported MFU, which means nothing there.
    small = {
        "warmup": 1, "steps": 2,
        "cases": cases("tiny", lambda s, m: f"tiny-{m}.fxe", [32],
                       1, 2, 32),
        "profile": {"fxe": "tiny-resident.fxe", "steps": 2},
    }
    for name, spec in (("full", full), ("small", small)):
        with open(os.path.join(bench, f"cases-{name}.json"), "w") as f:
            json.dump(spec, f, indent=1)


if __name__ == "__main__":
    main()
