#!/usr/bin/env python3
"""ferry against Hugging Face's transformers, on the CPU, in fp32 (run with
the environment scripts/hf-env.sh makes; HF_HUB_OFFLINE=1).

  hf_reference.py losses --checkpoint STEP_DIR --data F.tfrecord --samples N
                         --ferry-json EVAL.json --tolerance T --label L
      transformers.BertForPreTraining.from_pretrained(STEP_DIR) (ferry's
      export: model.safetensors and config.json, eval mode, eager attention)
      computes the masked-LM and next-sentence losses of the first N samples
      of F as ferry defines them (scripts/kit/hf_check.py hf_losses: the MLM
      loss a mean over the counted slots, NSP a mean over the samples), and
      they must equal `ferry eval --json`'s within relative T.

  hf_reference.py hidden --model DIR --outputs OUT.safetensors --data F
                         --samples N --tolerance T
      transformers.BertModel.from_pretrained(DIR) on the first N samples of F
      (their input_ids, token types and attention mask); its
      last_hidden_state must equal ferry's sequence_output (`ferry eval
      --outputs`) within T, as max |ferry - HF| over the real tokens.

  hf_reference.py train --init STEP_DIR --data F --steps K --batch B --lr LR
                        --weight-decay WD --clip-norm C --ferry-metrics M.jsonl
                        --ferry-final STEP_DIR --tolerance T [--label L]
      BertForPreTraining.from_pretrained(--init) (ferry's step-0 export: the
      weights ferry starts from) trained K updates with torch.optim.AdamW on
      the samples of F in file order (update k takes samples [kB, (k+1)B),
      B = --batch, ferry's global batch, read with data.shuffle=false),
      dropout off, fp32. The loss is BertForPreTraining's own
      (labels -100 outside the masked slots, next_sentence_label), which is
      ferry's definition for 0/1 weights. AdamW's rules, as ferry's
      (ARCHITECTURE.md "Optimizers"): betas (0.9, 0.999), eps 1e-6 added to
      sqrt(v_hat), bias corrections, decoupled weight decay WD on every
      matrix and embedding, none on biases and LayerNorm parameters (the
      usual Hugging Face no_decay groups); the gradient clipped first by
      min(1, C / global norm) over all parameters (tied ones counted once);
      a constant learning rate LR. Every update's loss must equal ferry's
      (--ferry-metrics, JSON lines) and every tensor of ferry's final export
      the reference's, within relative T (|a - b| <= T * max(|b|, 1) per
      element: weights are O(1)).
"""
import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, "scripts", "kit"))
sys.path.insert(0, os.path.join(REPO, "test", "e2e", "Inputs"))

import torch  # noqa: E402
from tfrecord_reader import records  # noqa: E402


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def rel(a, b):
    return abs(a - b) / abs(b) if b != 0 else abs(a - b)


def load_pretraining(step_dir):
    from transformers import BertForPreTraining
    kw = {"attn_implementation": "eager"}
    try:
        model = BertForPreTraining.from_pretrained(step_dir, **kw)
    except TypeError:
        model = BertForPreTraining.from_pretrained(step_dir)
    word = model.bert.embeddings.word_embeddings.weight
    if model.cls.predictions.decoder.weight.data_ptr() != word.data_ptr():
        fail(f"{step_dir}: the decoder is not tied to the word embeddings")
    return model.float()


def samples_of(path, n):
    rows = records(path, n)
    if len(rows) < n:
        fail(f"{path} holds {len(rows)} samples, {n} wanted")
    return rows


def batch_of(rows):
    def t(name, dtype=torch.long):
        return torch.tensor([r[name] for r in rows], dtype=dtype)
    b = {"input_ids": t("input_ids"), "token_type_ids": t("segment_ids"),
         "attention_mask": t("input_mask"),
         "positions": t("masked_lm_positions"), "ids": t("masked_lm_ids"),
         "weights": t("masked_lm_weights", torch.float32),
         "nsp": t("next_sentence_labels").reshape(len(rows))}
    # Hugging Face's labels: the masked slots' ids at their positions.
    labels = torch.full_like(b["input_ids"], -100)
    for i in range(len(rows)):
        for pos, tok, w in zip(b["positions"][i].tolist(), b["ids"][i].tolist(),
                               b["weights"][i].tolist()):
            if w == 0:
                continue
            if w != 1 or labels[i, pos] != -100:
                fail("masked_lm_weights other than 0/1, or a position masked "
                     "twice: Hugging Face's loss would differ from ferry's")
            labels[i, pos] = tok
    b["labels"] = labels
    return b


def losses(args):
    from hf_check import batch_tensors, hf_losses
    model = load_pretraining(args.checkpoint).eval()
    hf = hf_losses(model, batch_tensors(samples_of(args.data, args.samples)),
                   torch.float32)
    with open(args.ferry_json) as f:
        j = json.load(f)
    ferry = {"mlm": j["eval_mlm_loss"], "nsp": j["eval_nsp_loss"]}
    ferry["total"] = ferry["mlm"] + ferry["nsp"]
    worst = 0.0
    for k in ("mlm", "nsp", "total"):
        r = rel(ferry[k], hf[k])
        worst = max(worst, r)
        print(f"{args.label}: {k:5s} ferry {ferry[k]:.8f}  transformers {hf[k]:.8f}  "
              f"relative {r:.2e}")
    if worst > args.tolerance:
        fail(f"{args.label}: losses differ by relative {worst:.2e} > {args.tolerance:g}")
    print(f"{args.label}: losses equal within {args.tolerance:g} (worst {worst:.2e})")


def hidden(args):
    from safetensors.torch import load_file
    from transformers import BertModel
    try:
        model = BertModel.from_pretrained(args.model, attn_implementation="eager")
    except TypeError:
        model = BertModel.from_pretrained(args.model)
    model = model.float().eval()
    b = batch_of(samples_of(args.data, args.samples))
    with torch.no_grad():
        ref = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                    token_type_ids=b["token_type_ids"]).last_hidden_state
    ours = load_file(args.outputs)["sequence_output"]
    if tuple(ours.shape) != tuple(ref.shape):
        fail(f"sequence_output is {tuple(ours.shape)}, transformers' "
             f"last_hidden_state {tuple(ref.shape)}")
    real = b["attention_mask"].bool()
    diff = (ours - ref).abs()
    worst, pad = float(diff[real].max()), float(diff[~real].max()) if (~real).any() else 0.0
    tokens = int(real.sum())
    print(f"hidden states: {tokens} real tokens of {ref.shape[0]} samples x "
          f"{ref.shape[2]}; max |ferry - transformers| {worst:.2e} (padding "
          f"positions {pad:.2e}); max |transformers| {float(ref[real].abs().max()):.2f}")
    if not worst <= args.tolerance:
        fail(f"hidden states differ by {worst:.2e} > {args.tolerance:g}")
    print(f"hidden states equal within {args.tolerance:g}")


def compare_weights(model, final_dir, tolerance, label):
    from safetensors.torch import load_file
    ferry = load_file(os.path.join(final_dir, "model.safetensors"))
    ours = dict(model.state_dict())
    worst, worst_name, compared = 0.0, "", 0
    for name, t in ferry.items():
        if name not in ours:
            fail(f"{label}: ferry's {name} is not a BertForPreTraining tensor")
        ref = ours[name].float()
        if ref.shape != t.shape:
            fail(f"{label}: {name} is {tuple(t.shape)}, transformers' {tuple(ref.shape)}")
        d = float(((t - ref).abs() / ref.abs().clamp(min=1.0)).max())
        compared += 1
        if d > worst:
            worst, worst_name = d, name
    print(f"{label}: {compared} tensors compared; worst {worst_name} relative {worst:.2e}")
    if not worst <= tolerance:
        fail(f"{label}: {worst_name} differs by relative {worst:.2e} > {tolerance:g}")
    return worst


def train(args):
    model = load_pretraining(args.init)
    model.train()  # dropout 0 in config.json (ferry's model.*_dropout 0)
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout) and m.p != 0:
            fail(f"{args.init}/config.json has dropout {m.p}; train ferry with "
                 "model.hidden_dropout=0 and model.attention_dropout=0")
    with open(os.path.join(args.init, "config.json")) as f:
        config = json.load(f)
    batch = args.batch
    decay, no_decay = [], []
    seen = set()
    for name, p in model.named_parameters():  # tied parameters once
        if id(p) in seen:
            continue
        seen.add(id(p))
        (no_decay if name.endswith(".bias") or "LayerNorm" in name else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.999), eps=1e-6)
    params = [p for g in opt.param_groups for p in g["params"]]
    rows = samples_of(args.data, batch * args.steps)
    with open(args.ferry_metrics) as f:
        ferry_steps = [json.loads(line) for line in f if line.strip()]
    ferry_loss = {int(m["step"]): float(m["loss"]) for m in ferry_steps}
    worst_loss = 0.0
    for k in range(args.steps):
        b = batch_of(rows[k * batch:(k + 1) * batch])
        opt.zero_grad(set_to_none=True)
        out = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                    token_type_ids=b["token_type_ids"], labels=b["labels"],
                    next_sentence_label=b["nsp"])
        out.loss.backward()
        norm = math.sqrt(sum(float((p.grad.double() ** 2).sum())
                             for p in params if p.grad is not None))
        if args.clip_norm > 0 and norm > args.clip_norm:
            scale = args.clip_norm / norm
            for p in params:
                if p.grad is not None:
                    p.grad.mul_(scale)
        opt.step()
        loss = float(out.loss)
        if k + 1 not in ferry_loss:
            fail(f"{args.ferry_metrics} has no step {k + 1}")
        r = rel(ferry_loss[k + 1], loss)
        worst_loss = max(worst_loss, r)
        print(f"{args.label} update {k + 1}: loss ferry {ferry_loss[k + 1]:.7f}  "
              f"transformers {loss:.7f}  relative {r:.2e}  (grad norm {norm:.4f})")
    if not worst_loss <= args.tolerance:
        fail(f"{args.label}: losses differ by relative {worst_loss:.2e} > {args.tolerance:g}")
    worst = compare_weights(model, args.ferry_final, args.tolerance, args.label)
    print(f"{args.label}: {args.steps} updates equal within {args.tolerance:g} "
          f"(losses {worst_loss:.2e}, weights {worst:.2e}; vocab {config['vocab_size']})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("losses")
    a.add_argument("--checkpoint", required=True)
    a.add_argument("--data", required=True)
    a.add_argument("--samples", type=int, required=True)
    a.add_argument("--ferry-json", required=True)
    a.add_argument("--tolerance", type=float, required=True)
    a.add_argument("--label", default="losses")
    h = sub.add_parser("hidden")
    h.add_argument("--model", required=True)
    h.add_argument("--outputs", required=True)
    h.add_argument("--data", required=True)
    h.add_argument("--samples", type=int, required=True)
    h.add_argument("--tolerance", type=float, required=True)
    t = sub.add_parser("train")
    t.add_argument("--init", required=True)
    t.add_argument("--data", required=True)
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--lr", type=float, required=True)
    t.add_argument("--weight-decay", type=float, required=True)
    t.add_argument("--clip-norm", type=float, required=True)
    t.add_argument("--ferry-metrics", required=True)
    t.add_argument("--ferry-final", required=True)
    t.add_argument("--tolerance", type=float, required=True)
    t.add_argument("--label", default="training")
    args = p.parse_args()
    {"losses": losses, "hidden": hidden, "train": train}[args.command](args)


if __name__ == "__main__":
    main()
