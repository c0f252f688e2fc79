#!/usr/bin/env python3
"""MLPerf TFRecord files of tf.Example records, read by hand with the
standard library only (no TensorFlow, no protobuf package): the record
framing (length, its CRC, the data, its CRC; the CRCs are not checked here,
ferry's own reader checks them) and the protobuf wire format of
tf.Example -> Features -> Feature -> FloatList / Int64List, packed or not.
Used by the e2e tests' hand counts (eval_handcount.py) and the GPU kit's
comparison with Hugging Face (scripts/kit/hf_check.py).
"""
import struct


def varint(buf, pos):
    value, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def fields(buf):
    """(field number, wire type, value) of a protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"tf.Example: wire type {wire}")
        yield number, wire, value


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def example(record):
    """tf.Example -> {name: list of numbers}: Example.features (1) ->
    Features.feature (1, map entries key 1, value 2) -> Feature
    (float_list 2, int64_list 3) -> value (1, packed or not)."""
    out = {}
    for n1, _, features in fields(record):
        if n1 != 1:
            continue
        for n2, _, entry in fields(features):
            if n2 != 1:
                continue
            name, feature = None, b""
            for number, _, value in fields(entry):
                if number == 1:
                    name = value.decode()
                elif number == 2:
                    feature = value
            values = []
            for kind, _, lst in fields(feature):
                for n3, wire, v in fields(lst):
                    if n3 != 1:
                        continue
                    if kind == 2:  # float_list
                        if wire == 2:
                            values += list(struct.unpack(f"<{len(v) // 4}f", v))
                        else:
                            values.append(struct.unpack("<f", v)[0])
                    elif kind == 3:  # int64_list
                        if wire == 2:
                            p = 0
                            while p < len(v):
                                x, p = varint(v, p)
                                values.append(signed(x))
                        else:
                            values.append(signed(v))
            out[name] = values
    return out


def records(path, limit):
    with open(path, "rb") as f:
        raw = f.read()
    pos, out = 0, []
    while pos < len(raw) and len(out) < limit:
        (n,) = struct.unpack_from("<Q", raw, pos)
        out.append(example(raw[pos + 12:pos + 12 + n]))
        pos += 12 + n + 4
    return out
