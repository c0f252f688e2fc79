"""Rewrites a ferry export (BertForPreTraining names) as Hugging Face's
BertModel writes its files: the "bert." prefix dropped, the pretraining
heads (cls.*) left out, and the int64 embeddings.position_ids buffer that
older transformers releases save. Standard library only.

usage: bert_model_file.py IN.safetensors OUT.safetensors [--drop NAME]...
"""
import json
import struct
import sys

src, dst, drop = sys.argv[1], sys.argv[2], set()
args = sys.argv[3:]
while args:
    if args[0] != "--drop" or len(args) < 2:
        sys.exit(__doc__)
    drop.add(args[1])
    args = args[2:]

raw = open(src, "rb").read()
(n,) = struct.unpack_from("<Q", raw, 0)
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
tensors = []
for name, entry in header.items():
    if name == "__metadata__" or name.startswith("cls."):
        continue
    begin, end = entry["data_offsets"]
    out = name[len("bert."):] if name.startswith("bert.") else name
    if out in drop:
        continue
    tensors.append((out, entry["dtype"], entry["shape"], data[begin:end]))
positions = header["bert.embeddings.position_embeddings.weight"]["shape"][0]
tensors.append(("embeddings.position_ids", "I64", [1, positions],
                struct.pack(f"<{positions}q", *range(positions))))

out_header, blob = {"__metadata__": {"format": "pt"}}, b""
for name, dtype, shape, payload in tensors:
    out_header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(blob), len(blob) + len(payload)]}
    blob += payload
text = json.dumps(out_header).encode()
text += b" " * (-len(text) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + blob)
