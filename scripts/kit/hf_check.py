#!/usr/bin/env python3
"""The GPU kit's correctness step: ferry against real libraries.

  hf_check.py --cpu-fxe CPU.fxe (--cuda-fxe CUDA.fxe | --skip-cuda)
              [--ferry BIN] [--datagen BIN] [--text FILE ...] [--work DIR]
              [--samples N] [--tolerance 1e-4]

The two executables are one small BERT pretraining config compiled
beforehand, fp32 (training.precision=fp32), once for the CPU backend and once
for CUDA (the GPU machine has no compiler; the backend is a compile-time key,
so `ferry eval X.fxe --set execution.backend=cuda` is refused):

  ferry compile configs/bert-tiny.yaml --no-cache --set training.precision=fp32 \
      --set model.vocab_size=1000 --set model.hidden_size=64 --set model.ffn_size=256 \
      --set model.seq_length=64 --set model.max_predictions=10 \
      --set training.global_batch_size=8 --set execution.micro_batch_size=8 \
      [--set execution.backend=cuda] -o X.fxe

What it does, all with ferry's binaries and no compiler:

  1. data      `ferry-datagen --format tfrecord` writes 16 synthetic MLPerf
               samples (real-length padding, masked slots with weight 0 past
               the real ones) at the executable's shapes; read back here
               from the tf.Example wire format by hand (no TensorFlow, no h5py).
  2. weights   `ferry train CPU.fxe --steps 1 --save DIR` writes ferry's
               weights (model.safetensors, Hugging Face names, fp32). A second
               set, "perturbed", is that file with random biases, LayerNorm
               scales 1 + N(0, 0.1), matrices at std 1/sqrt(fan_in) and
               embeddings x10, so that every parameter, the attention mask
               and non-uniform logits matter (perturb()).
  3. ferry     `ferry eval FXE --checkpoint W --data FILE --samples N --json`
               (forward only, no dropout) with the CPU executable and the CUDA
               one. A CUDA failure is a failure, never a skip.
  4. HF        transformers.BertForPreTraining (fp32, eval mode, dropout 0,
               eager attention) loads the same safetensors file on the CPU,
               and its loss of the same samples is computed as ferry defines
               it (models/bert/BertBuilder.cpp @heads, training/train/Trainer.cpp
               evaluate): mlm = sum over slots of masked_lm_weight x
               cross-entropy(logits at masked_lm_positions, masked_lm_ids) /
               sum of masked_lm_weights over all N samples; nsp = mean over
               the N samples of the cross-entropy of the seq_relationship
               logits; total = mlm + nsp. With 0/1 weights and distinct
               positions this is exactly HF's own loss (labels -100 outside
               the counted slots, next_sentence_label): checked too
               ("hf_native_total"). Also in float64, to show the reference's
               own rounding. Pass: |ferry - HF fp32| / |HF fp32| <= tolerance
               for mlm, nsp and total, CPU and CUDA.
  5. tokens    a WordPiece vocab.txt made from the text (every character, alone
               and as ##c, frequent words and suffixes); `ferry tokenize
               --tokens` (uncased and --cased) against Hugging Face's
               tokenizers (BertWordPieceTokenizer, Rust) and transformers'
               BertTokenizer (Python in 4.x), line for line, without special
               tokens. ferry's tokens are tokenizers' (training/text/
               Tokenizer.h): any line that differs from tokenizers' is a
               failure. A line where transformers' Python BertTokenizer
               differs from both (it NFC-normalises first) is a known
               difference of that tokenizer, counted and shown
               ("slow_tokenizer"), not a failure.

The last line of stdout is one JSON object: {"status": "ok"|"failed"|
"skipped", "reason", "losses", "tokenizer", ...}; exit 0 for ok and skipped,
1 for failed. Skipped when torch, transformers, tokenizers or safetensors do
not import. Standard library plus those.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
LOG = sys.stderr


def say(msg):
    print(f"hf_check: {msg}", file=LOG, flush=True)


# ---------------------------------------------------------------------------
# Running ferry
# ---------------------------------------------------------------------------

class Failure(Exception):
    pass


def child_env(cuda):
    """The environment of ferry's processes: pip's NVIDIA libraries and the
    CUDA toolkit on LD_LIBRARY_PATH when a CUDA run needs them and the caller
    (check.py) has not already put them there."""
    env = dict(os.environ)
    if not cuda:
        return env
    have = env.get("LD_LIBRARY_PATH", "")
    if "nvidia" in have:
        return env
    from check import cuda_library_dirs  # beside this file
    libs = cuda_library_dirs()
    env["LD_LIBRARY_PATH"] = ":".join(libs + ([have] if have else []))
    return env


def run(cmd, timeout, stdin=None, cuda=False, what=None):
    """Runs cmd; returns stdout (bytes). Raises Failure with the tail of the
    output on a non-zero exit or a timeout."""
    start = time.monotonic()
    say("$ " + " ".join(cmd))
    try:
        p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout,
                           env=child_env(cuda))
    except subprocess.TimeoutExpired:
        raise Failure(f"{what or cmd[0]}: timed out after {timeout:.0f} s")
    except OSError as e:
        raise Failure(f"{what or cmd[0]}: {e}")
    err = p.stderr.decode(errors="replace")
    if err.strip():
        LOG.write(err if len(err) < 4000 else err[-4000:])
    say(f"  exit {p.returncode}, {time.monotonic() - start:.1f} s")
    if p.returncode != 0:
        tail = (err.strip() or p.stdout.decode(errors="replace").strip())
        tail = " | ".join(tail.splitlines()[-3:])[-600:]
        raise Failure(f"{what or cmd[0]}: exit {p.returncode}: {tail}")
    return p.stdout


# ---------------------------------------------------------------------------
# The executable's embedded config (docs/executable.md: config_yaml, the
# resolved config as nested YAML, a FlatBuffer string in the payload)
# ---------------------------------------------------------------------------

def fxe_config(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:8] != b"FERRYFXE":
        raise Failure(f"{path}: not a ferry executable")
    payload = raw[32:]
    # A FlatBuffer string: u32 length, the bytes, a NUL. The config starts
    # with its first section, "model:".
    pos = payload.find(b"model:\n")
    while pos >= 4:
        (n,) = struct.unpack_from("<I", payload, pos - 4)
        if pos + n < len(payload) and payload[pos + n] == 0:
            return parse_yaml(payload[pos:pos + n].decode())
        pos = payload.find(b"model:\n", pos + 1)
    raise Failure(f"{path}: no embedded config found")


def parse_yaml(text):
    """Config::yamlText's nested YAML (2-space indents, scalars) -> dotted keys."""
    out, stack = {}, []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = (len(line) - len(line.lstrip(" "))) // 2
        key, _, value = line.strip().partition(":")
        stack = stack[:indent]
        value = value.strip()
        if not value:
            stack.append(key)
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[".".join(stack + [key])] = value
    return out


# ---------------------------------------------------------------------------
# MLPerf TFRecord of tf.Example, read by hand: test/e2e/Inputs/
# tfrecord_reader.py (beside this file's ../../ in the repository, under the
# kit's root in the kit)
# ---------------------------------------------------------------------------

for _inputs in (os.path.join(HERE, "test", "e2e", "Inputs"),
                os.path.join(HERE, "..", "..", "test", "e2e", "Inputs")):
    if os.path.exists(os.path.join(_inputs, "tfrecord_reader.py")):
        sys.path.insert(0, _inputs)
        break
from tfrecord_reader import records as read_tfrecord  # noqa: E402


# ---------------------------------------------------------------------------
# The Hugging Face reference
# ---------------------------------------------------------------------------

ALLOWED_MISSING = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias",
                   "bert.embeddings.position_ids"}


def hf_model(cfg, weights_path, dtype):
    import torch
    from safetensors.torch import load_file
    from transformers import BertConfig, BertForPreTraining
    kw = dict(vocab_size=int(cfg["model.vocab_size"]),
              hidden_size=int(cfg["model.hidden_size"]),
              num_hidden_layers=int(cfg["model.layers"]),
              num_attention_heads=int(cfg["model.num_heads"]),
              intermediate_size=int(cfg["model.ffn_size"]),
              hidden_act="gelu",  # exact erf, as ferry's
              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
              max_position_embeddings=int(cfg["model.max_positions"]),
              type_vocab_size=int(cfg["model.type_vocab_size"]),
              layer_norm_eps=float(cfg["model.layer_norm_eps"]))
    try:
        config = BertConfig(attn_implementation="eager", **kw)
    except TypeError:
        config = BertConfig(**kw)
    model = BertForPreTraining(config)
    state = load_file(weights_path)
    missing, unexpected = model.load_state_dict(state, strict=False)
    bad = [k for k in missing if k not in ALLOWED_MISSING]
    if bad or unexpected:
        raise Failure(f"{weights_path} does not load into BertForPreTraining: "
                      f"missing {bad}, unexpected {list(unexpected)}")
    p = model.cls.predictions
    with torch.no_grad():  # tied in HF; copy in case a version does not tie
        word = model.bert.embeddings.word_embeddings.weight
        if p.decoder.weight.data_ptr() != word.data_ptr():
            p.decoder.weight.copy_(word)
        if p.decoder.bias is not None and p.decoder.bias.data_ptr() != p.bias.data_ptr():
            p.decoder.bias.copy_(p.bias)
    model = model.to(dtype)
    model.eval()
    return model


def batch_tensors(samples):
    import torch

    def t(name, dtype=torch.long):
        return torch.tensor([s[name] for s in samples], dtype=dtype)
    return {"input_ids": t("input_ids"), "segment_ids": t("segment_ids"),
            "input_mask": t("input_mask"),
            "positions": t("masked_lm_positions"), "ids": t("masked_lm_ids"),
            "weights": t("masked_lm_weights", torch.float64),
            "nsp": t("next_sentence_labels").reshape(len(samples))}


def hf_losses(model, b, dtype, native=False):
    import torch
    import torch.nn.functional as F
    with torch.no_grad():
        out = model(input_ids=b["input_ids"], attention_mask=b["input_mask"],
                    token_type_ids=b["segment_ids"])
        logits = out.prediction_logits  # [B, S, V]
        v = logits.shape[-1]
        idx = b["positions"].unsqueeze(-1).expand(-1, -1, v)
        gathered = torch.gather(logits, 1, idx)  # [B, P, V]
        ce = F.cross_entropy(gathered.reshape(-1, v), b["ids"].reshape(-1),
                             reduction="none").double()
        w = b["weights"].reshape(-1)
        mlm = float((ce * w).sum() / w.sum())
        nsp = float(F.cross_entropy(out.seq_relationship_logits, b["nsp"]).double())
        r = {"mlm": mlm, "nsp": nsp, "total": mlm + nsp}
        if native:
            # HF's own loss: labels -100 outside the counted slots. The same
            # as ferry's definition when weights are 0/1 and the counted
            # positions of a sample are distinct.
            labels = torch.full_like(b["input_ids"], -100)
            ok = True
            for i in range(labels.shape[0]):
                seen = set()
                for pos, tok, wt in zip(b["positions"][i].tolist(), b["ids"][i].tolist(),
                                        b["weights"][i].tolist()):
                    if wt == 0:
                        continue
                    if wt != 1 or pos in seen:
                        ok = False
                    seen.add(pos)
                    labels[i, pos] = tok
            if ok:
                o = model(input_ids=b["input_ids"], attention_mask=b["input_mask"],
                          token_type_ids=b["segment_ids"], labels=labels,
                          next_sentence_label=b["nsp"])
                r["hf_native_total"] = float(o.loss)
        return r


def perturb(src, dst, seed=1234):
    """ferry's weights made to matter: biases N(0, 0.1), LayerNorm scales
    1 + N(0, 0.1), each linear layer's matrix rescaled to std 1/sqrt(fan_in)
    (pre-activations of order 1: GELU, tanh and the attention softmax away
    from their linear parts) and the embeddings x10 (the tied decoder's logits
    far from uniform). Then ignoring the attention mask moves the MLM loss by
    about 3e-3 and the NSP loss by 2e-1, far above the tolerance."""
    import torch
    from safetensors.torch import load_file, save_file
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, t in sorted(load_file(src).items()):
        t = t.float()
        noise = torch.randn(t.shape, generator=g, dtype=torch.float32)
        if "LayerNorm.weight" in name:
            t = 1.0 + 0.1 * noise
        elif name.endswith(".bias"):
            t = 0.1 * noise
        elif "embeddings" in name:
            t = 10.0 * t
        elif t.dim() == 2:
            t = t * (t.shape[1] ** -0.5) / float(t.std())
        out[name] = t.contiguous()
    save_file(out, dst, metadata={"format": "pt"})


# ---------------------------------------------------------------------------
# Losses: ferry eval against HF
# ---------------------------------------------------------------------------

def rel(a, b):
    return abs(a - b) / abs(b) if b != 0 else abs(a - b)


def ferry_eval(args, fxe, weights, data, work, tag, cuda):
    out = os.path.join(work, f"eval-{tag}.json")
    if os.path.exists(out):
        os.unlink(out)
    run([args.ferry, "eval", fxe, "--checkpoint", weights, "--data", data,
         "--samples", str(args.samples), "--json", out],
        args.timeout, cuda=cuda, what=f"ferry eval ({tag})")
    with open(out) as f:
        j = json.load(f)
    mlm, nsp = j["eval_mlm_loss"], j["eval_nsp_loss"]
    return {"mlm": mlm, "nsp": nsp, "total": mlm + nsp,
            "samples": j["samples"], "masked_tokens": j["masked_tokens"]}


def check_losses(args, work, problems):
    import torch
    cfg = fxe_config(args.cpu_fxe)
    for key in ("model.task", "model.max_sequences_per_pack"):
        if cfg.get(key, {"model.task": "pretraining",
                         "model.max_sequences_per_pack": "1"}[key]) not in ("pretraining", "1"):
            raise Failure(f"{args.cpu_fxe}: {key} is {cfg[key]}; this check "
                          "needs an unpacked pretraining model")
    if cfg.get("training.precision") not in ("fp32", "auto"):
        raise Failure(f"{args.cpu_fxe}: training.precision {cfg.get('training.precision')}; "
                      "compile with --set training.precision=fp32")
    info = {"config": {k: cfg[k] for k in sorted(cfg) if k.startswith("model.")}}
    info["config"]["training.global_batch_size"] = cfg["training.global_batch_size"]
    if args.cuda_fxe:
        ccfg = fxe_config(args.cuda_fxe)
        diff = [k for k in cfg if (k.startswith("model.") or k == "training.global_batch_size")
                and ccfg.get(k) != cfg[k]]
        if diff:
            raise Failure(f"{args.cuda_fxe} and {args.cpu_fxe} differ in {diff}")
        if ccfg.get("execution.backend") != "cuda":
            raise Failure(f"{args.cuda_fxe}: execution.backend is "
                          f"{ccfg.get('execution.backend')}, not cuda")
        if ccfg.get("training.precision") != "fp32":
            raise Failure(f"{args.cuda_fxe}: training.precision is "
                          f"{ccfg.get('training.precision')} (auto is bf16 on CUDA); "
                          "compile with --set training.precision=fp32")
    if cfg.get("execution.backend") != "cpu":
        raise Failure(f"{args.cpu_fxe}: execution.backend is {cfg.get('execution.backend')}")

    # 1. The batch.
    data = os.path.join(work, "batch.tfrecord")
    total = max(args.samples, int(cfg["training.global_batch_size"]))
    run([args.datagen, "--format", "tfrecord", "--seq", cfg["model.seq_length"],
         "--predictions", cfg["model.max_predictions"], "--vocab", cfg["model.vocab_size"],
         "--samples", str(total), "--seed", "7", "-o", data],
        args.timeout, what="ferry-datagen")
    samples = read_tfrecord(data, args.samples)
    if len(samples) != args.samples:
        raise Failure(f"{data}: {len(samples)} records, expected {args.samples}")
    b = batch_tensors(samples)
    info["batch"] = {"samples": args.samples,
                     "counted_slots": float(b["weights"].sum()),
                     "real_tokens": int(b["input_mask"].sum()),
                     "tokens": int(b["input_mask"].numel())}

    # 2. ferry's weights after one step, and the perturbed copy.
    save = os.path.join(work, "ckpt")
    run([args.ferry, "train", args.cpu_fxe, "--data", data, "--steps", "1",
         "--save", save, "--log-every", "0"], args.timeout, what="ferry train --save")
    steps = sorted(d for d in os.listdir(save) if d.startswith("step-"))
    if not steps:
        raise Failure(f"ferry train --save wrote no step directory in {save}")
    ferry_weights = os.path.join(save, steps[-1], "model.safetensors")
    perturbed = os.path.join(work, "perturbed.safetensors")
    perturb(ferry_weights, perturbed)

    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    losses = {}
    for wname, wpath in (("ferry_weights", ferry_weights), ("perturbed", perturbed)):
        r = {"weights": wpath}
        m32 = hf_model(cfg, wpath, torch.float32)
        r["hf_fp32"] = hf_losses(m32, b, torch.float32, native=True)
        m64 = hf_model(cfg, wpath, torch.float64)
        r["hf_fp64"] = hf_losses(m64, b, torch.float64)
        ref = r["hf_fp32"]
        r["hf_fp32_vs_fp64_rel"] = {k: rel(ref[k], r["hf_fp64"][k]) for k in ("mlm", "nsp", "total")}
        if "hf_native_total" in ref:
            r["hf_native_rel"] = rel(ref["hf_native_total"], ref["total"])
            if r["hf_native_rel"] > 1e-6:
                problems.append(f"{wname}: HF's own loss {ref['hf_native_total']:.7g} "
                                f"differs from ferry's definition on HF's logits "
                                f"{ref['total']:.7g}")
        runs = [("cpu", args.cpu_fxe, False)]
        if args.cuda_fxe:
            runs.append(("cuda", args.cuda_fxe, True))
        for backend, fxe, cuda in runs:
            try:
                f = ferry_eval(args, fxe, wpath, data, work, f"{wname}-{backend}", cuda)
            except Failure as e:
                r[f"ferry_{backend}"] = {"error": str(e)}
                problems.append(str(e))
                continue
            f["rel_diff"] = {k: rel(f[k], ref[k]) for k in ("mlm", "nsp", "total")}
            f["rel_diff_fp64"] = {k: rel(f[k], r["hf_fp64"][k]) for k in ("mlm", "nsp", "total")}
            if abs(f["masked_tokens"] - info["batch"]["counted_slots"]) > 0.5:
                problems.append(f"{wname}/{backend}: ferry counted {f['masked_tokens']} "
                                f"masked tokens, the records hold {info['batch']['counted_slots']}")
            worst = max(f["rel_diff"].values())
            f["pass"] = worst <= args.tolerance
            if not f["pass"]:
                problems.append(f"{wname}/{backend}: ferry {f['total']:.7g} "
                                f"(mlm {f['mlm']:.7g}, nsp {f['nsp']:.7g}) vs HF "
                                f"{ref['total']:.7g} (mlm {ref['mlm']:.7g}, nsp "
                                f"{ref['nsp']:.7g}): relative difference {worst:.2e} "
                                f"> {args.tolerance:g}")
            r[f"ferry_{backend}"] = f
        losses[wname] = r
    info["losses"] = losses
    return info


# ---------------------------------------------------------------------------
# Tokenizer agreement
# ---------------------------------------------------------------------------

def default_texts():
    texts = [p for p in ("/usr/share/common-licenses/Apache-2.0",
                         "/usr/share/common-licenses/MPL-2.0")
             if os.path.exists(p)]
    for root in (HERE, os.path.join(HERE, "..", "..")):
        p = os.path.normpath(os.path.join(root, "test", "e2e", "Inputs", "unicode-lines.txt"))
        if os.path.exists(p):
            texts.append(p)
            break
    return texts


def make_vocab(lines, path):
    """[PAD], [unused0-4], [UNK], [CLS], [SEP], [MASK]; every printable
    character of the text (as written, lower-cased and without accents),
    alone and as ##c; the 700 most frequent lower-case words; the 150 most
    frequent 2-4 character suffixes as ##s. So every character is known
    (a basic-tokenizer difference cannot hide behind [UNK]) and WordPiece
    chooses between words, suffixes and characters."""
    from collections import Counter

    def ok(c):
        cat = unicodedata.category(c)
        return not (cat.startswith("C") or cat.startswith("Z") or c.isspace())

    chars, words, suffixes = set(), Counter(), Counter()
    for line in lines:
        low = line.lower()
        stripped = "".join(c for c in unicodedata.normalize("NFD", low)
                           if unicodedata.category(c) != "Mn")
        for form in (line, low, stripped, unicodedata.normalize("NFC", line),
                     unicodedata.normalize("NFC", low)):
            chars.update(c for c in form if ok(c))
        for w in re.findall(r"\w+", stripped):
            words[w] += 1
            for k in (2, 3, 4):
                if len(w) > k + 2:
                    suffixes["##" + w[-k:]] += 1
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(5)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    seen = set(tokens)
    for c in sorted(chars):
        for t in (c, "##" + c):
            if t not in seen:
                tokens.append(t)
                seen.add(t)
    for t in [w for w, _ in words.most_common(700)] + [s for s, _ in suffixes.most_common(150)]:
        if t not in seen:
            tokens.append(t)
            seen.add(t)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tokens))
    return len(tokens)


def compare(name, tokenize, lines, ferry, cased, problems, mode, explain=None):
    """Line by line. ferry's tokens are Hugging Face tokenizers' (the Rust
    BertNormalizer, BertPreTokenizer and WordPiece: training/text/
    Tokenizer.h), so a mismatch is a failure unless `explain(i)` names a
    known difference of the other tokenizer: transformers' Python
    BertTokenizer NFC-normalises first, which tokenizers does not, so where
    tokenizers gives ferry's tokens it is that ("slow_tokenizer")."""
    m = {"mismatched_lines": 0, "explained": {}, "unexplained": 0, "examples": []}
    first = None
    got = tokenize(lines)
    for i, (a, h) in enumerate(zip(ferry, got)):
        if a == h:
            continue
        m["mismatched_lines"] += 1
        why = explain(i) if explain else None
        example = {"line": i + 1, "text": lines[i][:120], "ferry": " ".join(a[:40]),
                   name: " ".join(h[:40])}
        if why:
            m["explained"][why] = m["explained"].get(why, 0) + 1
            example["explained_by"] = why
        else:
            m["unexplained"] += 1
            first = first or i + 1
        if len(m["examples"]) < 3 or (not why and m["unexplained"] == 1):
            m["examples"].append(example)
    if m["unexplained"]:
        problems.append(f"tokenizer ({mode}): {m['unexplained']} lines differ from "
                        f"{name} with no known reason (first: line {first})")
    return m


def hf_slow_tokenizer(vocab, cased, work):
    """transformers' BertTokenizer (the Python one in 4.x; in 5.x the name
    may be the Rust-backed one: its class is reported)."""
    from transformers import BertTokenizer
    try:
        tok = BertTokenizer(vocab, do_lower_case=not cased, strip_accents=None,
                            tokenize_chinese_chars=True)
    except Exception:
        tok = BertTokenizer.from_pretrained(os.path.dirname(vocab), do_lower_case=not cased,
                                            strip_accents=None, tokenize_chinese_chars=True)
    return tok


def check_tokenizer(args, work, problems):
    from tokenizers import BertWordPieceTokenizer
    texts = args.text or default_texts()
    if not texts:
        return {"status": "skipped", "reason": "no text files (--text)"}
    corpus = b""
    for p in texts:
        with open(p, "rb") as f:
            data = f.read()
        corpus += data if data.endswith(b"\n") else data + b"\n"
    lines = corpus.decode("utf-8").split("\n")[:-1]
    vocab_dir = os.path.join(work, "vocab")
    os.makedirs(vocab_dir, exist_ok=True)
    vocab = os.path.join(vocab_dir, "vocab.txt")
    size = make_vocab(lines, vocab)
    r = {"texts": texts, "lines": len(lines), "vocab_size": size, "modes": {}}
    before = len(problems)
    for mode, cased in (("uncased", False), ("cased", True)):
        cmd = [args.ferry, "tokenize", "--vocab", vocab, "--tokens"] + (["--cased"] if cased else [])
        out = run(cmd, args.timeout, stdin=corpus, what=f"ferry tokenize ({mode})")
        got = out.decode("utf-8").split("\n")
        if got and got[-1] == "":
            got.pop()
        if len(got) != len(lines):
            problems.append(f"ferry tokenize ({mode}): {len(got)} lines for {len(lines)}")
            r["modes"][mode] = {"error": f"{len(got)} lines of output for {len(lines)}"}
            continue
        ferry = [g.split(" ") if g else [] for g in got]
        m = {"tokens": sum(len(t) for t in ferry),
             "unk": sum(t.count("[UNK]") for t in ferry)}
        fast = BertWordPieceTokenizer(vocab, clean_text=True, handle_chinese_chars=True,
                                      strip_accents=not cased, lowercase=not cased)
        fast_tokens = [e.tokens for e in fast.encode_batch(lines, add_special_tokens=False)]
        m["tokenizers"] = compare(
            "tokenizers", lambda ls: fast_tokens if ls is lines else
            [e.tokens for e in fast.encode_batch(ls, add_special_tokens=False)],
            lines, ferry, cased, problems, mode)
        try:
            slow = hf_slow_tokenizer(vocab, cased, work)
        except Exception as e:
            m["transformers"] = {"error": f"BertTokenizer: {type(e).__name__}: {e}"[:300]}
            problems.append(f"tokenizer ({mode}): transformers' BertTokenizer would not load: {e}")
        else:
            m["transformers"] = compare(
                "transformers", lambda ls: [slow.tokenize(x) for x in ls],
                lines, ferry, cased, problems, mode,
                explain=lambda i: "slow_tokenizer" if fast_tokens[i] == ferry[i] else None)
            m["transformers"]["class"] = type(slow).__module__ + "." + type(slow).__name__
        r["modes"][mode] = m
    r["status"] = "ok" if len(problems) == before else "failed"
    explained = {}
    for m in r["modes"].values():
        for lib in ("tokenizers", "transformers"):
            for k, n in m.get(lib, {}).get("explained", {}).items():
                explained[k] = explained.get(k, 0) + n
    if explained:
        r["known_differences"] = explained
    return r


# ---------------------------------------------------------------------------

def finish(result, code):
    print(json.dumps(result, sort_keys=False))
    sys.stdout.flush()
    sys.exit(code)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("--ferry", help="ferry (default: bin/ferry beside this file, "
                    "else the repository's build/bin/ferry)")
    ap.add_argument("--datagen", help="ferry-datagen (default: beside ferry)")
    ap.add_argument("--cpu-fxe", required=True, help="the model compiled for the CPU backend, fp32")
    ap.add_argument("--cuda-fxe", help="the same model compiled for the CUDA backend, fp32")
    ap.add_argument("--skip-cuda", action="store_true", help="no CUDA run (no GPU here)")
    ap.add_argument("--text", nargs="+", help="text files for the tokenizer check "
                    "(default: Debian's Apache-2.0 and MPL-2.0 licences and "
                    "test/e2e/Inputs/unicode-lines.txt, those that exist)")
    ap.add_argument("--skip-tokenizer", action="store_true")
    ap.add_argument("--work", help="working directory (default: a temporary one, removed)")
    ap.add_argument("--samples", type=int, default=12,
                    help="samples evaluated (default 12: with a global batch of 8, "
                         "a full batch and a padded one)")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--timeout", type=float, default=120, help="seconds per ferry command")
    args = ap.parse_args()

    result = {"status": "failed", "reason": "", "losses": {}, "tokenizer": {}}
    if bool(args.cuda_fxe) == bool(args.skip_cuda):
        result["reason"] = "give exactly one of --cuda-fxe and --skip-cuda"
        finish(result, 1)
    missing = []
    for mod in ("torch", "transformers", "tokenizers", "safetensors"):
        try:
            __import__(mod)
        except Exception as e:
            missing.append(f"{mod} ({type(e).__name__}: {e})")
    if missing:
        finish({"status": "skipped", "reason": "not importable: " + "; ".join(missing),
                "losses": {}, "tokenizer": {}}, 0)
    if not args.ferry:
        for p in (os.path.join(HERE, "bin", "ferry"),
                  os.path.join(HERE, "..", "..", "build", "bin", "ferry")):
            if os.path.exists(p):
                args.ferry = os.path.normpath(p)
                break
    if not args.ferry or not os.path.exists(args.ferry):
        result["reason"] = f"no ferry binary ({args.ferry or 'give --ferry'})"
        finish(result, 1)
    args.datagen = args.datagen or os.path.join(os.path.dirname(args.ferry), "ferry-datagen")
    import torch
    import transformers
    import tokenizers
    import safetensors
    result["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                          "tokenizers": tokenizers.__version__,
                          "safetensors": getattr(safetensors, "__version__", "?"),
                          "python": sys.version.split()[0]}
    tmp = None
    if args.work:
        os.makedirs(args.work, exist_ok=True)
        work = args.work
    else:
        tmp = tempfile.TemporaryDirectory(prefix="ferry-hf-check-")
        work = tmp.name
    problems = []
    start = time.monotonic()
    try:
        try:
            info = check_losses(args, work, problems)
            result["losses"] = info.pop("losses")
            result.update(info)
        except Failure as e:
            problems.append(str(e))
        except Exception as e:
            import traceback
            traceback.print_exc()
            problems.append(f"loss check crashed: {type(e).__name__}: {e}")
        if args.skip_tokenizer:
            result["tokenizer"] = {"status": "skipped", "reason": "--skip-tokenizer"}
        else:
            try:
                result["tokenizer"] = check_tokenizer(args, work, problems)
            except Exception as e:
                if not isinstance(e, Failure):
                    import traceback
                    traceback.print_exc()
                msg = str(e) if isinstance(e, Failure) else f"{type(e).__name__}: {e}"
                problems.append(msg)
                result["tokenizer"] = {"status": "failed", "reason": msg}
    finally:
        if tmp is not None:
            tmp.cleanup()
    result["seconds"] = round(time.monotonic() - start, 1)
    result["cuda"] = "run" if args.cuda_fxe else "skipped (--skip-cuda)"
    if problems:
        result["status"] = "failed"
        result["reason"] = "; ".join(problems)[:2000]
        finish(result, 1)
    worst = max((r[f"ferry_{b}"]["rel_diff"][k] for r in result["losses"].values()
                 for b in ("cpu", "cuda") if f"ferry_{b}" in r
                 for k in ("mlm", "nsp", "total")), default=float("nan"))
    tok = result["tokenizer"]
    result["status"] = "ok"
    reason = (f"ferry CPU{' (CUDA skipped)' if args.skip_cuda else ' and CUDA'} losses "
              f"within {worst:.1e} of Hugging Face's (tolerance {args.tolerance:g})")
    if tok.get("status") == "ok":
        reason += f"; ferry tokenize agrees on {tok.get('lines')} lines"
        known = tok.get("known_differences")
        if known:
            reason += " but for known differences (lines: " + ", ".join(
                f"{k} {n}" for k, n in sorted(known.items())) + ")"
    else:
        reason += f"; tokenizer {tok.get('status')}: {tok.get('reason', '')}"
    result["reason"] = reason
    finish(result, 0)


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException as e:  # anything unforeseen still ends in one JSON line
        import traceback
        traceback.print_exc()
        finish({"status": "failed", "losses": {}, "tokenizer": {},
                "reason": f"hf_check.py crashed: {type(e).__name__}: {e}"[:2000]}, 1)
