#!/usr/bin/env python3
"""Hand counts for the evaluation test (standard library only).

  eval_handcount.py bias IN.safetensors OUT.safetensors TOKEN
      copies a ferry checkpoint with cls.predictions.bias[TOKEN] = 1000 and
      cls.seq_relationship.bias = [100, -100]: the model then predicts TOKEN
      at every masked slot and class 0 for every NSP label.
  eval_handcount.py count DATA.tfrecord SAMPLES
      prints the most frequent counted masked-LM label T of the first SAMPLES
      records and the accuracies a model predicting T and NSP class 0 must
      get, counted by hand from the records.
  eval_handcount.py check EVAL.json TOKEN DATA.tfrecord SAMPLES
      compares `ferry eval --json` with the hand count for a model that
      predicts TOKEN (exact counts).
"""
import json
import struct
import sys
from collections import Counter

from tfrecord_reader import records


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    return header, raw[8 + n:]


def write_safetensors(path, header, data):
    header = dict(header)
    header["__metadata__"] = {"format": "pt"}  # no ferry checksum: edited
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def hand_count(path, samples, token=None):
    rows = records(path, samples)
    labels = [i for r in rows for i, w in zip(r["masked_lm_ids"], r["masked_lm_weights"]) if w == 1.0]
    if token is None:
        token = Counter(labels).most_common(1)[0][0]
    hits = labels.count(token)
    nsp_zero = sum(1 for r in rows if r["next_sentence_labels"][0] == 0)
    return {"samples": len(rows), "masked_tokens": len(labels), "token": token,
            "mlm_accuracy": hits / len(labels), "nsp_accuracy": nsp_zero / len(rows)}


def main():
    mode = sys.argv[1]
    if mode == "bias":
        header, data = read_safetensors(sys.argv[2])
        data = bytearray(data)
        token = int(sys.argv[4])
        begin = header["cls.predictions.bias"]["data_offsets"][0]
        struct.pack_into("<f", data, begin + 4 * token, 1000.0)
        begin = header["cls.seq_relationship.bias"]["data_offsets"][0]
        struct.pack_into("<2f", data, begin, 100.0, -100.0)
        header.pop("__metadata__", None)
        write_safetensors(sys.argv[3], header, bytes(data))
        return 0
    if mode == "count":
        c = hand_count(sys.argv[2], int(sys.argv[3]))
        print(c["token"])
        return 0
    if mode == "check":
        with open(sys.argv[2]) as f:
            got = json.load(f)
        want = hand_count(sys.argv[4], int(sys.argv[5]), int(sys.argv[3]))
        print(f"hand count: {want['samples']} samples, {want['masked_tokens']} masked tokens, "
              f"mlm_accuracy {want['mlm_accuracy']:.6f}, nsp_accuracy {want['nsp_accuracy']:.6f}")
        ok = (got["samples"] == want["samples"]
              and got["masked_tokens"] == want["masked_tokens"]
              and abs(got["eval_mlm_accuracy"] - want["mlm_accuracy"]) <= 1e-7
              and abs(got["eval_nsp_accuracy"] - want["nsp_accuracy"]) <= 1e-7)
        print("check: OK" if ok else f"check: FAIL: ferry eval gave {got}")
        return 0 if ok else 1
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main())
