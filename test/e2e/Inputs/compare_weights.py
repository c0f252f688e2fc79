#!/usr/bin/env python3
"""Compares two safetensors files tensor by tensor, for the e2e lit tests.

  compare_weights.py A B RTOL [--atol SUBSTRING=ATOL ...]

Every tensor of B must be in A with the same shape, and for each
||a - b|| / ||b|| <= RTOL (RTOL 0: bit-identical), or ||a - b|| <= ATOL for
tensors whose name contains SUBSTRING: for a tensor whose gradient is
analytically zero (BERT's attention key bias: softmax ignores a shift), what
two correct orders of summation leave is rounding noise, which Adam and LAMB
scale up to the learning rate, so only an absolute bound means anything. Prints the tensor count and
the worst relative difference; exits 1 naming the first tensor over RTOL.
Plain Python (struct), F32 only: what ferry writes.
"""
import json
import math
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise SystemExit(f"{path}: {name} is {t['dtype']}, expected F32")
        begin, end = t["data_offsets"]
        count = (end - begin) // 4
        out[name] = (t["shape"], struct.unpack_from(f"<{count}f", raw, base + begin))
    return out


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    rtol = float(sys.argv[3])
    atol = {}
    rest = sys.argv[4:]
    while rest:
        if rest[0] != "--atol" or len(rest) < 2:
            raise SystemExit(f"unexpected arguments {rest}")
        key, value = rest[1].split("=")
        atol[key] = float(value)
        rest = rest[2:]
    worst, worst_name = 0.0, ""
    for name, (shape, vb) in sorted(b.items()):
        if name not in a:
            print(f"FAIL: {name} missing from {sys.argv[1]}")
            return 1
        shape_a, va = a[name]
        if shape_a != shape:
            print(f"FAIL: {name} has shape {shape_a} vs {shape}")
            return 1
        diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(va, vb)))
        norm = math.sqrt(sum(y * y for y in vb))
        rel = diff / norm if norm > 0 else diff
        bound = [v for k, v in atol.items() if k in name]
        if bound:
            if diff > bound[0]:
                print(f"FAIL: {name}: difference {diff:.3e} > absolute {bound[0]}")
                return 1
            continue
        if rel > worst:
            worst, worst_name = rel, name
        if rel > rtol:
            print(f"FAIL: {name}: relative difference {rel:.3e} > {rtol}")
            return 1
    print(f"equal weights: {len(b)} tensors, worst relative difference "
          f"{worst:.2e} ({worst_name or 'none'}) <= {rtol}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
