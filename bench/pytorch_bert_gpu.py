#!/usr/bin/env python3
"""The PyTorch side of bench/gpu_throughput.sh and the GPU kit's anchor: the
same BERT pretraining update ferry runs (transformers BertForPreTraining: MLM
at the masked positions through the tied decoder, NSP), bf16 autocast, on one
GPU, eager or torch.compile. Prints one JSON line:
{"model", "seq", "batch", "accumulate", "optimizer", "mode",
 "samples_per_s", "step_ms"}.

  pytorch_bert_gpu.py --model base|large|tiny --seq 128|512 --batch B \
      [--accumulate N] [--optimizer adamw|lamb] [--steps 20] [--warmup 5] \
      [--compile] [--device cuda|cpu]

An update is `accumulate` micro-batches of `batch` samples (ferry's global
batch as micro-batches), gradients clipped to norm 1, then the optimizer:
fused AdamW, or LAMB (MLPerf's BERT optimizer, which ferry's bert-large
config uses) written here with torch's foreach ops, since PyTorch has no
LAMB of its own. --model tiny and --device cpu are a smoke test of the
script itself, not a benchmark.
"""
import argparse
import json
import sys
import time


def lamb_step(torch, params, grads, m, v, step, lr=4e-4, beta1=0.9,
              beta2=0.999, eps=1e-6, weight_decay=0.01):
    """One LAMB update (You et al. 2019, MLPerf's form): Adam's moments with
    bias correction, decoupled weight decay, and each tensor's step scaled
    by ||w|| / ||update|| (1 where either norm is 0)."""
    torch._foreach_mul_(m, beta1)
    torch._foreach_add_(m, grads, alpha=1 - beta1)
    torch._foreach_mul_(v, beta2)
    torch._foreach_addcmul_(v, grads, grads, value=1 - beta2)
    c1, c2 = 1 - beta1 ** step, 1 - beta2 ** step
    m_hat = torch._foreach_div(m, c1)
    v_hat = torch._foreach_div(v, c2)
    torch._foreach_sqrt_(v_hat)
    torch._foreach_add_(v_hat, eps)
    update = torch._foreach_div(m_hat, v_hat)
    torch._foreach_add_(update, params, alpha=weight_decay)
    w_norm = torch._foreach_norm(params)
    u_norm = torch._foreach_norm(update)
    for p, u, wn, un in zip(params, update, w_norm, u_norm):
        ratio = torch.where((wn > 0) & (un > 0), wn / un, torch.ones_like(wn))
        p.add_(u * (-lr * ratio))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["base", "large", "tiny"], required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--accumulate", type=int, default=1)
    p.add_argument("--optimizer", choices=["adamw", "lamb"], default="adamw")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    a = p.parse_args()
    try:
        import torch
        from transformers import BertConfig, BertForPreTraining
    except ImportError as e:
        print(f"pytorch_bert_gpu.py: cannot import torch/transformers ({e}); "
              "run it with the python3 that has them", file=sys.stderr)
        return 2
    if a.device == "cuda" and not torch.cuda.is_available():
        print("pytorch_bert_gpu.py: no CUDA device", file=sys.stderr)
        return 2
    layers, hidden, heads = {"base": (12, 768, 12), "large": (24, 1024, 16),
                             "tiny": (2, 128, 2)}[a.model]
    cfg = BertConfig(vocab_size=30528, hidden_size=hidden,
                     num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=4 * hidden, max_position_embeddings=512,
                     hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    dev = torch.device(a.device)
    model = BertForPreTraining(cfg).to(dev)
    params = [q for q in model.parameters() if q.requires_grad]
    if a.optimizer == "adamw":
        fused = {"fused": True} if a.device == "cuda" else {}
        opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, **fused)
    else:
        moments = ([torch.zeros_like(q) for q in params],
                   [torch.zeros_like(q) for q in params])
    step_fn = torch.compile(model) if a.compile else model
    g = torch.Generator(device="cpu").manual_seed(0)
    preds = max(1, int(0.15 * a.seq + 0.5)) if a.seq > 128 else 20
    ids = torch.randint(0, 30522, (a.batch, a.seq), generator=g).to(dev)
    types = torch.zeros_like(ids)
    mask = torch.ones_like(ids)
    labels = torch.full_like(ids, -100)
    pos = torch.stack([torch.randperm(a.seq, generator=g)[:preds]
                       for _ in range(a.batch)]).to(dev)
    labels.scatter_(1, pos, torch.randint(0, 30522, pos.shape, generator=g).to(dev))
    nsp = torch.randint(0, 2, (a.batch,), generator=g).to(dev)
    updates = [0]

    def update():
        for _ in range(a.accumulate):
            # bf16 autocast on the GPU; the CPU smoke test runs fp32.
            with torch.autocast(a.device, dtype=torch.bfloat16,
                                enabled=a.device == "cuda"):
                out = step_fn(input_ids=ids, token_type_ids=types,
                              attention_mask=mask, labels=labels,
                              next_sentence_label=nsp)
            (out.loss / a.accumulate).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        updates[0] += 1
        if a.optimizer == "adamw":
            opt.step()
        else:
            with torch.no_grad():
                lamb_step(torch, params, [q.grad for q in params], *moments,
                          updates[0])
        for q in params:
            q.grad = None

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    for _ in range(a.warmup):
        update()
    sync()
    start = time.perf_counter()
    for _ in range(a.steps):
        update()
    sync()
    seconds = (time.perf_counter() - start) / a.steps
    samples = a.batch * a.accumulate
    print(json.dumps({"model": a.model, "seq": a.seq, "batch": a.batch,
                      "accumulate": a.accumulate, "optimizer": a.optimizer,
                      "mode": "torch.compile" if a.compile else "eager",
                      "samples_per_s": samples / seconds,
                      "step_ms": seconds * 1e3}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
