#!/usr/bin/python3
"""Self-test: chunked Gated DeltaNet == token-by-token recurrence (float64, tiny sizes),
for the raw kernel and for a whole tiny model (trunk + MTP)."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, Qwen35, gated_delta_chunked, gated_delta_recurrent  # noqa: E402


def main():
    torch.manual_seed(0)
    ok = True
    for T, chunk in [(1, 4), (7, 4), (16, 4), (37, 8), (70, 32)]:
        B, H, Dk, Dv = 2, 3, 5, 6
        q = torch.randn(B, H, T, Dk, dtype=torch.float64)
        k = torch.nn.functional.normalize(torch.randn(B, H, T, Dk, dtype=torch.float64), dim=-1)
        v = torch.randn(B, H, T, Dv, dtype=torch.float64)
        g = -torch.rand(B, H, T, dtype=torch.float64) * 2.0
        beta = torch.rand(B, H, T, dtype=torch.float64)
        o1, s1 = gated_delta_recurrent(q, k, v, g, beta)
        o2, s2 = gated_delta_chunked(q, k, v, g, beta, chunk=chunk)
        e = max((o1 - o2).abs().max().item(), (s1 - s2).abs().max().item())
        print(f"kernel T={T} chunk={chunk}: max|diff| = {e:.3e}")
        ok &= e < 1e-10
    cfg = Config(vocab_size=64, hidden_size=32, intermediate_size=48, linear_key_head_dim=8, linear_value_head_dim=8,
                 head_dim=16)
    m = Qwen35(cfg).double()
    with torch.no_grad():  # make the norms non-trivial
        for n, p in m.named_parameters():
            if n.endswith("norm.weight"):
                p.add_(0.1 * torch.randn_like(p))
    ids = torch.randint(0, 64, (2, 50))
    with torch.no_grad():
        h1 = m.trunk(ids, gdn_mode="recurrent")
        h2 = m.trunk(ids, gdn_mode="chunked")
        e = (h1 - h2).abs().max().item()
        print(f"model trunk recurrent vs chunked: max|diff| = {e:.3e}")
        ok &= e < 1e-10
        l1 = m.forward_train(ids, gdn_mode="recurrent")
        l2 = m.forward_train(ids, gdn_mode="chunked")
        e = max(abs(a.item() - b.item()) for a, b in zip(l1, l2))
        print(f"losses recurrent {l1[0].item():.6f},{l1[1].item():.6f} chunked diff {e:.3e}")
        ok &= e < 1e-10
        # KV-cache incremental MTP == one-shot MTP
        pos = torch.arange(49)
        full = m.mtp_forward(h1[:, :-1], ids[:, 1:], pos)
        cache = {}
        a = m.mtp_forward(h1[:, :30], ids[:, 1:31], pos[:30], kv_cache=cache)
        b = m.mtp_forward(h1[:, 30:49], ids[:, 31:50], pos[30:], kv_cache=cache)
        e = (torch.cat([a, b], 1) - full).abs().max().item()
        print(f"MTP incremental vs one-shot: max|diff| = {e:.3e}")
        ok &= e < 1e-10
    print("SELFTEST", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
