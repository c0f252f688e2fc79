#!/usr/bin/env python3
"""Checks on `ferry train --metrics` JSON lines, for the e2e lit tests.

  metrics.py falls FILE FACTOR [KEY]  last KEY (loss) <= first KEY * FACTOR
  metrics.py equal A B RTOL KEYS      per step, |a - b| <= RTOL * |b| for KEYS
  metrics.py values FILE KEY STEP=V.. KEY at STEP equals V (relative 1e-6)
  metrics.py atmost FILE KEY LIMIT    KEY <= LIMIT at every step
  metrics.py positive FILE KEY        KEY > 0 at every step
Prints what it compared; exits 1 with the offending numbers otherwise.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    mode = sys.argv[1]
    if mode == "falls":
        rows = load(sys.argv[2])
        factor = float(sys.argv[3])
        key = sys.argv[4] if len(sys.argv) > 4 else "loss"
        first, last = rows[0][key], rows[-1][key]
        print(f"first {key} {first:.4f}, last {key} {last:.4f} after {len(rows)} steps")
        if not last <= first * factor:
            print(f"FAIL: last {key} {last} > {factor} x first {key} {first}")
            return 1
        return 0
    if mode == "equal":
        a, b = load(sys.argv[2]), load(sys.argv[3])
        rtol = float(sys.argv[4])
        keys = sys.argv[5].split(",")
        if len(a) != len(b):
            print(f"FAIL: {len(a)} vs {len(b)} steps")
            return 1
        worst = 0.0
        for ra, rb in zip(a, b):
            for k in keys:
                err = abs(ra[k] - rb[k]) / max(abs(rb[k]), 1e-30)
                worst = max(worst, err)
                if err > rtol:
                    print(f"FAIL: step {ra['step']} {k}: {ra[k]!r} vs {rb[k]!r} (relative {err:.2e} > {rtol})")
                    return 1
        print(f"equal: {len(a)} steps, keys {','.join(keys)}, worst relative difference {worst:.2e} <= {rtol}")
        return 0
    if mode == "values":
        rows = {r["step"]: r for r in load(sys.argv[2])}
        key = sys.argv[3]
        for item in sys.argv[4:]:
            step, value = item.split("=")
            got = rows[int(step)][key]
            want = float(value)
            if abs(got - want) > 1e-6 * max(abs(want), 1e-12) and abs(got - want) > 1e-12:
                print(f"FAIL: step {step} {key} = {got!r}, expected {want!r}")
                return 1
            print(f"step {step} {key} = {got:.6g}")
        return 0
    if mode in ("atmost", "positive"):
        rows = load(sys.argv[2])
        key = sys.argv[3]
        limit = float(sys.argv[4]) if mode == "atmost" else 0.0
        for r in rows:
            ok = r[key] <= limit if mode == "atmost" else r[key] > 0
            if not ok:
                print(f"FAIL: step {r['step']} {key} = {r[key]!r}")
                return 1
        top = max(r[key] for r in rows)
        print(f"{key}: {len(rows)} steps, largest {top:.10g}" +
              (f" <= {limit:.10g}" if mode == "atmost" else " > 0"))
        return 0
    print(f"unknown mode {mode}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
