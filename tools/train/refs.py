#!/usr/bin/python3
"""Reference outputs for the engine's agreement test, computed in float64 by the torch model on the EXPORTED
BF16 weights (widened exactly to f64). Writes raw little-endian float32 files + index.json.

  /usr/bin/python3 tools/train/refs.py --model models/nextn-tiny --out tests/data/nextn-tiny-ref
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

import infer  # noqa: E402
from export import load_exported  # noqa: E402
from tok import Tokenizer  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
N_GREEDY = 32
N_CHAIN = 2
TOKENIZE_TEXTS = [
    "def main():\n    return 0  # code\n\tint x = 1000;",
    "import os\nimport sys\n\n\nclass Foo(object):\n    \"\"\"Docstring.\"\"\"\n\n    def __init__(self, x=None):\n        self.x = x\n",
    "The capital of France is Paris.",
    "  multiple   spaces\n\nnewlines \u00e9t\u00e9 na\u00efve \u4f60\u597d \U0001F680",
    "I've been told he's there, 'RE you sure?",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "x = [1, 2, 3]<|endoftext|>y = {'a': 0x1F}",
]  # chained MTP steps after the first draft (draft depth 3 in total)


def pick_prompts(held, starts):
    """Token-id prompts cut from held-out files (fixed offsets, deterministic)."""
    def cut(doc, off, n):
        s = starts[doc] + off
        return [int(t) for t in held[s:s + n]]
    return {
        "p1": cut(0, 0, 1),
        "p9": cut(1, 40, 9),
        "p48": cut(2, 120, 48),
        "p200": cut(3, 60, 200),
    }


def write(path, arr):
    a = np.ascontiguousarray(arr, dtype="<f4")
    a.tofile(path)
    return list(a.shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(REPO, "models", "nextn-tiny"))
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "nextn-tiny-ref"))
    ap.add_argument("--data", default=os.path.join(HERE, "runs", "data"))
    ap.add_argument("--full-rows-max", type=int, default=64,
                    help="prompts longer than this store only the last --tail-rows rows of logits/mtp_logits")
    ap.add_argument("--tail-rows", type=int, default=4)
    args = ap.parse_args()
    torch.set_num_threads(2)
    m64, cfg = load_exported(args.model, torch.float64)
    m32, _ = load_exported(args.model, torch.float32)
    held = np.load(os.path.join(args.data, "heldout.npy"))
    with open(os.path.join(args.data, "heldout_files.json")) as f:
        hf = json.load(f)
    prompts = pick_prompts(held, hf["starts"])
    os.makedirs(args.out, exist_ok=True)
    V, H = cfg.vocab_size, cfg.hidden_size
    index = {
        "model": "models/nextn-tiny",
        "generator": "tools/train/refs.py (torch, float64 on the exported BF16 weights widened to f64; GDN by the "
                     "token-by-token recurrence; prompts cut from held-out stdlib files)",
        "format": "every *.f32 file is raw little-endian float32, row-major, no header; 'shape' is [rows, cols]",
        "vocab_size": V,
        "hidden_size": H,
        "conventions": {
            "logits": "[R, V] target logits for prompt positions rows_from..T-1 (one forward over the whole prompt); "
                      "rows_from = 0 unless the prompt is long (then only the last rows are stored, see 'rows_from')",
            "hidden": "[T, H] target final hidden state after the final norm (model.norm) = LM-head input, all rows",
            "mtp_logits": "[R, V] MTP head, vLLM pairing: row p = MTP(hidden[p], embedding of mtp.input_tokens[p]) "
                          "at RoPE position p; input_tokens = tokens[1:] + [greedy_tokens[0]]; all T rows through a "
                          "fresh MTP KV cache, causal (row p attends to rows 0..p); same rows_from as logits",
            "mtp_hidden": "[T, H] MTP output hidden after mtp.norm = MTP LM-head input, all rows",
            "mtp_chain_logits": "[2, V] chained draft steps 2..3: row j = MTP(previous step's MTP hidden after mtp.norm, "
                                "chain_input_tokens[j]) at chain_positions[j], appended to the same MTP KV cache; "
                                "draft_tokens[0] = argmax(mtp_logits[T-1]), draft_tokens[j+1] = argmax(mtp_chain_logits[j])",
            "mtp_chain_hidden": "[2, H] MTP output hidden (after mtp.norm) of the chained steps",
            "greedy_tokens": "32 plain greedy tokens after the prompt, no stop tokens (special ids are ordinary)",
            "greedy_margins": "top1 - top2 logit gap at each greedy step (small gaps = argmax may legitimately flip "
                              "under f32 rounding)",
        },
        "prompts": {},
    }
    worst = {"logits": 0.0, "hidden": 0.0, "mtp_logits": 0.0, "mtp_hidden": 0.0}
    for name, toks in prompts.items():
        T = len(toks)
        ids = torch.tensor([toks])
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        lg, h = infer.trunk(m64, ids, gdn_mode="recurrent")
        gtoks, glogs = infer.greedy(m64, ids, N_GREEDY, gdn_mode="chunked")
        assert gtoks[0, 0].item() == lg[0, -1].argmax().item()
        g0 = gtoks[0, 0].item()
        nxt = torch.tensor([toks[1:] + [g0]])
        ml, mh, cache = infer.mtp_first_pass(m64, h, nxt)
        d1 = ml[:, -1].argmax(-1)
        ds, cl, ch = infer.mtp_chain(m64, cache, T - 1, mh[:, -1], d1, N_CHAIN)
        # f32 run of the same model: observed f32-vs-f64 deviation (a proxy for what an f32 engine should meet)
        lg32, h32 = infer.trunk(m32, ids, gdn_mode="recurrent")
        ml32, mh32, _ = infer.mtp_first_pass(m32, h32, nxt)
        obs = {
            "logits": (lg32.double() - lg).abs().max().item(),
            "hidden": (h32.double() - h).abs().max().item(),
            "mtp_logits": (ml32.double() - ml).abs().max().item(),
            "mtp_hidden": (mh32.double() - mh).abs().max().item(),
        }
        for k in worst:
            worst[k] = max(worst[k], obs[k])
        r0 = 0 if T <= args.full_rows_max else T - args.tail_rows
        files = {}
        files["logits"] = {"file": f"{name}/logits.f32", "shape": write(os.path.join(d, "logits.f32"), lg[0, r0:].numpy())}
        files["hidden"] = {"file": f"{name}/hidden.f32", "shape": write(os.path.join(d, "hidden.f32"), h[0].numpy())}
        files["mtp_logits"] = {"file": f"{name}/mtp_logits.f32",
                               "shape": write(os.path.join(d, "mtp_logits.f32"), ml[0, r0:].numpy())}
        files["mtp_hidden"] = {"file": f"{name}/mtp_hidden.f32",
                               "shape": write(os.path.join(d, "mtp_hidden.f32"), mh[0].numpy())}
        files["mtp_chain_logits"] = {"file": f"{name}/mtp_chain_logits.f32",
                                     "shape": write(os.path.join(d, "mtp_chain_logits.f32"), cl[0].numpy())}
        files["mtp_chain_hidden"] = {"file": f"{name}/mtp_chain_hidden.f32",
                                     "shape": write(os.path.join(d, "mtp_chain_hidden.f32"), ch[0].numpy())}
        top2 = glogs[0].topk(2, dim=-1).values
        margins = (top2[:, 0] - top2[:, 1]).tolist()
        drafts = [d1.item()] + ds[0].tolist()
        index["prompts"][name] = {
            "tokens": toks,
            "n_tokens": T,
            "rows_from": r0,
            "files": files,
            "greedy_tokens": gtoks[0].tolist(),
            "greedy_margins": [round(x, 6) for x in margins],
            "mtp": {
                "input_tokens": toks[1:] + [g0],
                "positions": list(range(T)),
                "draft_tokens": drafts,
                "chain_input_tokens": drafts[:N_CHAIN],
                "chain_positions": [T + k for k in range(N_CHAIN)],
            },
            "observed_f32_vs_f64": {k: float(f"{v:.3e}") for k, v in obs.items()},
        }
        print(f"{name}: T={T} greedy {gtoks[0, :8].tolist()}... drafts {drafts} min margin {min(margins):.4f} "
              f"f32-vs-f64 {obs}", flush=True)
    index["tolerance"] = {
        "note": "expected for an engine computing in f32 (f32 GDN state, f32 softmax) from the same BF16 weights. "
                "'observed_f32_vs_f64_worst' is torch f32 vs this f64 reference; the tolerances leave a few hundred times that as headroom "
                "for different summation orders. Compare greedy/draft tokens exactly unless the recorded margin "
                "is below 'argmax_margin_min'.",
        "observed_f32_vs_f64_worst": {k: float(f"{v:.3e}") for k, v in worst.items()},
        "logits_max_abs": 5e-3,
        "hidden_max_abs": 2e-3,
        "mtp_logits_max_abs": 5e-3,
        "mtp_hidden_max_abs": 2e-3,
        "argmax_margin_min": 1e-2,
    }
    tk = Tokenizer(os.path.join(args.model, "tokenizer.json"))
    with open(os.path.join(args.out, "tokenize.json"), "w") as f:
        json.dump({"note": "token ids of each text with models/nextn-tiny/tokenizer.json (tools/train/tok.py, HF BPE "
                           "semantics: NFC, Qwen split regex, byte-level, merges by rank); special tokens in the text "
                           "are parsed; no BOS/EOS added",
                   "texts": {t: tk.encode(t) for t in TOKENIZE_TEXTS}}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    index["tokenize_file"] = "tokenize.json"
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(args.out) for fn in fns)
    print(f"wrote {args.out} ({total} bytes); worst f32-vs-f64 {worst}")


if __name__ == "__main__":
    main()
