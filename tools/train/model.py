"""Qwen3.5 dense text model + one MTP layer, written from /work/shared/docs/qwen35-architecture.md.

Module names mirror the Hugging Face checkpoint names (see export.py for the prefix mapping):
  embed_tokens, layers.{i}.{input_layernorm, post_attention_layernorm, linear_attn.*, self_attn.*, mlp.*}, norm,
  mtp.{fc, pre_fc_norm_embedding, pre_fc_norm_hidden, layers.0.*, norm}
The LM head is tied to embed_tokens.

The Gated DeltaNet has two implementations of the same recurrence:
  * gated_delta_recurrent: token by token, exactly the spec order (decay, mem, delta, update, read-out);
  * gated_delta_chunked:   chunk-parallel (WY / UT form) used for training.
selftest.py checks they agree.
"""
import math
from dataclasses import dataclass, field, asdict
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab_size: int = 4096
    hidden_size: int = 256
    intermediate_size: int = 768
    num_hidden_layers: int = 8
    layer_types: List[str] = field(default_factory=lambda: (["linear_attention"] * 3 + ["full_attention"]) * 2)
    full_attention_interval: int = 4
    linear_num_key_heads: int = 2
    linear_num_value_heads: int = 4
    linear_key_head_dim: int = 64
    linear_value_head_dim: int = 64
    linear_conv_kernel_dim: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 128
    rope_theta: float = 1e7
    partial_rotary_factor: float = 0.25
    rms_norm_eps: float = 1e-6
    mtp_num_hidden_layers: int = 1
    initializer_range: float = 0.02

    def to_dict(self):
        return asdict(self)


# ----------------------------------------------------------------------------------------------- norms
class RMSNorm1p(nn.Module):
    """y = x * rsqrt(mean(x^2) + eps) * (1 + w); w is zero-centred (initialised to 0)."""

    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        xf = x.float() if x.dtype not in (torch.float32, torch.float64) else x
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * (1.0 + self.weight.to(y.dtype))).to(x.dtype)


class RMSNormGated(nn.Module):
    """Per-head gated norm of the GDN: y = (rms(x) * w) * silu(z); plain weight (initialised to 1)."""

    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x, z):
        n = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        n = n * self.weight.to(n.dtype)
        return n * F.silu(z)


def l2norm(x, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps)


# ----------------------------------------------------------------------------------------------- gated delta rule
def gated_delta_recurrent(q, k, v, g, beta, state=None):
    """q,k: [B,H,T,Dk] (q already scaled), v: [B,H,T,Dv], g (log decay), beta: [B,H,T].
    Returns o [B,H,T,Dv], final state [B,H,Dk,Dv]."""
    B, H, T, Dk = k.shape
    Dv = v.shape[-1]
    S = torch.zeros(B, H, Dk, Dv, dtype=q.dtype, device=q.device) if state is None else state
    outs = []
    for t in range(T):
        S = S * torch.exp(g[:, :, t])[..., None, None]                          # 1. decay
        mem = torch.einsum("bhdv,bhd->bhv", S, k[:, :, t])                       # 2. mem = S^T k
        delta = (v[:, :, t] - mem) * beta[:, :, t, None]                         # 3.
        S = S + k[:, :, t, :, None] * delta[:, :, None, :]                       # 4. S += k delta^T
        outs.append(torch.einsum("bhdv,bhd->bhv", S, q[:, :, t]))                # 5. read-out (updated S)
    return torch.stack(outs, dim=2), S


def gated_delta_chunked(q, k, v, g, beta, chunk=64, state=None):
    """Chunk-parallel form of the same recurrence.
    Within a chunk with start state S0 and cumulative log decay G_t = sum_{i<=t} g_i:
      u_i = beta_i (v_i - e^{G_i} S0^T k_i - sum_{j<i} e^{G_i-G_j} (k_i.k_j) u_j)
      => (I + A) U = beta*V - (beta e^{G} K) S0, A_ij = beta_i e^{G_i-G_j} k_i.k_j (j<i)
      o_t = e^{G_t} S0^T q_t + sum_{i<=t} e^{G_t-G_i} (q_t.k_i) u_i
      S_end = e^{G_C} S0 + sum_i e^{G_C-G_i} k_i u_i^T
    """
    B, H, T, Dk = k.shape
    Dv = v.shape[-1]
    pad = (-T) % chunk
    if pad:
        q = F.pad(q, (0, 0, 0, pad))
        k = F.pad(k, (0, 0, 0, pad))
        v = F.pad(v, (0, 0, 0, pad))
        g = F.pad(g, (0, pad))
        beta = F.pad(beta, (0, pad))
    N = (T + pad) // chunk
    C = chunk
    q = q.reshape(B, H, N, C, Dk)
    k = k.reshape(B, H, N, C, Dk)
    v = v.reshape(B, H, N, C, Dv)
    g = g.reshape(B, H, N, C)
    beta = beta.reshape(B, H, N, C)
    G = g.cumsum(-1)                                                            # [B,H,N,C]
    diff = G[..., :, None] - G[..., None, :]                                    # G_i - G_j
    tril_strict = torch.ones(C, C, dtype=torch.bool, device=q.device).tril(-1)
    tril_incl = torch.ones(C, C, dtype=torch.bool, device=q.device).tril(0)
    decay_strict = torch.exp(diff.masked_fill(~tril_strict, -1e30))            # zero above/on diagonal
    decay_incl = torch.exp(diff.masked_fill(~tril_incl, -1e30))
    kk = k @ k.transpose(-1, -2)                                                # [B,H,N,C,C]
    A = beta[..., :, None] * decay_strict * kk
    eye = torch.eye(C, dtype=q.dtype, device=q.device)
    IA = eye + A
    rhs = torch.cat([beta[..., None] * v, (beta * torch.exp(G))[..., None] * k], dim=-1)
    sol = torch.linalg.solve_triangular(IA, rhs, upper=False, unitriangular=True)
    U0 = sol[..., :Dv]                                                          # [B,H,N,C,Dv]
    W = sol[..., Dv:]                                                           # [B,H,N,C,Dk]
    qk = (q @ k.transpose(-1, -2)) * decay_incl                                 # [B,H,N,C,C]
    eG = torch.exp(G)
    eGend = torch.exp(G[..., -1:] - G)                                          # [B,H,N,C]
    S = torch.zeros(B, H, Dk, Dv, dtype=q.dtype, device=q.device) if state is None else state
    outs = []
    for n in range(N):
        U = U0[:, :, n] - W[:, :, n] @ S                                        # [B,H,C,Dv]
        o = (eG[:, :, n, :, None] * q[:, :, n]) @ S + qk[:, :, n] @ U
        outs.append(o)
        S = torch.exp(G[:, :, n, -1])[..., None, None] * S + (eGend[:, :, n, :, None] * k[:, :, n]).transpose(-1, -2) @ U
    o = torch.stack(outs, dim=2).reshape(B, H, N * C, Dv)[:, :, :T]
    return o, S


# ----------------------------------------------------------------------------------------------- layers
class GatedDeltaNet(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.Hk, self.Hv = cfg.linear_num_key_heads, cfg.linear_num_value_heads
        self.Dk, self.Dv = cfg.linear_key_head_dim, cfg.linear_value_head_dim
        self.K = cfg.linear_conv_kernel_dim
        H = cfg.hidden_size
        self.conv_dim = 2 * self.Hk * self.Dk + self.Hv * self.Dv
        self.in_proj_qkv = nn.Linear(H, self.conv_dim, bias=False)
        self.in_proj_z = nn.Linear(H, self.Hv * self.Dv, bias=False)
        self.in_proj_b = nn.Linear(H, self.Hv, bias=False)
        self.in_proj_a = nn.Linear(H, self.Hv, bias=False)
        self.conv1d = nn.Module()
        self.conv1d.weight = nn.Parameter(torch.empty(self.conv_dim, 1, self.K))
        nn.init.uniform_(self.conv1d.weight, -1.0 / math.sqrt(self.K), 1.0 / math.sqrt(self.K))
        self.dt_bias = nn.Parameter(torch.ones(self.Hv))
        self.A_log = nn.Parameter(torch.log(torch.empty(self.Hv).uniform_(1.0, 16.0)))
        self.norm = RMSNormGated(self.Dv, cfg.rms_norm_eps)
        self.out_proj = nn.Linear(self.Hv * self.Dv, H, bias=False)

    def forward(self, x, mode="chunked", chunk=64):
        B, T, _ = x.shape
        qkv = self.in_proj_qkv(x)                                               # [B,T,C]
        z = self.in_proj_z(x).view(B, T, self.Hv, self.Dv)
        b = self.in_proj_b(x)
        a = self.in_proj_a(x)
        # causal depthwise conv (cross-correlation, tap K-1 multiplies the current token), zero initial state
        xc = F.pad(qkv.transpose(1, 2), (self.K - 1, 0))
        conv = F.conv1d(xc, self.conv1d.weight, groups=self.conv_dim)           # [B,C,T]
        conv = F.silu(conv).transpose(1, 2)
        nq = self.Hk * self.Dk
        q = conv[..., :nq].reshape(B, T, self.Hk, self.Dk)
        k = conv[..., nq:2 * nq].reshape(B, T, self.Hk, self.Dk)
        v = conv[..., 2 * nq:].reshape(B, T, self.Hv, self.Dv)
        beta = torch.sigmoid(b)                                                 # [B,T,Hv]
        g = -torch.exp(self.A_log) * F.softplus(a + self.dt_bias)               # [B,T,Hv]
        q = l2norm(q) * (self.Dk ** -0.5)
        k = l2norm(k)
        r = self.Hv // self.Hk
        q = q.repeat_interleave(r, dim=2)                                       # value head j uses k head j // r
        k = k.repeat_interleave(r, dim=2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                        # [B,Hv,T,D]
        g, beta = g.transpose(1, 2), beta.transpose(1, 2)
        if mode == "recurrent":
            o, _ = gated_delta_recurrent(q, k, v, g, beta)
        else:
            o, _ = gated_delta_chunked(q, k, v, g, beta, chunk=chunk)
        o = o.transpose(1, 2)                                                   # [B,T,Hv,Dv]
        y = self.norm(o, z).reshape(B, T, self.Hv * self.Dv)
        return self.out_proj(y)


def rope_cos_sin(positions, rot_dims, theta, dtype):
    inv = theta ** (-torch.arange(0, rot_dims, 2, dtype=torch.float64) / rot_dims)   # [rot/2]
    ang = positions.to(torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)


def apply_partial_rope(x, cos, sin, rot_dims):
    """x: [B,heads,T,D]; NeoX rotate-half on the first rot_dims dims, pairs (i, i+rot/2)."""
    half = rot_dims // 2
    x1 = x[..., :half]
    x2 = x[..., half:rot_dims]
    c = cos[None, None]
    s = sin[None, None]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s, x[..., rot_dims:]], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        H = cfg.hidden_size
        self.Nq, self.Nkv, self.D = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.rot = int(self.D * cfg.partial_rotary_factor)
        self.theta = cfg.rope_theta
        self.q_proj = nn.Linear(H, 2 * self.Nq * self.D, bias=False)
        self.k_proj = nn.Linear(H, self.Nkv * self.D, bias=False)
        self.v_proj = nn.Linear(H, self.Nkv * self.D, bias=False)
        self.o_proj = nn.Linear(self.Nq * self.D, H, bias=False)
        self.q_norm = RMSNorm1p(self.D, cfg.rms_norm_eps)
        self.k_norm = RMSNorm1p(self.D, cfg.rms_norm_eps)

    def forward(self, x, positions, kv_cache=None):
        """x: [B,T,H]; positions: [T] (LongTensor). kv_cache: optional dict with 'k','v' [B,Nkv,P,D] to prepend
        (the new tokens attend to all cached entries plus causally to themselves); updated in place."""
        B, T, _ = x.shape
        qg = self.q_proj(x).view(B, T, self.Nq, 2 * self.D)
        q, gate = qg[..., :self.D], qg[..., self.D:]
        gate = gate.reshape(B, T, self.Nq * self.D)
        k = self.k_proj(x).view(B, T, self.Nkv, self.D)
        v = self.v_proj(x).view(B, T, self.Nkv, self.D)
        q = self.q_norm(q).transpose(1, 2)
        k = self.k_norm(k).transpose(1, 2)
        v = v.transpose(1, 2)
        cos, sin = rope_cos_sin(positions, self.rot, self.theta, x.dtype)
        q = apply_partial_rope(q, cos, sin, self.rot)
        k = apply_partial_rope(k, cos, sin, self.rot)
        P = 0
        if kv_cache is not None:
            if "k" in kv_cache:
                P = kv_cache["k"].shape[2]
                k = torch.cat([kv_cache["k"], k], dim=2)
                v = torch.cat([kv_cache["v"], v], dim=2)
            kv_cache["k"], kv_cache["v"] = k, v
        r = self.Nq // self.Nkv
        k = k.repeat_interleave(r, dim=1)
        v = v.repeat_interleave(r, dim=1)
        att = (q @ k.transpose(-1, -2)) * (self.D ** -0.5)                     # [B,Nq,T,P+T]
        mask = torch.ones(T, P + T, dtype=torch.bool, device=x.device).tril(P)
        att = att.masked_fill(~mask, float("-inf"))
        att = torch.softmax(att.float() if att.dtype == torch.bfloat16 else att, dim=-1).to(v.dtype)
        o = (att @ v).transpose(1, 2).reshape(B, T, self.Nq * self.D)
        o = o * torch.sigmoid(gate)
        return self.o_proj(o)


class MLP(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: Config, layer_type):
        super().__init__()
        self.layer_type = layer_type
        self.input_layernorm = RMSNorm1p(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm1p(cfg.hidden_size, cfg.rms_norm_eps)
        if layer_type == "linear_attention":
            self.linear_attn = GatedDeltaNet(cfg)
        else:
            self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)

    def forward(self, h, positions, gdn_mode="chunked", kv_cache=None):
        x = self.input_layernorm(h)
        if self.layer_type == "linear_attention":
            x = self.linear_attn(x, mode=gdn_mode)
        else:
            x = self.self_attn(x, positions, kv_cache=kv_cache)
        h = h + x
        return h + self.mlp(self.post_attention_layernorm(h))


class MTP(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        H = cfg.hidden_size
        self.fc = nn.Linear(2 * H, H, bias=False)
        self.pre_fc_norm_embedding = RMSNorm1p(H, cfg.rms_norm_eps)
        self.pre_fc_norm_hidden = RMSNorm1p(H, cfg.rms_norm_eps)
        self.layers = nn.ModuleList([DecoderLayer(cfg, "full_attention")])
        self.norm = RMSNorm1p(H, cfg.rms_norm_eps)


class Qwen35(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(cfg, t) for t in cfg.layer_types])
        self.norm = RMSNorm1p(cfg.hidden_size, cfg.rms_norm_eps)
        self.mtp = MTP(cfg)
        self._init()

    def _init(self):
        std = self.cfg.initializer_range
        n_resid = 2 * (len(self.layers) + 1)
        for name, m in self.named_modules():
            if isinstance(m, nn.Linear):
                s = std
                if name.endswith("o_proj") or name.endswith("out_proj") or name.endswith("down_proj"):
                    s = std / math.sqrt(n_resid)
                nn.init.normal_(m.weight, 0.0, s)
        nn.init.normal_(self.embed_tokens.weight, 0.0, std)

    # ------------------------------------------------------------------ trunk
    def trunk(self, ids, gdn_mode="chunked"):
        """ids [B,T] -> h_final [B,T,H] (after the final norm)."""
        T = ids.shape[1]
        pos = torch.arange(T, device=ids.device)
        h = self.embed_tokens(ids)
        for layer in self.layers:
            h = layer(h, pos, gdn_mode=gdn_mode)
        return self.norm(h)

    def lm_head(self, h):
        return h @ self.embed_tokens.weight.to(h.dtype).t()

    # ------------------------------------------------------------------ MTP
    def mtp_forward(self, h, next_ids, positions, kv_cache=None):
        """h: [B,T,H] hidden (trunk h_final or previous MTP output after mtp.norm); next_ids [B,T]: token at p+1;
        positions [T]. Returns MTP output hidden after mtp.norm [B,T,H]."""
        e = self.mtp.pre_fc_norm_embedding(self.embed_tokens(next_ids).to(h.dtype))
        hn = self.mtp.pre_fc_norm_hidden(h)
        u = self.mtp.fc(torch.cat([e, hn], dim=-1))
        u = self.mtp.layers[0](u, positions, kv_cache=kv_cache)
        return self.mtp.norm(u)

    def forward_train(self, ids, gdn_mode="chunked"):
        """ids [B,T+1]. Returns (lm_loss, mtp_loss). LM: predict ids[:,1:] from ids[:,:-1].
        MTP at position p (p = 0..T-2) takes (h_final_p, x_{p+1}) and predicts x_{p+2}."""
        x = ids[:, :-1]
        y = ids[:, 1:]
        hf = self.trunk(x, gdn_mode=gdn_mode)
        logits = self.lm_head(hf)
        lm_loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        T = x.shape[1]
        pos = torch.arange(T - 1, device=ids.device)
        hm = self.mtp_forward(hf[:, :-1], x[:, 1:], pos)
        mlog = self.lm_head(hm)
        mtp_loss = F.cross_entropy(mlog.reshape(-1, mlog.shape[-1]), y[:, 1:].reshape(-1))
        return lm_loss, mtp_loss
