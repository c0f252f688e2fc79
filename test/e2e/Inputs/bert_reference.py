#!/usr/bin/python3
"""Golden reference for one ferry BERT training step, in PyTorch ("llm.c style").

test/e2e/golden-pytorch.test runs ferry and this file on the same initial
weights and the same batch and compares the losses and the weights after one
optimizer update. Run it with /usr/bin/python3 (Debian's python3-torch and
numpy); it needs no other package: the safetensors files, the TFRecord framing
with its CRC32C and the tf.Example protobuf wire format are written and read
by hand below.

  inputs     random initial weights (DIR/init.safetensors, Hugging Face
             BertForPreTraining names, fp32) and one global batch
             (DIR/batch.tfrecord, MLPerf TFRecord of tf.Example records).
  reference  the training step in PyTorch: forward, backward, clip by global
             norm, one LAMB or AdamW update written out by hand as
             ARCHITECTURE.md ("Numerics", "Optimizers") defines it; writes the
             updated weights and the step's losses and gradient norm.
  compare    ferry's --metrics and --save output against the reference;
             exits 1 with a table of offenders.
  selftest   checks this file itself: CRC32C known answer, TFRecord and
             safetensors round trips (and corrupted records refused),
             gradients against float64 finite differences, attention against
             torch's multi_head_attention_forward, AdamW against
             torch.optim.AdamW, the float32 reference against float64, and
             that the test's optimizer settings expose optimizer bugs.

The model (ARCHITECTURE.md, models/bert/BertBuilder.cpp): post-LN encoder,
exact-erf GELU, learned position and token-type embeddings, LayerNorm eps from
the config, additive attention mask -10000 at keys whose input_mask is 0,
scores scaled by 1/sqrt(head_size); MLM head at the masked positions only
(dense, GELU, LayerNorm, decoder = word embedding^T + cls.predictions.bias);
NSP head on a tanh pooler of token 0. Loss = MLM (sum of the counted slots'
cross-entropies / number of counted slots in the batch) + NSP (mean over the
batch). Dropout is off. ferry pads the vocabulary to a multiple of 8 with
rows that take no part in the softmax; that is the unpadded model computed
here.
"""

import argparse
import json
import math
import os
import re
import struct
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

MASK_FILL = -10000.0  # bert::kMaskFill
INIT_STD = 0.02  # weights and embeddings
BIAS_STD = 0.02  # biases (ferry's own init has zeros; random here so they matter)
LN_SCALE_STD = 0.1  # LayerNorm scales are 1 + normal(0, this)
KEY_BIAS_RE = re.compile(r"^bert\.encoder\.layer\.\d+\.attention\.self\.key\.bias$")
DECODER_WEIGHT = "cls.predictions.decoder.weight"
WORD_EMBEDDINGS = "bert.embeddings.word_embeddings.weight"
# The optimizer settings golden-pytorch.test uses; selftest checks that the
# float32 reference is accurate with them and that they expose optimizer bugs.
GOLDEN_SETTINGS = {
    "lamb": {"lr": 1e-2, "weight_decay": 0.1, "epsilon": 1e-6, "beta1": 0.9,
             "beta2": 0.999, "clip_norm": 1.0},
    "adamw": {"lr": 1e-3, "weight_decay": 0.1, "epsilon": 1e-4, "beta1": 0.9,
              "beta2": 0.999, "clip_norm": 1.0},
}


# ---------------------------------------------------------------------------
# Model sizes and the parameter list
# ---------------------------------------------------------------------------

SIZE_OPTIONS = [
    # (option, attribute, type, default)
    ("--layers", "layers", int, 2),
    ("--hidden", "hidden", int, 32),
    ("--heads", "heads", int, 2),
    ("--ffn", "ffn", int, 64),
    ("--vocab", "vocab", int, 997),  # deliberately not a multiple of 8
    ("--max-positions", "max_positions", int, 64),
    ("--type-vocab", "type_vocab", int, 2),
    ("--seq", "seq", int, 32),
    ("--max-predictions", "max_predictions", int, 5),
    ("--batch", "batch", int, 4),
    ("--layer-norm-eps", "layer_norm_eps", float, 1e-12),
]


def add_size_options(parser):
    group = parser.add_argument_group("model sizes (ferry's model.* keys)")
    for option, attr, kind, default in SIZE_OPTIONS:
        group.add_argument(option, dest=attr, type=kind, default=default,
                           help=f"default {default}")


def check_sizes(s):
    problems = []
    if s.hidden % s.heads:
        problems.append(f"hidden {s.hidden} is not divisible by heads {s.heads}")
    if s.seq > s.max_positions:
        problems.append(f"seq {s.seq} > max_positions {s.max_positions}")
    if not 1 <= s.max_predictions <= s.seq - 2:
        problems.append(f"max_predictions {s.max_predictions} must be in [1, seq - 2]")
    if s.type_vocab < 2:
        problems.append("type_vocab must be >= 2 (two segments)")
    if s.vocab < 8:
        problems.append("vocab must be >= 8")
    if problems:
        sys.exit("error: " + "; ".join(problems))


def parameter_specs(s):
    """(Hugging Face name, shape, kind) in BertParameters.cpp's order.

    kind: "weight" (linear weights [out, in] and embeddings: weight decay),
    "bias", "ln_scale", "ln_bias" (no weight decay)."""
    h, f = s.hidden, s.ffn
    specs = [
        (WORD_EMBEDDINGS, (s.vocab, h), "weight"),
        ("bert.embeddings.position_embeddings.weight", (s.max_positions, h), "weight"),
        ("bert.embeddings.token_type_embeddings.weight", (s.type_vocab, h), "weight"),
        ("bert.embeddings.LayerNorm.weight", (h,), "ln_scale"),
        ("bert.embeddings.LayerNorm.bias", (h,), "ln_bias"),
    ]
    for l in range(s.layers):
        p = f"bert.encoder.layer.{l}."
        specs += [
            (p + "attention.self.query.weight", (h, h), "weight"),
            (p + "attention.self.query.bias", (h,), "bias"),
            (p + "attention.self.key.weight", (h, h), "weight"),
            (p + "attention.self.key.bias", (h,), "bias"),
            (p + "attention.self.value.weight", (h, h), "weight"),
            (p + "attention.self.value.bias", (h,), "bias"),
            (p + "attention.output.dense.weight", (h, h), "weight"),
            (p + "attention.output.dense.bias", (h,), "bias"),
            (p + "attention.output.LayerNorm.weight", (h,), "ln_scale"),
            (p + "attention.output.LayerNorm.bias", (h,), "ln_bias"),
            (p + "intermediate.dense.weight", (f, h), "weight"),
            (p + "intermediate.dense.bias", (f,), "bias"),
            (p + "output.dense.weight", (h, f), "weight"),
            (p + "output.dense.bias", (h,), "bias"),
            (p + "output.LayerNorm.weight", (h,), "ln_scale"),
            (p + "output.LayerNorm.bias", (h,), "ln_bias"),
        ]
    specs += [
        ("bert.pooler.dense.weight", (h, h), "weight"),
        ("bert.pooler.dense.bias", (h,), "bias"),
        ("cls.predictions.transform.dense.weight", (h, h), "weight"),
        ("cls.predictions.transform.dense.bias", (h,), "bias"),
        ("cls.predictions.transform.LayerNorm.weight", (h,), "ln_scale"),
        ("cls.predictions.transform.LayerNorm.bias", (h,), "ln_bias"),
        # The decoder weight is the word embedding (tied); only its bias is its own.
        ("cls.predictions.bias", (s.vocab,), "bias"),
        ("cls.seq_relationship.weight", (2, h), "weight"),
        ("cls.seq_relationship.bias", (2,), "bias"),
    ]
    return specs


# ---------------------------------------------------------------------------
# safetensors: 8-byte little-endian header length N, N bytes of JSON header
# {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
# then the data section (offsets relative to its start).
# ---------------------------------------------------------------------------

ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
             "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def read_safetensors(path):
    """Returns ({name: numpy array}, {name: dtype string}, metadata)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack_from("<Q", data, 0)
    if 8 + n > len(data):
        raise ValueError(f"{path}: header length {n} runs past the file ({len(data)} bytes)")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = memoryview(data)[8 + n:]
    metadata = header.pop("__metadata__", {}) or {}
    tensors, dtypes, spans = {}, {}, []
    for name, entry in header.items():
        dtype, shape = entry["dtype"], [int(d) for d in entry["shape"]]
        begin, end = (int(o) for o in entry["data_offsets"])
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(body):
            raise ValueError(f"{path}: {name}: data_offsets [{begin}, {end}] outside the data section ({len(body)} bytes)")
        raw = bytes(body[begin:end])
        if dtype == "BF16":
            if end - begin != 2 * count:
                raise ValueError(f"{path}: {name}: {end - begin} bytes for {count} BF16 values")
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        elif dtype in ST_DTYPES:
            array = np.frombuffer(raw, dtype=ST_DTYPES[dtype])
            if array.size != count or array.nbytes != end - begin:
                raise ValueError(f"{path}: {name}: {end - begin} bytes for {count} {dtype} values")
        else:
            raise ValueError(f"{path}: {name}: unsupported dtype {dtype}")
        tensors[name] = array.reshape(shape).copy()
        dtypes[name] = dtype
        spans.append((begin, end, name))
    spans.sort()
    for (_, e0, a), (b1, _, b) in zip(spans, spans[1:]):
        if b1 < e0:
            raise ValueError(f"{path}: tensors {a} and {b} overlap")
    return tensors, dtypes, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: array} as F32 in the given order."""
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # pad the header to 8 bytes, as safetensors does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in chunks:
            f.write(raw)


# ---------------------------------------------------------------------------
# TFRecord: per record uint64 LE length, uint32 masked CRC32C of the 8 length
# bytes, the data, uint32 masked CRC32C of the data.
# ---------------------------------------------------------------------------

def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1  # Castagnoli, reflected
        table.append(c)
    return table


CRC32C_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for byte in data:
        c = CRC32C_TABLE[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def write_tfrecord(path, records):
    with open(path, "wb") as f:
        for data in records:
            length = struct.pack("<Q", len(data))
            f.write(length)
            f.write(struct.pack("<I", masked_crc32c(length)))
            f.write(data)
            f.write(struct.pack("<I", masked_crc32c(data)))


def read_tfrecord(path):
    """The records' data, with both CRCs of every record checked."""
    with open(path, "rb") as f:
        blob = f.read()
    records, pos = [], 0
    while pos < len(blob):
        where = f"{path}: record {len(records)} at byte {pos}"
        if pos + 12 > len(blob):
            raise ValueError(f"{where}: truncated header")
        length_bytes = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack_from("<I", blob, pos + 8)
        if length_crc != masked_crc32c(length_bytes):
            raise ValueError(f"{where}: length CRC {length_crc:#010x} != {masked_crc32c(length_bytes):#010x}")
        if pos + 12 + length + 4 > len(blob):
            raise ValueError(f"{where}: truncated data ({length} bytes announced)")
        data = blob[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack_from("<I", blob, pos + 12 + length)
        if data_crc != masked_crc32c(data):
            raise ValueError(f"{where}: data CRC {data_crc:#010x} != {masked_crc32c(data):#010x}")
        records.append(data)
        pos += 12 + length + 4
    return records


# ---------------------------------------------------------------------------
# Protobuf wire format for tf.Example:
#   Example  { Features features = 1; }
#   Features { map<string, Feature> feature = 1; }  (entry: key = 1, value = 2)
#   Feature  { oneof { BytesList bytes_list = 1; FloatList float_list = 2;
#                      Int64List int64_list = 3; } }
#   FloatList { repeated float value = 1 [packed]; }
#   Int64List { repeated int64 value = 1 [packed]; }
# ---------------------------------------------------------------------------

WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_I32 = 0, 1, 2, 5


def encode_varint(n):
    if n < 0:
        n += 1 << 64  # int64 negatives: ten-byte two's complement
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_len_field(field, payload):
    return encode_varint(field << 3 | WIRE_LEN) + encode_varint(len(payload)) + payload


def int64_feature(values):
    packed = b"".join(encode_varint(int(v)) for v in values)
    return encode_len_field(3, encode_len_field(1, packed))


def float_feature(values):
    packed = struct.pack(f"<{len(values)}f", *values)
    return encode_len_field(2, encode_len_field(1, packed))


def encode_example(features):
    """features: {name: encoded Feature message}."""
    entries = b"".join(
        encode_len_field(1, encode_len_field(1, name.encode("utf-8")) + encode_len_field(2, feature))
        for name, feature in sorted(features.items()))
    return encode_len_field(1, entries)


def decode_varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def decode_fields(buf):
    """[(field number, wire type, value)]: int for VARINT/I64/I32, bytes for LEN."""
    fields, pos = [], 0
    while pos < len(buf):
        key, pos = decode_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == WIRE_VARINT:
            value, pos = decode_varint(buf, pos)
        elif wire == WIRE_I64:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == WIRE_I32:
            value, pos = buf[pos:pos + 4], pos + 4
        elif wire == WIRE_LEN:
            n, pos = decode_varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise ValueError("truncated field")
        fields.append((field, wire, value))
    return fields


def decode_feature(buf):
    """A Feature message as (kind, values)."""
    kinds = {1: "bytes", 2: "float", 3: "int64"}
    (field, wire, body), = [f for f in decode_fields(buf)]  # exactly one oneof member
    if wire != WIRE_LEN or field not in kinds:
        raise ValueError(f"Feature field {field} wire {wire}")
    kind, values = kinds[field], []
    for f, w, v in decode_fields(body):
        if f != 1:
            continue
        if kind == "int64":
            raw = []
            if w == WIRE_LEN:  # packed
                p = 0
                while p < len(v):
                    x, p = decode_varint(v, p)
                    raw.append(x)
            elif w == WIRE_VARINT:
                raw.append(v)
            values += [x - (1 << 64) if x >= 1 << 63 else x for x in raw]
        elif kind == "float":
            if w == WIRE_LEN:  # packed
                values += list(struct.unpack(f"<{len(v) // 4}f", v))
            elif w == WIRE_I32:
                values.append(struct.unpack("<f", v)[0])
        else:
            values.append(bytes(v))
    return kind, values


def decode_example(buf):
    """{feature name: (kind, values)} of a serialized tf.Example."""
    out = {}
    for field, wire, features in decode_fields(buf):
        if field != 1 or wire != WIRE_LEN:
            continue
        for f, w, entry in decode_fields(features):
            if f != 1 or w != WIRE_LEN:
                continue
            key, value = None, b""
            for ef, ew, ev in decode_fields(entry):
                if ef == 1:
                    key = bytes(ev).decode("utf-8")
                elif ef == 2:
                    value = ev
            out[key] = decode_feature(value)
    return out


# ---------------------------------------------------------------------------
# The batch
# ---------------------------------------------------------------------------

FEATURES = ["input_ids", "input_mask", "segment_ids", "masked_lm_positions",
            "masked_lm_ids", "masked_lm_weights", "next_sentence_labels"]


def make_samples(s, rng):
    """One global batch of random samples (numpy Generator rng).

    Sample 0 fills the whole sequence and counts all max_predictions slots, one
    target and one input token being vocab - 1 (the last row before ferry's
    padding); sample 1 counts one slot; the others are random. Every sample
    after the first is padded (input_mask 0, token 0, segment 0)."""
    S, P = s.seq, s.max_predictions
    counts = rng.integers(1, P + 1, size=s.batch)
    counts[0] = P
    if s.batch > 1:
        counts[1] = 1
    nsp = rng.integers(0, 2, size=s.batch)
    if s.batch > 1:
        nsp[0], nsp[1] = 0, 1
    samples = []
    for b in range(s.batch):
        count = int(counts[b])
        shortest = max(count + 1, 3)
        length = S if b == 0 or shortest >= S else int(rng.integers(shortest, S))
        ids = np.zeros(S, np.int64)
        ids[:length] = rng.integers(5, s.vocab, size=length)
        mask = np.zeros(S, np.int64)
        mask[:length] = 1
        segments = np.zeros(S, np.int64)
        segments[int(rng.integers(1, length)):length] = 1  # sentence B
        positions = np.zeros(P, np.int64)
        positions[:count] = np.sort(rng.choice(np.arange(1, length), size=count, replace=False))
        lm_ids = np.zeros(P, np.int64)
        lm_ids[:count] = rng.integers(5, s.vocab, size=count)
        weights = np.zeros(P, np.float32)
        weights[:count] = 1.0
        if b == 0:
            lm_ids[0] = s.vocab - 1
            ids[1] = s.vocab - 1
        samples.append({
            "input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "masked_lm_positions": positions, "masked_lm_ids": lm_ids,
            "masked_lm_weights": weights,
            "next_sentence_labels": np.array([nsp[b]], np.int64)})
    return samples


def encode_sample(sample):
    return encode_example({
        name: float_feature(sample[name].tolist()) if name == "masked_lm_weights"
        else int64_feature(sample[name].tolist())
        for name in FEATURES})


def read_batch(path, s):
    """Parses the TFRecord file back into validated numpy arrays [batch, ...]."""
    records = read_tfrecord(path)
    if len(records) != s.batch:
        raise ValueError(f"{path}: {len(records)} records, the batch is {s.batch}")
    lengths = {"input_ids": s.seq, "input_mask": s.seq, "segment_ids": s.seq,
               "masked_lm_positions": s.max_predictions, "masked_lm_ids": s.max_predictions,
               "masked_lm_weights": s.max_predictions, "next_sentence_labels": 1}
    batch = {name: [] for name in FEATURES}
    for i, record in enumerate(records):
        example = decode_example(record)
        if sorted(example) != sorted(FEATURES):
            raise ValueError(f"{path}: record {i}: features {sorted(example)}")
        for name in FEATURES:
            kind, values = example[name]
            want = "float" if name == "masked_lm_weights" else "int64"
            if kind != want or len(values) != lengths[name]:
                raise ValueError(f"{path}: record {i}: {name}: {kind} x {len(values)}, expected {want} x {lengths[name]}")
            batch[name].append(values)
    out = {name: np.array(v, np.float32 if name == "masked_lm_weights" else np.int64)
           for name, v in batch.items()}
    out["next_sentence_labels"] = out["next_sentence_labels"][:, 0]
    # The values ferry checks too; counted slots first, unused slots zero.
    checks = [
        ("input_ids", ((out["input_ids"] >= 0) & (out["input_ids"] < s.vocab)).all()),
        ("input_mask", np.isin(out["input_mask"], [0, 1]).all()),
        ("segment_ids", ((out["segment_ids"] >= 0) & (out["segment_ids"] < s.type_vocab)).all()),
        ("masked_lm_positions", ((out["masked_lm_positions"] >= 0) & (out["masked_lm_positions"] < s.seq)).all()),
        ("masked_lm_ids", ((out["masked_lm_ids"] >= 0) & (out["masked_lm_ids"] < s.vocab)).all()),
        ("masked_lm_weights", np.isin(out["masked_lm_weights"], [0.0, 1.0]).all()
         and (np.diff(out["masked_lm_weights"], axis=1) <= 0).all()),
        ("next_sentence_labels", np.isin(out["next_sentence_labels"], [0, 1]).all()),
    ]
    for name, ok in checks:
        if not ok:
            raise ValueError(f"{path}: {name} holds values out of range")
    return out


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------

def linear(x, weight, bias):
    """Hugging Face layout: weight [out, in]."""
    return x @ weight.t() + bias


def layer_norm(x, scale, bias, eps):
    return F.layer_norm(x, (x.shape[-1],), scale, bias, eps)


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))  # exact erf, not tanh


def additive_mask(input_mask, dtype):
    """[B, S] 0/1 -> [B, 1, 1, S]: 0 at real keys, -10000 at padded keys."""
    zero = torch.zeros((), dtype=dtype)
    fill = torch.full((), MASK_FILL, dtype=dtype)
    return torch.where(input_mask == 0, fill, zero)[:, None, None, :]


def self_attention(x, mask, wq, bq, wk, bk, wv, bv, heads):
    """Multi-head self-attention before its output projection: [B, S, H]."""
    B, S, H = x.shape
    D = H // heads

    def split(t):  # [B, S, H] -> [B, N, S, D]
        return t.view(B, S, heads, D).transpose(1, 2)

    q, k, v = split(linear(x, wq, bq)), split(linear(x, wk, bk)), split(linear(x, wv, bv))
    scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(D))
    probs = torch.softmax(scores + mask, dim=-1)
    return (probs @ v).transpose(1, 2).reshape(B, S, H)


def forward(P, batch, s):
    """Losses of the batch; P: {Hugging Face name: tensor}; batch: torch tensors."""
    ids = batch["input_ids"]
    B, S = ids.shape
    eps = s.layer_norm_eps
    word = P[WORD_EMBEDDINGS]
    x = (word[ids] + P["bert.embeddings.position_embeddings.weight"][:S][None]
         + P["bert.embeddings.token_type_embeddings.weight"][batch["segment_ids"]])
    x = layer_norm(x, P["bert.embeddings.LayerNorm.weight"], P["bert.embeddings.LayerNorm.bias"], eps)
    mask = additive_mask(batch["input_mask"], x.dtype)
    for l in range(s.layers):
        p = lambda n: P[f"bert.encoder.layer.{l}.{n}"]
        context = self_attention(
            x, mask,
            p("attention.self.query.weight"), p("attention.self.query.bias"),
            p("attention.self.key.weight"), p("attention.self.key.bias"),
            p("attention.self.value.weight"), p("attention.self.value.bias"), s.heads)
        attention = linear(context, p("attention.output.dense.weight"), p("attention.output.dense.bias"))
        h = layer_norm(attention + x, p("attention.output.LayerNorm.weight"),
                       p("attention.output.LayerNorm.bias"), eps)
        inter = gelu(linear(h, p("intermediate.dense.weight"), p("intermediate.dense.bias")))
        ffn = linear(inter, p("output.dense.weight"), p("output.dense.bias"))
        x = layer_norm(ffn + h, p("output.LayerNorm.weight"), p("output.LayerNorm.bias"), eps)

    # Masked LM at the masked positions; the decoder is the word embedding.
    rows = torch.arange(B)[:, None]
    gathered = x[rows, batch["masked_lm_positions"]]  # [B, P, H]
    t = gelu(linear(gathered, P["cls.predictions.transform.dense.weight"],
                    P["cls.predictions.transform.dense.bias"]))
    t = layer_norm(t, P["cls.predictions.transform.LayerNorm.weight"],
                   P["cls.predictions.transform.LayerNorm.bias"], eps)
    logits = linear(t, word, P["cls.predictions.bias"])  # [B, P, vocab]
    labels, weights = batch["masked_lm_ids"], batch["masked_lm_weights"].to(x.dtype)
    ce = torch.logsumexp(logits, -1) - logits.gather(-1, labels[..., None])[..., 0]
    count = (batch["masked_lm_weights"] == 1).sum()  # counted slots in the batch
    mlm_loss = (ce * weights).sum() / count
    correct = ((logits.argmax(-1) == labels).to(x.dtype) * weights).sum()

    # Next-sentence prediction on the tanh pooler of token 0.
    pooled = torch.tanh(linear(x[:, 0], P["bert.pooler.dense.weight"], P["bert.pooler.dense.bias"]))
    nsp_logits = linear(pooled, P["cls.seq_relationship.weight"], P["cls.seq_relationship.bias"])
    nsp_labels = batch["next_sentence_labels"]
    nsp_ce = torch.logsumexp(nsp_logits, -1) - nsp_logits.gather(-1, nsp_labels[:, None])[:, 0]
    nsp_loss = nsp_ce.mean()
    return {"loss": mlm_loss + nsp_loss, "mlm_loss": mlm_loss, "nsp_loss": nsp_loss,
            "mlm_accuracy": correct / count, "logits": logits}


def batch_tensors(batch):
    return {k: torch.from_numpy(v) for k, v in batch.items()}


def load_init(path, s):
    """Initial weights as float32 numpy arrays in parameter order, checked
    against the sizes; a decoder.weight alias must equal the word embedding."""
    tensors, _, _ = read_safetensors(path)
    out = {}
    for name, shape, _ in parameter_specs(s):
        if name not in tensors:
            sys.exit(f"error: {path}: no tensor {name}")
        if tuple(tensors[name].shape) != shape:
            sys.exit(f"error: {path}: {name} has shape {list(tensors[name].shape)}, the sizes say {list(shape)}")
        out[name] = tensors.pop(name).astype(np.float32)
    if DECODER_WEIGHT in tensors:
        if not np.array_equal(tensors.pop(DECODER_WEIGHT), out[WORD_EMBEDDINGS]):
            sys.exit(f"error: {path}: {DECODER_WEIGHT} differs from {WORD_EMBEDDINGS}")
    if tensors:
        sys.exit(f"error: {path}: unexpected tensors {sorted(tensors)}")
    return out


def gradients(init, batch, s, dtype):
    """Forward and backward in `dtype`: (losses as floats, {name: grad})."""
    P = {n: torch.tensor(w, dtype=dtype, requires_grad=True) for n, w in init.items()}
    out = forward(P, batch_tensors(batch), s)
    out["loss"].backward()
    losses = {k: float(out[k]) for k in ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy")}
    return losses, {n: p.grad.detach() for n, p in P.items()}


# ---------------------------------------------------------------------------
# The optimizer step (ARCHITECTURE.md "Optimizers"), in float64 on the
# gradients the model produced; the result is rounded to fp32 once.
# ---------------------------------------------------------------------------

def optimizer_update(init, grads, kinds, opt):
    """One update from zero moments (step t = 1). Returns ({name: new fp64
    weights}, global gradient norm before clipping, clip factor)."""
    t = 1
    g = {n: grads[n].to(torch.float64) for n in init}
    # Clip by global norm over all parameters, each element counted once (the
    # tied decoder weight is the word embedding: one tensor, one gradient).
    norm = math.sqrt(sum(float((x * x).sum()) for x in g.values()))
    factor = min(1.0, opt["clip_norm"] / norm) if opt["clip_norm"] > 0 and norm > 0 else 1.0
    b1, b2, eps, lr, wd = opt["beta1"], opt["beta2"], opt["epsilon"], opt["lr"], opt["weight_decay"]
    new = {}
    for n, w0 in init.items():
        w = torch.from_numpy(w0).to(torch.float64)
        gn = g[n] * factor
        m = (1 - b1) * gn  # m, v start at 0
        v = (1 - b2) * gn * gn
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        u = m_hat / (v_hat.sqrt() + eps)
        if kinds[n] == "weight":  # no decay for biases and LayerNorm parameters
            u = u + wd * w
        if opt["optimizer"] == "lamb":
            w_norm, u_norm = float(w.norm()), float(u.norm())
            ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            new[n] = w - lr * ratio * u
        else:
            new[n] = w - lr * u
    return new, norm, factor


def training_step(init, batch, s, opt, dtype=torch.float32):
    """Losses, gradient norm, clip factor and the updated weights (fp32 numpy)."""
    losses, grads = gradients(init, batch, s, dtype)
    kinds = {n: k for n, _, k in parameter_specs(s)}
    new, norm, factor = optimizer_update(init, grads, kinds, opt)
    return losses, norm, factor, {n: w.to(torch.float32).numpy() for n, w in new.items()}


# ---------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------

def cmd_inputs(args):
    s = args
    check_sizes(s)
    os.makedirs(args.out, exist_ok=True)
    gen = torch.Generator().manual_seed(args.seed)
    weights = {}
    for name, shape, kind in parameter_specs(s):
        noise = torch.randn(shape, generator=gen, dtype=torch.float32)
        if kind == "weight":
            weights[name] = noise * INIT_STD
        elif kind == "ln_scale":
            weights[name] = 1.0 + noise * LN_SCALE_STD
        else:
            weights[name] = noise * BIAS_STD
    weights = {n: w.numpy() for n, w in weights.items()}
    if not args.no_decoder_weight:
        weights[DECODER_WEIGHT] = weights[WORD_EMBEDDINGS].copy()  # tied alias
    write_safetensors(os.path.join(args.out, "init.safetensors"), weights,
                      {"format": "pt", "written_by": "bert_reference.py"})

    samples = make_samples(s, np.random.default_rng(args.seed))
    write_tfrecord(os.path.join(args.out, "batch.tfrecord"), [encode_sample(x) for x in samples])
    lengths = [int(x["input_mask"].sum()) for x in samples]
    counted = [int(x["masked_lm_weights"].sum()) for x in samples]
    labels = [int(x["next_sentence_labels"][0]) for x in samples]
    print(f"inputs: {len(weights)} tensors in {args.out}/init.safetensors"
          f"{'' if args.no_decoder_weight else ' (with ' + DECODER_WEIGHT + ')'}; "
          f"{len(samples)} samples in {args.out}/batch.tfrecord: lengths {lengths}, "
          f"counted slots {counted}, nsp labels {labels}")
    return 0


def optimizer_settings(args):
    return {"optimizer": args.optimizer, "lr": args.lr, "weight_decay": args.weight_decay,
            "beta1": args.beta1, "beta2": args.beta2, "epsilon": args.epsilon,
            "clip_norm": args.clip_norm}


def cmd_reference(args):
    s = args
    check_sizes(s)
    dtype = {"float32": torch.float32, "float64": torch.float64}[args.dtype]
    init = load_init(os.path.join(args.inputs, "init.safetensors"), s)
    batch = read_batch(os.path.join(args.inputs, "batch.tfrecord"), s)
    opt = optimizer_settings(args)
    losses, norm, factor, new = training_step(init, batch, s, opt, dtype)
    write_safetensors(args.out, new, {"written_by": "bert_reference.py"})
    record = dict(losses, grad_norm=norm, clip_factor=factor, step=1, dtype=args.dtype, **opt)
    with open(args.losses, "w") as f:
        json.dump(record, f, indent=1)
    clipped = "clipped" if factor < 1 else "NOT clipped"
    print(f"reference ({args.optimizer}, {args.dtype}): loss {losses['loss']:.9g} "
          f"mlm_loss {losses['mlm_loss']:.9g} nsp_loss {losses['nsp_loss']:.9g} "
          f"mlm_accuracy {losses['mlm_accuracy']:.4g}")
    print(f"reference: grad_norm {norm:.9g}, clip_norm {args.clip_norm:g}: {clipped} "
          f"(factor {factor:.6g}); {len(new)} tensors -> {args.out}")
    return 0


def relative(a, b):
    """||a - b|| / ||b|| in float64 (||a - b|| where ||b|| = 0)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    d, n = np.linalg.norm(a - b), np.linalg.norm(b)
    return d / n if n > 0 else d


def cmd_compare(args):
    rtol = args.rtol
    failures = []  # one line per offender
    with open(args.losses) as f:
        ref = json.load(f)
    with open(args.ferry_metrics) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if len(rows) != 1 or rows[0].get("step") != 1:
        failures.append(f"{args.ferry_metrics}: expected one row for step 1, got steps "
                        f"{[r.get('step') for r in rows]}")
        row = rows[0] if rows else {}
    else:
        row = rows[0]

    # Losses (and, where ferry reports them, the gradient norm before clipping
    # and the learning rate); MLM accuracy is information only (argmax ties).
    print(f"{'metric':<14} {'ferry':>16} {'reference':>16} {'relative':>10}")
    checks = [("loss", rtol), ("mlm_loss", rtol), ("nsp_loss", rtol),
              ("grad_norm", rtol), ("lr", 1e-6), ("mlm_accuracy", None)]
    for key, bound in checks:
        if key not in row:
            if key in ("loss", "mlm_loss", "nsp_loss"):
                failures.append(f"metric {key} missing from {args.ferry_metrics}")
            continue
        a, b = float(row[key]), float(ref[key])
        rel = abs(a - b) / abs(b) if b != 0 else abs(a - b)
        note = "" if bound is not None else "  (information)"
        print(f"{key:<14} {a:>16.9g} {b:>16.9g} {rel:>10.2e}{note}")
        if bound is not None and not rel <= bound:
            failures.append(f"metric {key}: ferry {a!r}, reference {b!r}: relative {rel:.2e} > {bound:g}")

    init, _, _ = read_safetensors(args.init)
    init.pop(DECODER_WEIGHT, None)
    refw, _, _ = read_safetensors(args.reference)
    ferw, fdtypes, _ = read_safetensors(args.ferry_model)
    for name in sorted(set(refw) - set(ferw)):
        failures.append(f"{name}: missing from ferry's model")
    for name in sorted(set(ferw) - set(refw)):
        failures.append(f"{name}: in ferry's model, not in the reference")

    # The key bias (attention.self.key.bias) has an analytically zero gradient
    # (adding a constant to every key adds the same number to every score of a
    # query row, which the softmax ignores), so both sides' updates are
    # rounding noise amplified by Adam and cannot agree relatively. A sound
    # bound instead: at t = 1, m_hat = g and v_hat = g^2 exactly, so
    # |u_i| = |g_i| / (|g_i| + eps) < 1 however small the noise, and biases
    # take no weight decay. Hence
    #   AdamW: per element |w1_i - w0_i| = lr |u_i| < lr;
    #   LAMB:  w1 - w0 = -lr (||w0|| / ||u||) u, so ||w1 - w0|| = lr ||w0||
    #          (or 0 when u = 0).
    # Each side moves by at most that step, so the difference of the two is
    # at most 2 steps; we also require ferry's own move to be at most one. The
    # 1e-6 x |w0| slack covers storing w0 + step in fp32 (rounding <= 6e-8
    # relative). This only catches gross errors (the key bias moved by more
    # than one optimizer step, e.g. with a real gradient under LAMB's trust
    # ratio it would still pass); its exact value is noise in any
    # implementation.
    def key_bias_check(a, b, w0):
        """(ok, note) for one key bias, float64 arrays."""
        if ref["optimizer"] == "lamb":
            size, what = (lambda x: float(np.linalg.norm(x))), "norm"
            step = ref["lr"] * size(w0)
        else:
            size, what = (lambda x: float(np.abs(x).max())), "max abs"
            step = ref["lr"]
        slack = 1e-6 * size(w0)
        diff, own = size(a - b), size(a - w0)
        ok_diff, ok_own = diff <= 2 * step + slack, own <= step + slack
        note = (f"key bias, {what}: ferry - reference {diff:.2e} {'<=' if ok_diff else '>'} "
                f"{2 * step + slack:.2e}, ferry - init {own:.2e} {'<=' if ok_own else '>'} "
                f"{step + slack:.2e}")
        return ok_diff and ok_own, note

    rows_out = []  # (name, weight rel, delta rel, ok, note)
    worst_w = worst_d = (0.0, "")
    for name in [n for n in refw if n in ferw]:
        a, b = ferw[name], refw[name]
        if a.shape != b.shape:
            failures.append(f"{name}: ferry shape {list(a.shape)} != reference {list(b.shape)}")
            continue
        if fdtypes[name] != "F32":
            failures.append(f"{name}: ferry dtype {fdtypes[name]}, expected F32")
        if name not in init or init[name].shape != b.shape:
            failures.append(f"{name}: missing or reshaped in {args.init}")
            continue
        a64, b64, w064 = (x.astype(np.float64) for x in (a, b, init[name]))
        rel = relative(a64, b64)
        delta_rel = relative(a64 - w064, b64 - w064)  # information only
        if KEY_BIAS_RE.match(name):
            ok, note = key_bias_check(a64, b64, w064)
            rows_out.append((name, rel, delta_rel, ok, note))
            if not ok:
                failures.append(f"{name}: {note}")
            continue
        ok = rel <= rtol
        rows_out.append((name, rel, delta_rel, ok, ""))
        worst_w = max(worst_w, (rel, name))
        worst_d = max(worst_d, (delta_rel, name))
        if not ok:
            failures.append(f"{name}: weights after the update: relative {rel:.2e} > {rtol:g}")

    print(f"{'tensor':<56} {'weights rel':>11} {'delta rel':>10}")
    for name, rel, drel, ok, note in rows_out:
        print(f"{name:<56} {rel:>11.2e} {drel:>10.2e}{'' if ok else '  FAIL'}{'  ' + note if note else ''}")
    print(f"compare: worst weight relative difference {worst_w[0]:.2e} ({worst_w[1]})")
    print(f"compare: worst update-delta relative difference {worst_d[0]:.2e} ({worst_d[1]}) (information)")
    if failures:
        print(f"compare: FAILED: {len(failures)} offender(s):")
        for line in failures:
            print(f"  {line}")
        return 1
    print(f"compare: OK: {ref['optimizer']}, losses and {len(rows_out)} tensors within {rtol:g}")
    return 0


# ---------------------------------------------------------------------------
# Self-test of this file
# ---------------------------------------------------------------------------

def selftest_formats(s, tmp):
    assert crc32c(b"123456789") == 0xE3069283, hex(crc32c(b"123456789"))
    assert crc32c(b"") == 0
    # Varints: negative int64 as ten bytes, round trip.
    for v in [0, 1, 127, 128, 300, 2 ** 63 - 1, -1, -(2 ** 63)]:
        x, _ = decode_varint(encode_varint(v), 0)
        assert (x - (1 << 64) if x >= 1 << 63 else x) == v, v
    example = encode_example({"a": int64_feature([3, -2, 1 << 40]), "b": float_feature([0.5, -1.25])})
    assert decode_example(example) == {"a": ("int64", [3, -2, 1 << 40]), "b": ("float", [0.5, -1.25])}

    # Inputs written and parsed back exactly.
    args = argparse.Namespace(**vars(s), out=tmp, seed=11, no_decoder_weight=False)
    cmd_inputs(args)
    samples = make_samples(s, np.random.default_rng(11))
    batch = read_batch(os.path.join(tmp, "batch.tfrecord"), s)
    for name in FEATURES:
        want = np.stack([x[name] for x in samples])
        if name == "next_sentence_labels":
            want = want[:, 0]
        assert np.array_equal(batch[name], want), name

    # Corrupted records are refused: a payload byte, a length byte, truncation.
    blob = open(os.path.join(tmp, "batch.tfrecord"), "rb").read()
    for what, bad in [("payload byte", blob[:40] + bytes([blob[40] ^ 1]) + blob[41:]),
                      ("length byte", bytes([blob[0] ^ 4]) + blob[1:]),
                      ("truncation", blob[:-1])]:
        path = os.path.join(tmp, "bad.tfrecord")
        open(path, "wb").write(bad)
        try:
            read_tfrecord(path)
        except ValueError as e:
            print(f"selftest: corrupted TFRecord ({what}) refused: {str(e).split(': ', 1)[1]}")
        else:
            raise AssertionError(f"corrupted TFRecord ({what}) accepted")

    # safetensors round trip, metadata included; the alias equals the word embedding.
    tensors, dtypes, meta = read_safetensors(os.path.join(tmp, "init.safetensors"))
    assert meta["written_by"] == "bert_reference.py"
    assert set(dtypes.values()) == {"F32"}
    assert np.array_equal(tensors[DECODER_WEIGHT], tensors[WORD_EMBEDDINGS])
    write_safetensors(os.path.join(tmp, "copy.safetensors"), tensors)
    again, _, _ = read_safetensors(os.path.join(tmp, "copy.safetensors"))
    assert all(np.array_equal(again[n], tensors[n]) for n in tensors)
    print("selftest: CRC32C, protobuf, TFRecord and safetensors round trips OK")
    return load_init(os.path.join(tmp, "init.safetensors"), s), batch


def selftest_gradients(s, init, batch):
    """Autograd in float64 against central finite differences."""
    torch.manual_seed(0)
    P = {n: torch.tensor(w, dtype=torch.float64, requires_grad=True) for n, w in init.items()}
    bt = batch_tensors(batch)
    out = forward(P, bt, s)
    out["loss"].backward()
    grads = {n: p.grad.detach().clone() for n, p in P.items()}

    def loss_at(name, index, value):
        with torch.no_grad():
            old = P[name][index].item()
            P[name][index] = value
            loss = forward(P, bt, s)["loss"].item()
            P[name][index] = old
        return loss

    h = 1e-6
    worst, checked = 0.0, 0
    for name, tensor in P.items():
        g = grads[name]
        flat_max = int(g.abs().argmax())
        picks = {tuple(int(i) for i in np.unravel_index(flat_max, g.shape))}
        while len(picks) < min(3, g.numel()):
            picks.add(tuple(int(torch.randint(0, d, ())) for d in g.shape))
        for index in picks:
            w = tensor[index].item()
            fd = (loss_at(name, index, w + h) - loss_at(name, index, w - h)) / (2 * h)
            an = g[index].item()
            err = abs(fd - an)
            if KEY_BIAS_RE.match(name):
                assert abs(an) < 1e-12 and abs(fd) < 1e-8, (name, an, fd)
                continue
            # Central differences in float64: truncation ~h^2, rounding ~1e-16/h.
            assert err <= 1e-8 + 1e-5 * abs(an), (name, index, an, fd)
            if abs(an) > 1e-5:
                worst = max(worst, err / abs(an))
            checked += 1

    # A directional derivative along a random direction through every parameter.
    direction = {n: torch.randn_like(p) for n, p in P.items()}
    along = sum(float((grads[n] * direction[n]).sum()) for n in P)
    with torch.no_grad():
        def shifted(sign):
            Q = {n: p + sign * h * direction[n] for n, p in P.items()}
            return forward(Q, bt, s)["loss"].item()
        fd = (shifted(1) - shifted(-1)) / (2 * h)
    assert abs(fd - along) <= 1e-6 * abs(along), (fd, along)
    print(f"selftest: float64 gradients match finite differences at {checked} elements "
          f"(worst relative {worst:.1e} where |g| > 1e-5) and along a random direction "
          f"({along:.9g} vs {fd:.9g}); key bias gradients are 0")

    # The MLM cross-entropy against torch's own.
    counted = bt["masked_lm_weights"] == 1
    mlm = F.cross_entropy(out["logits"][counted], bt["masked_lm_ids"][counted])
    assert abs(mlm.item() - out["mlm_loss"].item()) < 1e-12, (mlm.item(), out["mlm_loss"].item())


def selftest_attention(s, init, batch):
    """self_attention against torch's multi_head_attention_forward (float64)."""
    B, S, H = s.batch, s.seq, s.hidden
    x = torch.randn(B, S, H, dtype=torch.float64)
    p = {k: torch.from_numpy(init[f"bert.encoder.layer.0.attention.self.{k}"]).double()
         for k in ("query.weight", "query.bias", "key.weight", "key.bias", "value.weight", "value.bias")}
    mask = additive_mask(torch.from_numpy(batch["input_mask"]), torch.float64)
    ours = self_attention(x, mask, p["query.weight"], p["query.bias"], p["key.weight"],
                          p["key.bias"], p["value.weight"], p["value.bias"], s.heads)
    eye, zero = torch.eye(H, dtype=torch.float64), torch.zeros(H, dtype=torch.float64)
    attn_mask = mask.expand(B, s.heads, S, S).reshape(B * s.heads, S, S)
    xt = x.transpose(0, 1)  # [S, B, H]
    theirs, _ = F.multi_head_attention_forward(
        xt, xt, xt, H, s.heads,
        torch.cat([p["query.weight"], p["key.weight"], p["value.weight"]]),
        torch.cat([p["query.bias"], p["key.bias"], p["value.bias"]]),
        None, None, False, 0.0, eye, zero, training=False, need_weights=False,
        attn_mask=attn_mask)
    err = float((ours - theirs.transpose(0, 1)).abs().max())
    assert err < 1e-12, err
    print(f"selftest: attention matches torch's multi_head_attention_forward (max diff {err:.1e})")


def selftest_optimizers(s, init, batch):
    """AdamW against torch.optim.AdamW; float32 reference against float64."""
    kinds = {n: k for n, _, k in parameter_specs(s)}
    _, grads = gradients(init, batch, s, torch.float64)
    opt = {"optimizer": "adamw", "lr": 1e-3, "weight_decay": 0.01, "beta1": 0.9,
           "beta2": 0.999, "epsilon": 1e-6, "clip_norm": 0.0}
    ours, _, _ = optimizer_update(init, grads, kinds, opt)
    params = {n: torch.tensor(w, dtype=torch.float64, requires_grad=True) for n, w in init.items()}
    for n, p in params.items():
        p.grad = grads[n].clone()
    decay = [p for n, p in params.items() if kinds[n] == "weight"]
    no_decay = [p for n, p in params.items() if kinds[n] != "weight"]
    torch_opt = torch.optim.AdamW([{"params": decay, "weight_decay": opt["weight_decay"]},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["epsilon"])
    torch_opt.step()
    worst = max(relative(ours[n].numpy(), params[n].detach().numpy()) for n in params)
    assert worst < 1e-13, worst
    print(f"selftest: AdamW update matches torch.optim.AdamW (worst relative {worst:.1e})")

    # How far the float32 reference (the golden values) is from the same step
    # computed in float64: it must be well inside compare's 1e-5.
    for name, settings in GOLDEN_SETTINGS.items():
        opt = dict(settings, optimizer=name)
        l32, n32, f32, w32 = training_step(init, batch, s, opt, torch.float32)
        l64, n64, f64, w64 = training_step(init, batch, s, opt, torch.float64)
        loss_err = max(abs(l32[k] - l64[k]) / abs(l64[k]) for k in ("loss", "mlm_loss", "nsp_loss"))
        w_err = max((relative(w32[n], w64[n]), n) for n in w32 if not KEY_BIAS_RE.match(n))
        d_err = max((relative(w32[n].astype(np.float64) - init[n], w64[n].astype(np.float64) - init[n]), n)
                    for n in w32 if not KEY_BIAS_RE.match(n))
        print(f"selftest: {name}: float32 vs float64 reference: losses {loss_err:.1e}, "
              f"grad_norm {abs(n32 - n64) / n64:.1e} (norm {n64:.6g}, clip factor {f64:.4g}), "
              f"weights {w_err[0]:.1e} ({w_err[1]}), update deltas {d_err[0]:.1e} ({d_err[1]})")
        assert loss_err < 1e-6 and w_err[0] < 1e-6, (loss_err, w_err)


def selftest_sensitivity(s, init, batch, rtol=1e-5):
    """With the golden test's settings, each plausible optimizer bug must move
    some compared tensor by clearly more than compare's tolerance (one Adam
    step is nearly sign(g) and one LAMB step moves a tensor by lr x its norm,
    so small weight decays or rates would hide them)."""
    _, grads = gradients(init, batch, s, torch.float32)
    kinds = {n: k for n, _, k in parameter_specs(s)}
    decay_all = {n: "weight" for n in kinds}

    def update(opt, k=kinds):
        return {n: w.numpy() for n, w in optimizer_update(init, grads, k, opt)[0].items()}

    for name, settings in GOLDEN_SETTINGS.items():
        opt = dict(settings, optimizer=name)
        right = update(opt)
        other_eps = 1e-6 if opt["epsilon"] != 1e-6 else 1e-4
        bugs = {"no weight decay": update(dict(opt, weight_decay=0.0)),
                "decay on biases and LayerNorm": update(opt, decay_all),
                "no clipping": update(dict(opt, clip_norm=0.0)),
                f"epsilon {other_eps:g}": update(dict(opt, epsilon=other_eps))}
        if name == "lamb":
            bugs["AdamW instead"] = update(dict(opt, optimizer="adamw"))
        shown = []
        for bug, wrong in bugs.items():
            worst = max(relative(wrong[n], right[n]) for n in right if not KEY_BIAS_RE.match(n))
            assert worst > 2 * rtol, (name, bug, worst)
            shown.append(f"{bug} {worst:.1e}")
        print(f"selftest: {name} ({', '.join(f'{k} {v:g}' for k, v in settings.items())}) "
              f"detects: {'; '.join(shown)}")


def cmd_selftest(args):
    check_sizes(args)
    torch.manual_seed(1)
    with tempfile.TemporaryDirectory() as tmp:
        init, batch = selftest_formats(args, tmp)
    selftest_gradients(args, init, batch)
    selftest_attention(args, init, batch)
    selftest_optimizers(args, init, batch)
    selftest_sensitivity(args, init, batch)
    print("selftest: OK")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("inputs", help="random initial weights and one batch")
    p.add_argument("--out", required=True, help="directory for init.safetensors and batch.tfrecord")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--no-decoder-weight", action="store_true",
                   help=f"leave out the tied alias {DECODER_WEIGHT}")
    add_size_options(p)
    p.set_defaults(run=cmd_inputs)

    p = sub.add_parser("reference", help="one training step in PyTorch")
    p.add_argument("--inputs", required=True, help="the directory `inputs` wrote")
    p.add_argument("--optimizer", choices=["lamb", "adamw"], required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--epsilon", type=float, default=1e-6)
    p.add_argument("--clip-norm", type=float, default=1.0, help="0 disables clipping")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                   help="model precision (the optimizer step is always float64)")
    p.add_argument("--out", required=True, help="updated weights (safetensors)")
    p.add_argument("--losses", required=True, help="losses, grad_norm and settings (JSON)")
    add_size_options(p)
    p.set_defaults(run=cmd_reference)

    p = sub.add_parser("compare", help="ferry's step against the reference")
    p.add_argument("--reference", required=True)
    p.add_argument("--losses", required=True)
    p.add_argument("--ferry-model", required=True)
    p.add_argument("--ferry-metrics", required=True)
    p.add_argument("--init", required=True)
    p.add_argument("--rtol", type=float, default=1e-5)
    p.set_defaults(run=cmd_compare)

    p = sub.add_parser("selftest", help="check this file (no ferry needed)")
    add_size_options(p)
    p.set_defaults(run=cmd_selftest)

    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
