#!/usr/bin/python3
"""Export a training checkpoint to the official Hugging Face Qwen3.5 multimodal layout:
  <out>/config.json, <out>/model.safetensors (BF16, hand-written), <out>/tokenizer.json, <out>/tokenizer_config.json

  /usr/bin/python3 tools/train/export.py --ckpt tools/train/runs/main/final.pt --out models/nextn-tiny

Also provides load_exported() (used by refs.py / measure.py) to read the BF16 file back into a Qwen35 module.
"""
import argparse
import json
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fastblas  # noqa: E402,F401
import numpy as np  # noqa: E402
import torch  # noqa: E402

from model import Config, Qwen35  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))


def hf_name(n):
    if n.startswith("mtp."):
        return n
    return "model.language_model." + n


def internal_name(n):
    if n.startswith("mtp."):
        return n
    assert n.startswith("model.language_model."), n
    return n[len("model.language_model."):]


def bf16_bytes(t):
    """float tensor -> little-endian bf16 bytes (round to nearest even, as torch's .to(bfloat16))."""
    b = t.detach().to(torch.bfloat16).contiguous().view(torch.int16).numpy().astype("<i2")
    return b.tobytes()


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, torch tensor) -> standard safetensors file, BF16."""
    header = {}
    blobs = []
    off = 0
    for name, t in sorted(tensors, key=lambda x: x[0]):
        data = bf16_bytes(t)
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    if metadata:
        header["__metadata__"] = metadata
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((-len(hj)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """-> dict name -> float64 torch tensor (BF16/F32 widened exactly)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            a, b = info["data_offsets"]
            f.seek(base + a)
            raw = f.read(b - a)
            if info["dtype"] == "BF16":
                u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
                arr = u.view(np.float32).astype(np.float64)
            elif info["dtype"] == "F32":
                arr = np.frombuffer(raw, dtype="<f4").astype(np.float64)
            else:
                raise ValueError(info["dtype"])
            out[name] = torch.from_numpy(arr.reshape(info["shape"]).copy())
    return out


def hf_config(cfg: Config, eos_id):
    rot = int(cfg.head_dim * cfg.partial_rotary_factor)
    half = rot // 2
    base, rem = half // 3, half % 3
    s = [base + (rem > 0), base + (rem > 1), base]  # sums to rot/2: [11,11,10] for 32 pairs, [3,3,2] for 8
    text = {
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_output_gate": True,
        "dtype": "bfloat16",
        "eos_token_id": eos_id,
        "full_attention_interval": cfg.full_attention_interval,
        "head_dim": cfg.head_dim,
        "hidden_act": "silu",
        "hidden_size": cfg.hidden_size,
        "initializer_range": cfg.initializer_range,
        "intermediate_size": cfg.intermediate_size,
        "layer_types": list(cfg.layer_types),
        "linear_conv_kernel_dim": cfg.linear_conv_kernel_dim,
        "linear_key_head_dim": cfg.linear_key_head_dim,
        "linear_num_key_heads": cfg.linear_num_key_heads,
        "linear_num_value_heads": cfg.linear_num_value_heads,
        "linear_value_head_dim": cfg.linear_value_head_dim,
        "mamba_ssm_dtype": "float32",
        "max_position_embeddings": 4096,
        "model_type": "qwen3_5_text",
        "mtp_num_hidden_layers": cfg.mtp_num_hidden_layers,
        "mtp_use_dedicated_embeddings": False,
        "num_attention_heads": cfg.num_attention_heads,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_key_value_heads": cfg.num_key_value_heads,
        "pad_token_id": None,
        "partial_rotary_factor": cfg.partial_rotary_factor,
        "rms_norm_eps": cfg.rms_norm_eps,
        "rope_parameters": {
            "mrope_interleaved": True,
            "mrope_section": s,
            "partial_rotary_factor": cfg.partial_rotary_factor,
            "rope_theta": int(cfg.rope_theta) if float(cfg.rope_theta).is_integer() else cfg.rope_theta,
            "rope_type": "default",
        },
        "tie_word_embeddings": True,
        "use_cache": True,
        "vocab_size": cfg.vocab_size,
    }
    return {
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "model_type": "qwen3_5",
        "text_config": text,
        "tie_word_embeddings": True,
        "transformers_version": "4.57.1",
    }


def config_from_hf(hc):
    t = hc.get("text_config", hc)
    return Config(
        vocab_size=t["vocab_size"], hidden_size=t["hidden_size"], intermediate_size=t["intermediate_size"],
        num_hidden_layers=t["num_hidden_layers"], layer_types=list(t["layer_types"]),
        full_attention_interval=t["full_attention_interval"], linear_num_key_heads=t["linear_num_key_heads"],
        linear_num_value_heads=t["linear_num_value_heads"], linear_key_head_dim=t["linear_key_head_dim"],
        linear_value_head_dim=t["linear_value_head_dim"], linear_conv_kernel_dim=t["linear_conv_kernel_dim"],
        num_attention_heads=t["num_attention_heads"], num_key_value_heads=t["num_key_value_heads"],
        head_dim=t["head_dim"], rope_theta=float(t["rope_parameters"]["rope_theta"]),
        partial_rotary_factor=t["rope_parameters"]["partial_rotary_factor"], rms_norm_eps=t["rms_norm_eps"],
        mtp_num_hidden_layers=t["mtp_num_hidden_layers"])


def load_exported(model_dir, dtype=torch.float64):
    """Build a Qwen35 from an exported folder; BF16 weights widened exactly to `dtype`."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = config_from_hf(json.load(f))
    m = Qwen35(cfg)
    w = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    sd = {internal_name(k): v for k, v in w.items()}
    missing, unexpected = m.load_state_dict(sd, strict=True), None
    del missing, unexpected
    return m.to(dtype).eval(), cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default=os.path.join(HERE, "runs", "main", "final.pt"))
    ap.add_argument("--out", default=os.path.join(REPO, "models", "nextn-tiny"))
    ap.add_argument("--tok", default=os.path.join(HERE, "runs", "tok"))
    args = ap.parse_args()
    ck = torch.load(args.ckpt, map_location="cpu")
    cfg = Config(**ck["config"])
    m = Qwen35(cfg)
    m.load_state_dict(ck["model"])
    os.makedirs(args.out, exist_ok=True)
    tensors = [(hf_name(n), p) for n, p in m.state_dict().items()]
    assert not any(n == "lm_head.weight" for n, _ in tensors)
    write_safetensors(os.path.join(args.out, "model.safetensors"), tensors, {"format": "pt"})
    with open(os.path.join(args.tok, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    special = {t["content"]: t["id"] for t in tj["added_tokens"]}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(hf_config(cfg, special["<|endoftext|>"]), f, indent=2)
        f.write("\n")
    for fn in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(args.tok, fn), os.path.join(args.out, fn))
    # round-trip check
    m2, _ = load_exported(args.out, torch.float32)
    sd2 = m2.state_dict()
    err = max((sd2[k] - v.to(torch.bfloat16).float()).abs().max().item() for k, v in m.state_dict().items())
    size = os.path.getsize(os.path.join(args.out, "model.safetensors"))
    print(f"exported step {ck.get('step')} -> {args.out}: {len(tensors)} tensors, {size} bytes, "
          f"round-trip max err {err:.1e}")


if __name__ == "__main__":
    main()
