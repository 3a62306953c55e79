"""Inference helpers shared by refs.py and measure.py (full-sequence recompute; no incremental trunk cache)."""
import torch


@torch.no_grad()
def trunk(model, ids, gdn_mode="chunked"):
    """ids [B,T] -> (logits [B,T,V], h_final [B,T,H])."""
    h = model.trunk(ids, gdn_mode=gdn_mode)
    return model.lm_head(h), h


@torch.no_grad()
def greedy(model, ids, n, gdn_mode="chunked"):
    """Plain greedy continuation of a batch of equal-length prompts; no stop tokens.
    Returns (tokens [B,n], step logits [B,n,V])."""
    cur = ids
    toks, logs = [], []
    for _ in range(n):
        lg, _ = trunk(model, cur, gdn_mode)
        last = lg[:, -1]
        t = last.argmax(-1)
        toks.append(t)
        logs.append(last)
        cur = torch.cat([cur, t[:, None]], dim=1)
    return torch.stack(toks, 1), torch.stack(logs, 1)


@torch.no_grad()
def mtp_first_pass(model, h, next_tokens):
    """vLLM pairing: row p = MTP(h[p], next_tokens[p]) at RoPE position p, causal over rows, fresh cache.
    h [B,T,H], next_tokens [B,T]. Returns (mtp_logits [B,T,V], mtp_hidden [B,T,H], kv cache dict)."""
    T = h.shape[1]
    cache = {}
    ho = model.mtp_forward(h, next_tokens, torch.arange(T), kv_cache=cache)
    return model.lm_head(ho), ho, cache


@torch.no_grad()
def mtp_chain(model, cache, p, h_out_p, d1, steps):
    """Chained drafting after first-pass row p: the MTP cache holds rows 0..p; step k (k=2..steps+1) feeds
    (previous draft token, previous MTP output hidden after mtp.norm) at position p+k-1.
    h_out_p [B,H], d1 [B]. Returns (drafts [B,steps], logits [B,steps,V], hidden [B,steps,H])."""
    c = {"k": cache["k"][:, :, :p + 1], "v": cache["v"][:, :, :p + 1]}
    h, d = h_out_p[:, None], d1[:, None]
    ds, ls, hs = [], [], []
    for k in range(steps):
        h = model.mtp_forward(h, d, torch.tensor([p + 1 + k]), kv_cache=c)
        lg = model.lm_head(h)
        d = lg.argmax(-1)
        ds.append(d[:, 0])
        ls.append(lg[:, 0])
        hs.append(h[:, 0])
    return torch.stack(ds, 1), torch.stack(ls, 1), torch.stack(hs, 1)
