"""Sets one field of a trainer.json and writes a valid checksum for it, as
ferry computes it (xxHash64 of the compact, key-sorted JSON without the
checksum): tests the checks that a checksum alone does not make.

usage: rechecksum.py TRAINER_JSON FIELD INTEGER
"""
import json
import sys

# xxHash64, seed 0 (the spec's reference algorithm; no python3-xxhash in
# Debian's default install).
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F,
                      0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                      0x27D4EB2F165667C5)
M = (1 << 64) - 1


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def rnd(acc, lane):
    return (rotl((acc + lane * P2) & M, 31) * P1) & M


def merge(acc, v):
    return ((acc ^ rnd(0, v)) * P1 + P4) & M


def xxh64(data):
    n, i = len(data), 0
    if n >= 32:
        v = [(P1 + P2) & M, P2, 0, (-P1) & M]
        while i + 32 <= n:
            for k in range(4):
                v[k] = rnd(v[k], int.from_bytes(data[i:i + 8], "little"))
                i += 8
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for k in range(4):
            h = merge(h, v[k])
    else:
        h = P5
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, int.from_bytes(data[i:i + 8], "little")), 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (int.from_bytes(data[i:i + 4], "little") * P1 & M), 23) * P2 + P3) & M
        i += 4
    while i < n:
        h = (rotl(h ^ (data[i] * P5 & M), 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    return h ^ (h >> 32)


path, field, value = sys.argv[1], sys.argv[2], int(sys.argv[3])
trainer = json.load(open(path))
trainer.pop("checksum")
trainer[field] = value
compact = json.dumps(trainer, sort_keys=True, separators=(",", ":"),
                     ensure_ascii=False)
trainer["checksum"] = "xxh64:%016x" % xxh64(compact.encode())
json.dump(trainer, open(path, "w"), indent=2)
