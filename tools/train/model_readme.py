#!/usr/bin/python3
"""Write models/nextn-tiny/README.md from the exported config, the training logs and measure.json."""
import argparse
import glob
import json
import math
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def parse_logs(run):
    logs = sorted(glob.glob(os.path.join(run, "train.part*.log"))) + [os.path.join(run, "train.log")]
    steps, evals, cmds = [], [], []
    for lg in logs:
        if not os.path.exists(lg):
            continue
        for line in open(lg):
            m = re.match(r"step (\d+)/(\d+) loss ([\d.]+) mtp ([\d.]+) .* tok/s (\d+) elapsed (\d+)s tokens_seen (\d+)", line)
            if m:
                steps.append(tuple(float(x) for x in m.groups()))
            m = re.match(r"eval step (\d+) heldout loss ([\d.]+) ppl ([\d.]+) mtp loss ([\d.]+)", line)
            if m:
                evals.append(tuple(float(x) for x in m.groups()))
            m = re.match(r"resumed from .* at step (\d+)", line)
            if m:
                cmds.append(int(m.group(1)))
    return steps, evals, cmds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(REPO, "models", "nextn-tiny"))
    ap.add_argument("--run", default=os.path.join(HERE, "runs", "main"))
    ap.add_argument("--measure", default=os.path.join(HERE, "runs", "measure.json"))
    ap.add_argument("--history", default="", help="free text: how the run was launched/resumed")
    args = ap.parse_args()
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    t = cfg["text_config"]
    ms = json.load(open(args.measure))
    steps, evals, resumes = parse_logs(args.run)
    last = steps[-1]
    n_last = min(20, len(steps))
    avg_loss = sum(s[2] for s in steps[-n_last:]) / n_last
    avg_mtp = sum(s[3] for s in steps[-n_last:]) / n_last
    size = os.path.getsize(os.path.join(args.model, "model.safetensors"))
    nparams = (size - 8) // 2  # approx (header is small); recomputed below from the header
    with open(os.path.join(args.model, "model.safetensors"), "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        hdr = json.loads(f.read(n))
    nparams = sum(math.prod(v["shape"]) for k, v in hdr.items() if k != "__metadata__")
    n_mtp = sum(math.prod(v["shape"]) for k, v in hdr.items() if k.startswith("mtp."))
    acc = ms["acceptance"]
    ev = "\n".join(f"| {int(e[0])} | {e[1]:.3f} | {e[2]:.1f} | {e[3]:.3f} |" for e in evals)
    samples = ""
    for s in ms["samples"][:2]:
        samples += "Prompt (held-out tokens):\n\n```python\n" + s["prompt"] + "\n```\n\nGreedy continuation:\n\n```python\n" \
                   + s["continuation"] + "\n```\n\n"
    md = f"""# nextn-tiny

A tiny **Qwen3.5-architecture** language model (hybrid Gated DeltaNet + gated attention, dense SwiGLU MLP,
tied LM head) with a **jointly trained MTP (multi-token prediction) head**, trained from scratch on CPU on the
Python standard library sources. It exists so the nextn engine has a small, real (non-random) default model
whose MTP drafts are actually accepted. Layout = the official Hugging Face multimodal checkpoint layout
(`Qwen3_5ForConditionalGeneration`, `model.language_model.*`, `mtp.*`, BF16 safetensors, no `lm_head.weight`).

It is a toy: it writes plausible-looking Python, not correct programs, and it knows nothing else.

## Files

| file | |
|---|---|
| `config.json` | HF config (`text_config.model_type = qwen3_5_text`, `tie_word_embeddings: true`, `mtp_num_hidden_layers: 1`) |
| `model.safetensors` | {len(hdr) - 1} tensors, BF16, {size} bytes |
| `tokenizer.json`, `tokenizer_config.json` | byte-level BPE, {t["vocab_size"]} ids (256 bytes + {t["vocab_size"] - 259} merges + `<\\|endoftext\\|>` {t["vocab_size"] - 3}, `<\\|im_start\\|>` {t["vocab_size"] - 2}, `<\\|im_end\\|>` {t["vocab_size"] - 1}); Qwen3.5 split regex, NFC; ChatML chat template |

`eos_token_id` in `config.json` is `<|endoftext|>` ({t["eos_token_id"]}): training documents (source files) are
separated by it, so that is what the model emits at the end of a file. `tokenizer_config.json` names `<|im_end|>`
as the chat eos (the model never saw chat data).

## Architecture

| | |
|---|---|
| hidden size | {t["hidden_size"]} |
| layers | {t["num_hidden_layers"]}: {", ".join("GDN" if x == "linear_attention" else "attn" for x in t["layer_types"])} |
| Gated DeltaNet | {t["linear_num_key_heads"]} q/k heads, {t["linear_num_value_heads"]} v heads, head dim {t["linear_key_head_dim"]}/{t["linear_value_head_dim"]}, conv kernel {t["linear_conv_kernel_dim"]} |
| attention | {t["num_attention_heads"]} q heads, {t["num_key_value_heads"]} kv heads, head_dim {t["head_dim"]} (q_proj {2 * t["num_attention_heads"] * t["head_dim"]} rows: per-head [query \\| gate]), partial RoPE {int(t["head_dim"] * t["partial_rotary_factor"])} dims, theta {t["rope_parameters"]["rope_theta"]:g} |
| MLP | SwiGLU, intermediate {t["intermediate_size"]} |
| MTP | 1 full-attention layer + fc [{t["hidden_size"]}, {2 * t["hidden_size"]}] + 3 norms, fed the trunk hidden after `model.norm` |
| vocab | {t["vocab_size"]} |
| parameters | {nparams:,} total ({n_mtp:,} in `mtp.*`; embeddings {t["vocab_size"] * t["hidden_size"]:,}, shared with the LM head) |
| trained context | 256 tokens (`max_position_embeddings` says 4096; quality beyond 256 is untested) |

The math is exactly `/work/shared/docs/qwen35-architecture.md` §3–7 and §9 (see `tools/train/model.py`).

## Training

* Corpus: `/usr/lib/python3.11/**/*.py` (Debian), without `test/`, `tests/`, `idle_test/`, site/dist-packages:
  620 training files = 3.15M tokens (3.4 bytes/token); 18 held-out files (md5 of path % 100 < 3) = 59.6k tokens.
* Objective: LM loss + 0.5 × MTP loss (MTP at position p gets the trunk's post-norm hidden h_p and token
  x_(p+1), predicts x_(p+2); gradients flow into the trunk).
* AdamW (β 0.9/0.95, wd 0.05 on matrices), lr 2e-3, 40 warmup steps, cosine to 1e-4; batch 8 × 256 tokens;
  grad clip 1.0; seed 1234; f32 on CPU, 2 threads, on a 2-core machine shared with parallel C++ builds
  (load average 6–12 for most of the run, ~150–500 tokens/s; ~1000 tokens/s in the last 15 minutes).
* {int(last[0])} steps, {int(last[6]):,} tokens seen (~{last[6] / 3153405:.2f} epochs), {last[5] / 60:.1f} min of training time (sum over the resumed runs, as counted in the checkpoints).
* {args.history}

| step | held-out loss | held-out ppl | held-out MTP loss |
|---|---|---|---|
{ev}

Final train loss (mean of the last {n_last} logged steps): LM {avg_loss:.3f}, MTP {avg_mtp:.3f}.

## Measured (exported BF16 weights, computed in f32; `tools/train/measure.py`)

* Held-out perplexity per token: **{ms["heldout_ppl"]:.2f}** (loss {ms["heldout_loss"]:.4f} nats/token over
  {ms["heldout_tokens_scored"]:,} tokens, non-overlapping 256-token windows).
* Held-out MTP (predicting x_(p+2) from h_p and x_(p+1)): loss {ms["heldout_mtp_loss"]:.4f}, ppl {ms["heldout_mtp_ppl"]:.2f},
  top-1 accuracy vs the real text {100 * ms["heldout_mtp_top1_vs_text"]:.1f}%.
* MTP acceptance on greedy continuations ({ms["acceptance_setup"]}; {acc["positions"]} positions):

| draft depth | conditional (draft k right given 1..k-1 right) | cumulative (drafts 1..k all right) |
|---|---|---|
| 1 | {100 * acc["depth1"]:.1f}% | {100 * acc["depth1"]:.1f}% |
| 2 (chained) | {100 * acc["depth2_conditional"]:.1f}% | {100 * acc["depth2_cumulative"]:.1f}% |
| 3 (chained) | {100 * acc["depth3_conditional"]:.1f}% | {100 * acc["depth3_cumulative"]:.1f}% |

  Expected accepted drafts per verify step: {acc["expected_accepted_drafts"]["k1"]:.2f} (1 draft),
  {acc["expected_accepted_drafts"]["k2"]:.2f} (2 drafts), {acc["expected_accepted_drafts"]["k3"]:.2f} (3 drafts).
  Chaining = vLLM's: next step takes the previous draft token and the previous MTP output hidden (after
  `mtp.norm`) at position + 1, appending to the same MTP KV cache.

## Samples (greedy, held-out prompts)

Greedy output of a model this small falls into loops quickly (which also helps the MTP acceptance above:
repetitions are easy to draft).

{samples}## Reference outputs

`tests/data/nextn-tiny-ref/` holds float64 reference logits / hidden states / MTP outputs / greedy tokens
computed by the torch model on these exact BF16 weights (see its `index.json`).

## Reproduce

See `tools/train/README.md`.
"""
    with open(os.path.join(args.model, "README.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
