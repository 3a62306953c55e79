#!/usr/bin/python3
"""Anchor the torch implementation (model.py) to the independent llama.cpp goldens of the tiny Qwen3.5 fixtures.

  /usr/bin/python3 tools/train/check_fixture.py [--fixtures DIR] [--model qwen35-dense-tiny]

Loads the fixture's HF checkpoint (BF16 safetensors, widened exactly to float64) into model.Qwen35, runs it in
float64 on every golden prompt of <fixtures>/<model>/golden/index.json and compares with llama.cpp's f32 outputs:
  logits      [T, V]  trunk logits over the prompt (one pass; GDN by the token-by-token recurrence)
  hidden      [T, H]  final hidden after model.norm
  mtp_logits  [T, V]  MTP head, vLLM pairing exactly as the index states: row p = MTP(hidden[p], mtp.input_tokens[p])
                      at RoPE position p, input_tokens = tokens[1:] + [greedy_tokens[0]], fresh causal MTP KV cache;
                      the hidden fed in is OUR trunk's hidden (end to end)
  mtp_hidden  [T, H]  MTP output after mtp.norm
  mtp_chain_* [2, .]  chained steps 2..3: (previous step's MTP hidden, chain_input_tokens[j]) at chain_positions[j],
                      appended to the same MTP cache (golden chain tokens fed, i.e. teacher-forced); end to end,
                      so it carries the error of our own mtp_hidden (the index's 'observed.ref64_..._chain2' fed
                      llama.cpp's mtp_hidden[T-1] instead: with that input this code reproduces it, 1.36e-6 on p1)
  greedy      [64, V] greedy_logits, teacher forced: one pass over tokens + greedy_tokens[:63]; row k = logits at
                      position T-1+k (recurrent GDN; 'greedy_chunked' = the same with the chunked GDN used in training)
                      (the index's 'observed.ref64_vs_llamacpp_replay_*' is over all T+63 rows of a batch replay, a
                      different llama.cpp run, so that printed number is only indicative)
  tokens              argmax of every greedy row == greedy_tokens (all 64), MTP drafts == mtp.draft_tokens
Fixture directory: --fixtures, else $NEXTN_FIXTURES, else ../shared/fixtures beside the repository, else tests/data
(which holds p1 and p7 only).

Tolerances (max |diff|): 5e-4 for every logits quantity, 2e-4 for every hidden quantity: the fixture README's
suggested tolerances for an f32 engine (section 6). The fixture's own independent float64 reference of the HF
semantics agreed with llama.cpp to <= 1.4e-4 over all rows, so a correct float64 implementation should land at the
same ~1e-5..1e-4 level (the index's 'observed.ref64_vs_llamacpp_*' values are printed alongside); a real math
error (norm, RoPE, head grouping, conv, delta rule, MTP wiring) moves logits by O(0.1..1). Tokens must match exactly
(the smallest golden top-1/top-2 gap is 2.1e-3, an order of magnitude above the tolerance).

MoE: model.py implements only the dense MLP, so qwen35-moe-tiny is skipped (reported, not failed).
Exit status 1 if any quantity is over its tolerance or any token differs.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fastblas  # noqa: E402,F401
import numpy as np  # noqa: E402
import torch  # noqa: E402

from export import config_from_hf, read_safetensors  # noqa: E402
from model import Qwen35  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
TOL_LOGITS = 5e-4
TOL_HIDDEN = 2e-4


def fixture_dirs(arg):
    if arg:
        return [arg]
    out = []
    if os.environ.get("NEXTN_FIXTURES"):
        out.append(os.environ["NEXTN_FIXTURES"])
    out.append(os.path.join(os.path.dirname(REPO), "shared", "fixtures"))
    out.append(os.path.join(REPO, "tests", "data"))
    return out


def hf_to_internal(name):
    """HF Qwen3.5 multimodal checkpoint name -> model.Qwen35 state-dict name (None for lm_head.weight).
    The layouts are the same (model.py's modules carry the HF names and HF tensor layouts: conv1d [C,1,K],
    q_proj per-head [query | gate], in_proj_qkv rows q|k|v head-major); only the prefix differs."""
    if name == "lm_head.weight":
        return None
    if name.startswith("mtp."):
        return name
    p = "model.language_model."
    if name.startswith(p):
        return name[len(p):]
    raise KeyError(f"unexpected tensor {name}")


def load_fixture(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        hc = json.load(f)
    t = hc.get("text_config", hc)
    if "num_experts" in t or "moe" in t.get("model_type", ""):
        return None, None, "MoE (model.py has only the dense MLP)"
    if t.get("mtp_use_dedicated_embeddings"):
        raise ValueError("dedicated MTP embeddings are not supported by model.py")
    cfg = config_from_hf(hc)
    torch.manual_seed(0)
    m = Qwen35(cfg)
    w = read_safetensors(os.path.join(model_dir, "model.safetensors"))  # BF16 widened exactly to float64
    sd = {}
    lm_head = None
    for k, v in w.items():
        n = hf_to_internal(k)
        if n is None:
            lm_head = v
        else:
            sd[n] = v
    m.load_state_dict(sd, strict=True)  # every model.py parameter present, no extra tensor
    m = m.to(torch.float64).eval()
    tied = t.get("tie_word_embeddings", hc.get("tie_word_embeddings", False))
    if not tied:
        if lm_head is None:
            raise ValueError("untied checkpoint without lm_head.weight")
        W = lm_head.to(torch.float64)
        m.lm_head = lambda h: h @ W.t()  # model.py ties the head to embed_tokens; the fixture is untied
    else:
        assert lm_head is None
    return m, cfg, None


def read_f32(golden_dir, info):
    a = np.fromfile(os.path.join(golden_dir, info["file"]), dtype="<f4")
    return torch.from_numpy(a.reshape(info["shape"]).astype(np.float64))


@torch.no_grad()
def check_prompt(m, golden_dir, p):
    toks = p["tokens"]
    T = len(toks)
    files = p["files"]
    g = {k: read_f32(golden_dir, v) for k, v in files.items()}
    res = {}   # quantity -> max |diff|
    bad_tokens = []
    ids = torch.tensor([toks])
    h = m.trunk(ids, gdn_mode="recurrent")
    lg = m.lm_head(h)
    if "logits" in g:
        res["logits"] = (lg[0] - g["logits"]).abs().max().item()
    if "hidden" in g:
        res["hidden"] = (h[0] - g["hidden"]).abs().max().item()
    gt = p["greedy_tokens"]
    if "greedy_logits" in g:
        n = g["greedy_logits"].shape[0]
        seq = torch.tensor([toks + gt[:n - 1]])
        for mode, key in (("recurrent", "greedy"), ("chunked", "greedy_chunked")):
            rl = m.lm_head(m.trunk(seq, gdn_mode=mode))[0, T - 1:T - 1 + n]
            res[key] = (rl - g["greedy_logits"]).abs().max().item()
            am = rl.argmax(-1).tolist()
            for k in range(n):
                if am[k] != gt[k]:
                    gl = g["greedy_logits"][k]
                    top = gl.topk(2).values
                    bad_tokens.append(f"{key}[{k}]: {am[k]} != {gt[k]} (golden gap {(top[0] - top[1]).item():.2e})")
    # MTP, vLLM pairing, exactly as the index gives it
    mt = p.get("mtp")
    if mt and "mtp_logits" in g:
        g0 = lg[0, -1].argmax().item()
        if g0 != gt[0]:
            bad_tokens.append(f"greedy_tokens[0]: {g0} != {gt[0]}")
        assert mt["input_tokens"] == toks[1:] + [gt[0]], "index pairing differs from tokens[1:] + [g0]"
        assert mt["positions"] == list(range(T))
        cache = {}
        mh = m.mtp_forward(h, torch.tensor([mt["input_tokens"]]), torch.tensor(mt["positions"]), kv_cache=cache)
        ml = m.lm_head(mh)
        res["mtp_logits"] = (ml[0] - g["mtp_logits"]).abs().max().item()
        if "mtp_hidden" in g:
            res["mtp_hidden"] = (mh[0] - g["mtp_hidden"]).abs().max().item()
        drafts = [ml[0, -1].argmax().item()]
        if "mtp_chain_logits" in g:
            hc = mh[:, -1:]
            cl, ch = [], []
            for tok, pos in zip(mt["chain_input_tokens"], mt["chain_positions"]):
                hc = m.mtp_forward(hc, torch.tensor([[tok]]), torch.tensor([pos]), kv_cache=cache)
                lc = m.lm_head(hc)
                cl.append(lc[0, 0])
                ch.append(hc[0, 0])
                drafts.append(lc[0, 0].argmax().item())
            res["mtp_chain_logits"] = (torch.stack(cl) - g["mtp_chain_logits"]).abs().max().item()
            if "mtp_chain_hidden" in g:
                res["mtp_chain_hidden"] = (torch.stack(ch) - g["mtp_chain_hidden"]).abs().max().item()
        want = mt["draft_tokens"][:len(drafts)]
        if drafts != want:
            bad_tokens.append(f"draft_tokens: {drafts} != {want}")
        if mt["chain_input_tokens"] != mt["draft_tokens"][:len(mt["chain_input_tokens"])]:
            bad_tokens.append("index: chain_input_tokens are not the leading draft_tokens")
    return T, res, bad_tokens


OBSERVED_KEY = {"logits": "ref64_vs_llamacpp_logits_maxabs", "hidden": "ref64_vs_llamacpp_hidden_maxabs",
                "mtp_logits": "ref64_vs_llamacpp_mtp_logits_maxabs", "mtp_hidden": "ref64_vs_llamacpp_mtp_hidden_maxabs",
                "mtp_chain_logits": "ref64_vs_llamacpp_mtp_chain2_logits_maxabs",
                "greedy": "ref64_vs_llamacpp_replay_logits_maxabs"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", help="fixture directory (default: $NEXTN_FIXTURES, ../shared/fixtures, tests/data)")
    ap.add_argument("--model", action="append", help="model folder(s); default both tiny fixtures")
    args = ap.parse_args()
    torch.set_num_threads(2)
    models = args.model or ["qwen35-dense-tiny", "qwen35-moe-tiny"]
    failed = False
    checked = 0
    for name in models:
        cands = [os.path.join(d, name) for d in fixture_dirs(args.fixtures)]
        mdir = next((c for c in cands if os.path.exists(os.path.join(c, "golden", "index.json"))), None)
        if mdir is None:
            print(f"{name}: not found in {cands}")
            failed = True
            continue
        m, cfg, skip = load_fixture(mdir)
        if skip:
            print(f"{name}: SKIPPED ({skip}) [{mdir}]")
            continue
        gdir = os.path.join(mdir, "golden")
        with open(os.path.join(gdir, "index.json")) as f:
            index = json.load(f)
        print(f"{name}: {mdir} (float64 torch vs llama.cpp f32; tol logits {TOL_LOGITS:g}, hidden {TOL_HIDDEN:g})")
        for pn, p in index["prompts"].items():
            if not all(os.path.exists(os.path.join(gdir, v["file"])) for v in p["files"].values()):
                print(f"  {pn}: golden files not present here, skipped")  # tests/data copies p1 and p7 only
                continue
            T, res, bad = check_prompt(m, gdir, p)
            obs = index.get("observed", {}).get(pn, {})
            parts = []
            for k, v in res.items():
                tol = TOL_HIDDEN if "hidden" in k else TOL_LOGITS
                flag = "" if v <= tol else " FAIL"
                ref = f" (fixture ref64 {obs[OBSERVED_KEY[k]]:.1e})" if OBSERVED_KEY.get(k) in obs else ""
                parts.append(f"{k} {v:.2e}{ref}{flag}")
                failed |= v > tol
            ntok = len(p["greedy_tokens"])
            tok_msg = "tokens OK" if not bad else "TOKENS DIFFER: " + "; ".join(bad)
            failed |= bool(bad)
            print(f"  {pn} T={T}: " + ", ".join(parts) + f"; {tok_msg} ({ntok} greedy, "
                  f"{len(p.get('mtp', {}).get('draft_tokens', []))} drafts)", flush=True)
            checked += 1
    print("RESULT: " + ("FAIL" if failed else f"OK ({checked} prompts)"))
    sys.exit(1 if failed or checked == 0 else 0)


if __name__ == "__main__":
    main()
