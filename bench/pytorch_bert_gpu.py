#!/usr/bin/env python3
"""The PyTorch side of bench/gpu_throughput.sh: the same BERT pretraining
step ferry runs (transformers BertForPreTraining: MLM at the masked
positions through the tied decoder, NSP), bf16 autocast, fused AdamW,
eager or torch.compile, on one GPU. Prints one JSON line:
{"model", "seq", "batch", "mode", "samples_per_s", "step_ms"}.

  pytorch_bert_gpu.py --model base|large --seq 128|512 --batch B \
      [--steps 20] [--warmup 5] [--compile]
"""
import argparse
import json
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["base", "large"], required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--compile", action="store_true")
    a = p.parse_args()
    try:
        import torch
        from transformers import BertConfig, BertForPreTraining
    except ImportError as e:
        print(f"pytorch_bert_gpu.py: cannot import torch/transformers ({e}); "
              "run it with the python3 that has them", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("pytorch_bert_gpu.py: no CUDA device", file=sys.stderr)
        return 2
    layers, hidden, heads = (12, 768, 12) if a.model == "base" else (24, 1024, 16)
    cfg = BertConfig(vocab_size=30528, hidden_size=hidden,
                     num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=4 * hidden, max_position_embeddings=512,
                     hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    dev = torch.device("cuda")
    model = BertForPreTraining(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01,
                            fused=True)
    step_fn = model
    if a.compile:
        step_fn = torch.compile(model)
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

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = step_fn(input_ids=ids, token_type_ids=types,
                          attention_mask=mask, labels=labels,
                          next_sentence_label=nsp)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / a.steps
    print(json.dumps({"model": a.model, "seq": a.seq, "batch": a.batch,
                      "mode": "torch.compile" if a.compile else "eager",
                      "samples_per_s": a.batch / seconds,
                      "step_ms": seconds * 1e3}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
