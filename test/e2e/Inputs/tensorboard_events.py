#!/usr/bin/env python3
"""Reads `ferry train --tensorboard DIR` event files as TensorBoard would, with
an independent reader: its own TFRecord framing and CRC32C, and Debian's
python3-protobuf on the test's own copy of TensorFlow's Event and Summary
messages (tensorflow_summary.proto, compiled here with protoc). Then checks
the scalars against the same run's --metrics JSON lines.

  tensorboard_events.py check DIR METRICS.jsonl FILES [eval,loss_scale]
      every record's CRCs; each file starts with file_version brain.Event:2;
      one summary Event per JSON line, at its step; every tag's value equals
      the JSON value (float32: relative 1e-6); eval/ tags exactly where the
      JSON has eval_ fields; FILES event files in DIR.
Prints what it read; exits 1 with the first difference otherwise.
"""
import glob
import importlib
import json
import os
import struct
import subprocess
import sys
import tempfile

TABLE = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    TABLE.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def load_messages():
    out = tempfile.mkdtemp()
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(["protoc", f"--python_out={out}", f"-I{here}",
                    os.path.join(here, "tensorflow_summary.proto")], check=True)
    sys.path.insert(0, out)
    return importlib.import_module("tensorflow_summary_pb2")


def records(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        if at + 12 > len(data):
            raise SystemExit(f"FAIL: {path}: truncated record header at byte {at}")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if length_crc != masked(crc32c(header)):
            raise SystemExit(f"FAIL: {path}: length CRC wrong at byte {at}")
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if len(body) != length or body_crc != masked(crc32c(body)):
            raise SystemExit(f"FAIL: {path}: data CRC wrong at byte {at}")
        yield body
        at += 16 + length


# TensorBoard tag -> the --metrics JSON key holding the same value.
TAGS = {
    "train/loss": "loss", "train/mlm_loss": "mlm_loss", "train/nsp_loss": "nsp_loss",
    "train/mlm_accuracy": "mlm_accuracy", "train/learning_rate": "lr",
    "train/grad_norm": "grad_norm", "train/samples_per_second": "samples_per_s",
    "train/rows_per_second": "rows_per_s", "train/padding_fraction": "padding_fraction",
    "memory/device_peak_bytes": "device_peak_bytes",
    "memory/host_link_bytes": "host_link_bytes",
}
OPTIONAL = {
    "loss_scale": {"train/loss_scale": "loss_scale"},
    "eval": {"eval/mlm_accuracy": "eval_mlm_accuracy", "eval/mlm_loss": "eval_mlm_loss",
             "eval/nsp_accuracy": "eval_nsp_accuracy", "eval/nsp_loss": "eval_nsp_loss"},
}


def close(a, b):
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b)) + 1e-30


def check(directory, metrics_path, files, wanted):
    pb = load_messages()
    paths = sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*")))
    if len(paths) != files:
        raise SystemExit(f"FAIL: {len(paths)} event files in {directory}, expected {files}")
    events = []
    for path in paths:
        for n, body in enumerate(records(path)):
            event = pb.Event()
            event.ParseFromString(body)
            if n == 0:
                if event.WhichOneof("what") != "file_version" or event.file_version != "brain.Event:2":
                    raise SystemExit(f"FAIL: {path}: first event is not file_version brain.Event:2")
                continue
            if event.WhichOneof("what") != "summary" or event.wall_time <= 0:
                raise SystemExit(f"FAIL: {path}: event {n} is not a summary with a wall time")
            events.append(event)
    # TensorBoard joins a directory's files by step; so does this check.
    events.sort(key=lambda e: e.step)
    rows = [json.loads(line) for line in open(metrics_path) if line.strip()]
    if [e.step for e in events] != [r["step"] for r in rows]:
        raise SystemExit(f"FAIL: event steps {[e.step for e in events]} != metrics steps "
                         f"{[r['step'] for r in rows]}")
    seen = set()
    for event, row in zip(events, rows):
        values = {}
        for v in event.summary.value:
            if v.WhichOneof("value") != "simple_value" or v.node_name:
                raise SystemExit(f"FAIL: step {event.step}: tag {v.tag} is not a plain scalar")
            values[v.tag] = v.simple_value
        expected = dict(TAGS)
        for name in wanted:
            if name == "eval" and "eval_mlm_accuracy" not in row:
                continue
            expected.update(OPTIONAL[name])
        if set(values) != set(expected):
            raise SystemExit(f"FAIL: step {event.step}: tags {sorted(values)}, expected {sorted(expected)}")
        for tag, key in expected.items():
            want = struct.unpack("<f", struct.pack("<f", float(row[key])))[0]
            if not close(values[tag], want):
                raise SystemExit(f"FAIL: step {event.step}: {tag} = {values[tag]}, metrics {key} = {row[key]}")
        seen.update(values)
    print(f"{len(paths)} files, {len(events)} summary events (steps {events[0].step}..{events[-1].step}), "
          f"{len(seen)} tags, all equal to the metrics file")
    for tag in sorted(seen):
        print(f"tag {tag}")


def main():
    if sys.argv[1] != "check":
        raise SystemExit(__doc__)
    wanted = [w for w in (sys.argv[5].split(",") if len(sys.argv) > 5 else []) if w]
    check(sys.argv[2], sys.argv[3], int(sys.argv[4]), wanted)


if __name__ == "__main__":
    main()
