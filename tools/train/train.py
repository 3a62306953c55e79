#!/usr/bin/python3
"""Train the tiny Qwen3.5 + MTP model on CPU.

Reproducible: batch k is drawn from numpy default_rng(seed * 1_000_003 + k) (random windows of the packed
token stream), so a resumed run sees exactly the batches it would have seen. Checkpoints (model, optimizer,
torch RNG, step, elapsed) are written every --ckpt-minutes to <run>/ckpt_latest.pt; --resume continues from it.

  /usr/bin/python3 tools/train/train.py --run tools/train/runs/main --steps 1400
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fastblas  # noqa: E402,F401  (re-exec with OpenBLAS if available)
from model import Config, Qwen35  # noqa: E402


def get_batch(data, step, seed, batch, seqlen):
    rng = np.random.default_rng(seed * 1_000_003 + step)
    starts = rng.integers(0, len(data) - seqlen - 1, size=batch)
    x = np.stack([data[s:s + seqlen + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(x)


def lr_at(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    p = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * min(1.0, p)))


@torch.no_grad()
def evaluate(model, data, seqlen, n_windows=24, batch=8):
    """Mean LM / MTP loss over fixed, non-overlapping windows of the held-out stream."""
    model.eval()
    stride = seqlen + 1
    n = min(n_windows, (len(data) - 1) // stride)
    lm, mt = [], []
    for i in range(0, n, batch):
        xs = [data[j * stride:j * stride + seqlen + 1] for j in range(i, min(n, i + batch))]
        x = torch.from_numpy(np.stack(xs).astype(np.int64))
        a, b = model.forward_train(x)
        lm.append(a.item() * len(xs))
        mt.append(b.item() * len(xs))
    model.train()
    return sum(lm) / n, sum(mt) / n


def save_ckpt(path, model, opt, step, elapsed, args, cfg):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "elapsed": elapsed,
                "torch_rng": torch.get_rng_state(), "args": vars(args), "config": cfg.to_dict()}, tmp)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", default=os.path.join(HERE, "runs", "main"))
    ap.add_argument("--data", default=os.path.join(HERE, "runs", "data"))
    ap.add_argument("--steps", type=int, default=900)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--wd", type=float, default=0.05)
    ap.add_argument("--mtp-lambda", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ckpt-minutes", type=float, default=5.0)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=192)
    ap.add_argument("--intermediate", type=int, default=576)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--gdn-head-dim", type=int, default=64)
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)
    os.makedirs(args.run, exist_ok=True)
    train = np.load(os.path.join(args.data, "train.npy"))
    held = np.load(os.path.join(args.data, "heldout.npy"))
    with open(os.path.join(HERE, "runs", "tok", "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    vocab = len(tj["model"]["vocab"]) + len(tj["added_tokens"])
    cfg = Config(vocab_size=vocab, hidden_size=args.hidden, intermediate_size=args.intermediate, head_dim=args.head_dim,
                 linear_key_head_dim=args.gdn_head_dim, linear_value_head_dim=args.gdn_head_dim)

    torch.manual_seed(args.seed)
    model = Qwen35(cfg)
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if (p.dim() < 2 or "norm" in n or n.endswith("A_log") or n.endswith("dt_bias")) else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    step, elapsed0 = 0, 0.0
    ckpt_path = os.path.join(args.run, "ckpt_latest.pt")
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        torch.set_rng_state(ck["torch_rng"])
        step, elapsed0 = ck["step"], ck["elapsed"]
        print(f"resumed from {ckpt_path} at step {step} (elapsed {elapsed0:.0f}s)", flush=True)
    nparams = sum(p.numel() for p in model.parameters())
    print(f"config {json.dumps(cfg.to_dict())}", flush=True)
    print(f"params {nparams} ({nparams / 1e6:.2f}M); train tokens {len(train)}, heldout tokens {len(held)}; "
          f"args {json.dumps(vars(args))}", flush=True)

    t_start = time.time()
    last_ckpt = t_start
    tok_count = 0
    t_log = time.time()
    model.train()
    while step < args.steps:
        lr = lr_at(step, args)
        for gr in opt.param_groups:
            gr["lr"] = lr
        x = get_batch(train, step, args.seed, args.batch, args.seqlen)
        lm_loss, mtp_loss = model.forward_train(x)
        loss = lm_loss + args.mtp_lambda * mtp_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tok_count += args.batch * args.seqlen
        now = time.time()
        if step % args.log_every == 0 or step == args.steps:
            tps = tok_count / (now - t_log)
            print(f"step {step}/{args.steps} loss {lm_loss.item():.4f} mtp {mtp_loss.item():.4f} "
                  f"lr {lr:.2e} gnorm {gn.item():.2f} tok/s {tps:.0f} elapsed {elapsed0 + now - t_start:.0f}s "
                  f"tokens_seen {step * args.batch * args.seqlen}", flush=True)
            tok_count, t_log = 0, now
        if step % args.eval_every == 0 or step == args.steps:
            hl, hm = evaluate(model, held, args.seqlen)
            print(f"eval step {step} heldout loss {hl:.4f} ppl {math.exp(hl):.2f} mtp loss {hm:.4f}", flush=True)
        if now - last_ckpt > args.ckpt_minutes * 60 or step == args.steps:
            save_ckpt(ckpt_path, model, opt, step, elapsed0 + time.time() - t_start, args, cfg)
            last_ckpt = time.time()
            print(f"checkpoint step {step} -> {ckpt_path}", flush=True)
    torch.save({"model": model.state_dict(), "config": cfg.to_dict(), "step": step,
                "elapsed": elapsed0 + time.time() - t_start, "args": vars(args)},
               os.path.join(args.run, "final.pt"))
    print(f"done step {step} elapsed {elapsed0 + time.time() - t_start:.0f}s", flush=True)


if __name__ == "__main__":
    main()
