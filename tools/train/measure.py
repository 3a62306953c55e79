#!/usr/bin/python3
"""Measure the exported model (BF16 weights, computed in f32):
  * held-out perplexity per token (non-overlapping 256-token windows of the held-out stream) and MTP loss;
  * MTP acceptance on greedy continuations of held-out prompts:
      depth 1: fraction of positions p where argmax MTP(h_p, x_{p+1}) == trunk greedy token x_{p+2};
      depth 2/3 (chained: previous draft token + previous MTP output hidden after mtp.norm, position +1):
        conditional rate (draft k correct given drafts 1..k-1 correct) and cumulative rate (drafts 1..k all correct);
      expected accepted drafts per verify step for k = 1..3 drafts;
  * MTP top-1 accuracy on the real held-out text (teacher forced, predicting x_{p+2});
  * sample greedy continuations.
Writes a JSON summary (default tools/train/runs/measure.json) and prints it.
"""
import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fastblas  # noqa: E402,F401
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import infer  # noqa: E402
from export import load_exported  # noqa: E402
from tok import Tokenizer  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))


@torch.no_grad()
def heldout_ppl(m, held, seqlen, batch=8):
    stride = seqlen + 1
    n = (len(held) - 1) // stride
    tot_lm = tot_mtp = 0.0
    n_lm = n_mtp = 0
    mtp_correct = 0
    for i in range(0, n, batch):
        x = torch.from_numpy(np.stack([held[j * stride:j * stride + stride] for j in range(i, min(n, i + batch))])
                             .astype(np.int64))
        inp, y = x[:, :-1], x[:, 1:]
        h = m.trunk(inp)
        lg = m.lm_head(h)
        tot_lm += F.cross_entropy(lg.reshape(-1, lg.shape[-1]), y.reshape(-1), reduction="sum").item()
        n_lm += y.numel()
        T = inp.shape[1]
        hm = m.mtp_forward(h[:, :-1], inp[:, 1:], torch.arange(T - 1))
        ml = m.lm_head(hm)
        tgt = y[:, 1:]
        tot_mtp += F.cross_entropy(ml.reshape(-1, ml.shape[-1]), tgt.reshape(-1), reduction="sum").item()
        n_mtp += tgt.numel()
        mtp_correct += (ml.argmax(-1) == tgt).sum().item()
    return tot_lm / n_lm, tot_mtp / n_mtp, mtp_correct / n_mtp, n_lm


@torch.no_grad()
def acceptance(m, prompts, n_gen):
    """prompts: LongTensor [B,T]."""
    B, T = prompts.shape
    gen, _ = infer.greedy(m, prompts, n_gen)
    seq = torch.cat([prompts, gen], 1)                      # x_0 .. x_{T+n_gen-1}
    L = seq.shape[1]
    _, h = infer.trunk(m, seq)
    # first pass over all rows p = 0..L-2 (token x_{p+1})
    ml, mh, cache = infer.mtp_first_pass(m, h[:, :-1], seq[:, 1:])
    d1_all = ml.argmax(-1)                                  # [B, L-1]; row p predicts x_{p+2}
    ok = [[], [], []]
    for p in range(T - 1, L - 4):                           # x_{p+2..p+4} are all greedy tokens
        d1 = d1_all[:, p]
        ds, _, _ = infer.mtp_chain(m, cache, p, mh[:, p], d1, 2)
        drafts = [d1, ds[:, 0], ds[:, 1]]
        for k in range(3):
            ok[k].append((drafts[k] == seq[:, p + 2 + k]))
    ok = [torch.stack(o, 1).float() for o in ok]            # [B, P]
    cum1 = ok[0]
    cum2 = ok[0] * ok[1]
    cum3 = cum2 * ok[2]
    res = {
        "positions": int(cum1.numel()),
        "depth1": cum1.mean().item(),
        "depth2_conditional": (cum2.sum() / cum1.sum().clamp(min=1)).item(),
        "depth3_conditional": (cum3.sum() / cum2.sum().clamp(min=1)).item(),
        "depth2_cumulative": cum2.mean().item(),
        "depth3_cumulative": cum3.mean().item(),
        "expected_accepted_drafts": {"k1": cum1.mean().item(), "k2": (cum1 + cum2).mean().item(),
                                     "k3": (cum1 + cum2 + cum3).mean().item()},
        # teacher-forced depth-1 over the whole first pass incl. the prompt region, vs the sequence tokens
    }
    return res, gen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(REPO, "models", "nextn-tiny"))
    ap.add_argument("--data", default=os.path.join(HERE, "runs", "data"))
    ap.add_argument("--out", default=os.path.join(HERE, "runs", "measure.json"))
    ap.add_argument("--seqlen", type=int, default=256)
    ap.add_argument("--n-prompts", type=int, default=24)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--n-gen", type=int, default=48)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    m, cfg = load_exported(args.model, torch.float32)
    held = np.load(os.path.join(args.data, "heldout.npy"))
    with open(os.path.join(args.data, "heldout_files.json")) as f:
        hfiles = json.load(f)
    tk = Tokenizer(os.path.join(args.model, "tokenizer.json"))
    lm, mtp, mtp_acc, ntok = heldout_ppl(m, held, args.seqlen)
    summary = {"heldout_tokens_scored": ntok, "heldout_loss": lm, "heldout_ppl": math.exp(lm),
               "heldout_mtp_loss": mtp, "heldout_mtp_ppl": math.exp(mtp),
               "heldout_mtp_top1_vs_text": mtp_acc}
    print(json.dumps(summary, indent=1), flush=True)
    # prompts: deterministic windows spread over the held-out stream, not crossing an <|endoftext|>
    eot = tk.special["<|endoftext|>"]
    rng = np.random.default_rng(7)
    prompts = []
    tries = 0
    while len(prompts) < args.n_prompts and tries < 10000:
        tries += 1
        s = int(rng.integers(0, len(held) - args.prompt_len - 1))
        w = held[s:s + args.prompt_len]
        if (w == eot).any():
            continue
        prompts.append(w.astype(np.int64))
    P = torch.from_numpy(np.stack(prompts))
    acc, gen = acceptance(m, P, args.n_gen)
    summary["acceptance"] = acc
    summary["acceptance_setup"] = (f"{len(prompts)} held-out prompts of {args.prompt_len} tokens, {args.n_gen} greedy "
                                   f"tokens each; positions whose next 3 tokens are greedy tokens")
    samples = []
    for i in range(3):
        samples.append({"prompt": tk.decode(P[i].tolist()), "continuation": tk.decode(gen[i].tolist())})
    summary["samples"] = samples
    print(json.dumps({k: v for k, v in summary.items() if k != "samples"}, indent=1))
    for s in samples:
        print("=" * 30 + " PROMPT\n" + s["prompt"] + "\n" + "-" * 30 + " GREEDY\n" + s["continuation"])
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
