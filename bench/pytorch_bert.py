#!/usr/bin/python3
"""PyTorch half of the CPU benchmark: ferry's BERT pretraining step in eager fp32.

The model is the post-LN encoder of Hugging Face BertForPreTraining with the
numerics ferry uses (docs/architecture.md): word + position + token-type
embeddings, LayerNorm(eps 1e-12), dropout; per layer self-attention with the
additive mask (1 - input_mask) * -10000, exact-erf GELU FFN, residual +
LayerNorm; MLM at the masked positions only (dense, GELU, LayerNorm, decoder
tied to the word embedding plus its own bias; loss = weighted sum of the
cross-entropy / total weight) and NSP (tanh pooler of token 0, mean
cross-entropy). AdamW (weight decay never on biases and LayerNorm, as in
ferry) after clip_grad_norm_(1.0).

Data are generated once up front (a small pool of batches cycled in order),
so only the training step is timed: zero_grad, forward, backward, clip, step.
Prints one line of JSON.

Example:
  python3 bench/pytorch_bert.py --layers 4 --hidden 256 --heads 4 --ffn 1024 \
      --vocab 30522 --seq 128 --predictions 20 --batch 32 --warmup 3 \
      --steps 10 --threads 2 --dropout 0.1
"""

import argparse
import json
import math
import os
import re
import statistics
import sys
import time

DEBIAN_PYTHON = "/usr/bin/python3"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--max-positions", type=int, default=512)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--predictions", type=int, default=20)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1,
                   help="hidden dropout")
    p.add_argument("--attention-dropout", type=float, default=None,
                   help="attention-probability dropout (default: --dropout)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--pool", type=int, default=4,
                   help="distinct batches generated up front and cycled")
    p.add_argument("--seed", type=int, default=42)
    a = p.parse_args()
    if a.attention_dropout is None:
        a.attention_dropout = a.dropout
    if a.hidden % a.heads:
        p.error(f"--heads {a.heads} does not divide --hidden {a.hidden}")
    if a.seq > a.max_positions:
        p.error(f"--seq {a.seq} exceeds --max-positions {a.max_positions}")
    if a.vocab <= 1000:
        p.error(f"--vocab {a.vocab} must exceed 1000 (ordinary ids are "
                "[1000, vocab))")
    if a.seq < 8:
        p.error(f"--seq {a.seq} must be at least 8")
    for name in ("batch", "steps", "threads", "pool", "predictions"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1, got {getattr(a, name)}")
    if a.warmup < 0:
        p.error(f"--warmup must be non-negative, got {a.warmup}")
    return a


args = parse_args()

# OpenBLAS (pthread build) and OpenMP size their pools when loaded, and
# torch.set_num_threads does not reach a generic BLAS: pin both to --threads
# before torch is imported, unless the caller already chose.
os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))

try:
    import torch
except ImportError:
    # Debian's python3-torch lives in the system interpreter; a pyenv or venv
    # python3 earlier on PATH cannot see it.
    if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) \
            and os.path.exists(DEBIAN_PYTHON):
        print(f"pytorch_bert.py: torch not importable from {sys.executable}; "
              f"re-running under {DEBIAN_PYTHON}", file=sys.stderr)
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
    raise
import torch.nn as nn
import torch.nn.functional as F

LN_EPS = 1e-12
CLS, SEP, MASK, FIRST_ORDINARY = 101, 102, 103, 1000


class EncoderLayer(nn.Module):
    def __init__(self, hidden, heads, ffn, p_hidden, p_attn):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_ln = nn.LayerNorm(hidden, eps=LN_EPS)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.ffn_out = nn.Linear(ffn, hidden)
        self.ffn_ln = nn.LayerNorm(hidden, eps=LN_EPS)
        self.p_hidden, self.p_attn = p_hidden, p_attn

    def split(self, t, b, s):  # [B, S, H] -> [B, heads, S, d]
        return t.view(b, s, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, additive_mask):
        b, s, h = x.shape
        q = self.split(self.query(x), b, s)
        k = self.split(self.key(x), b, s)
        v = self.split(self.value(x), b, s)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores + additive_mask, dim=-1)
        probs = F.dropout(probs, self.p_attn, self.training)
        context = (probs @ v).transpose(1, 2).reshape(b, s, h)
        attn = F.dropout(self.attn_out(context), self.p_hidden, self.training)
        x = self.attn_ln(x + attn)
        f = self.ffn_out(F.gelu(self.ffn_in(x)))
        f = F.dropout(f, self.p_hidden, self.training)
        return self.ffn_ln(x + f)


class BertPretraining(nn.Module):
    def __init__(self, a):
        super().__init__()
        h = a.hidden
        self.word = nn.Embedding(a.vocab, h)
        self.position = nn.Embedding(a.max_positions, h)
        self.token_type = nn.Embedding(2, h)
        self.emb_ln = nn.LayerNorm(h, eps=LN_EPS)
        self.p_hidden = a.dropout
        self.layers = nn.ModuleList(
            EncoderLayer(h, a.heads, a.ffn, a.dropout, a.attention_dropout)
            for _ in range(a.layers))
        self.mlm_dense = nn.Linear(h, h)
        self.mlm_ln = nn.LayerNorm(h, eps=LN_EPS)
        self.mlm_bias = nn.Parameter(torch.zeros(a.vocab))
        self.pooler = nn.Linear(h, h)
        self.nsp = nn.Linear(h, 2)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)
            if isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, ids, segments, input_mask, positions, masked_ids,
                weights, nsp_labels):
        b, s = ids.shape
        x = (self.word(ids) + self.position(torch.arange(s))[None]
             + self.token_type(segments))
        x = F.dropout(self.emb_ln(x), self.p_hidden, self.training)
        additive = ((1.0 - input_mask.float()) * -10000.0)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, additive)

        # MLM at the masked positions only, decoder tied to the word table.
        p = positions.shape[1]
        gathered = x.gather(1, positions[:, :, None].expand(b, p, x.shape[2]))
        t = self.mlm_ln(F.gelu(self.mlm_dense(gathered)))
        logits = t @ self.word.weight.t() + self.mlm_bias
        ce = F.cross_entropy(logits.reshape(b * p, -1), masked_ids.reshape(-1),
                             reduction="none")
        w = weights.reshape(-1)
        mlm = (ce * w).sum() / w.sum()

        pooled = torch.tanh(self.pooler(x[:, 0]))
        nsp = F.cross_entropy(self.nsp(pooled), nsp_labels)
        return mlm + nsp, mlm, nsp


def make_batch(a, g):
    """One batch like ferry's synthetic data: [CLS] tokens [SEP] tokens [SEP],
    real lengths in [S/2, S], ~15% of positions masked (<= predictions)."""
    b, s, pr = a.batch, a.seq, a.predictions
    ids = torch.zeros(b, s, dtype=torch.long)
    segments = torch.zeros(b, s, dtype=torch.long)
    mask = torch.zeros(b, s, dtype=torch.long)
    positions = torch.zeros(b, pr, dtype=torch.long)
    masked_ids = torch.zeros(b, pr, dtype=torch.long)
    weights = torch.zeros(b, pr, dtype=torch.float32)
    for r in range(b):
        length = int(torch.randint(s // 2, s + 1, (1,), generator=g))
        split = int(torch.randint(1, length - 1, (1,), generator=g))
        row = torch.randint(FIRST_ORDINARY, a.vocab, (length,), generator=g)
        row[0], row[split], row[length - 1] = CLS, SEP, SEP
        ids[r, :length] = row
        segments[r, split + 1:length] = 1
        mask[r, :length] = 1
        candidates = torch.tensor([i for i in range(1, length - 1)
                                   if i != split], dtype=torch.long)
        k = min(pr, max(1, (15 * length + 50) // 100), len(candidates))
        chosen = candidates[torch.randperm(len(candidates), generator=g)[:k]]
        chosen, _ = torch.sort(chosen)
        positions[r, :k] = chosen
        masked_ids[r, :k] = ids[r, chosen]
        weights[r, :k] = 1.0
        ids[r, chosen] = MASK
    nsp = torch.randint(0, 2, (b,), generator=g)
    return ids, segments, mask, positions, masked_ids, weights, nsp


def blas_description():
    """torch's BLAS_INFO plus the BLAS library actually mapped (Debian's
    generic libblas.so.3 is an alternatives link)."""
    found = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
    info = "BLAS_INFO=" + (found.group(1) if found else "unknown")
    mapped = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                name = os.path.basename(path)
                if "blas" in name or "mkl" in name:
                    mapped.add(path)
    except OSError:
        pass
    if mapped:
        info += " -> " + ", ".join(sorted(mapped))
    return info


def main():
    a = args
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(a.seed + 1)
    pool = [make_batch(a, g) for _ in range(a.pool)]

    model = BertPretraining(a)
    model.train()
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        exempt = name.endswith("bias") or "_ln." in name  # biases, LayerNorm
        (no_decay if exempt else decay).append(param)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=a.lr, betas=(0.9, 0.999), eps=1e-6)

    def step(i):
        batch = pool[i % len(pool)]
        opt.zero_grad(set_to_none=True)
        loss, mlm, nsp = model(*batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    for i in range(a.warmup):
        step(i)
    times, losses = [], []
    for i in range(a.warmup, a.warmup + a.steps):
        start = time.perf_counter()
        loss = step(i)
        times.append(time.perf_counter() - start)
        losses.append(float(loss))
    median = statistics.median(times)
    print(json.dumps({
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "blas": blas_description(),
        "threads": torch.get_num_threads(),
        "samples_per_s_median": a.batch / median,
        "step_times_s": [round(t, 6) for t in times],
        "final_loss": losses[-1],
    }))


if __name__ == "__main__":
    main()
