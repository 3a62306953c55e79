#!/usr/bin/python3
"""Writes a GGUF file with a released Qwen3.5 dense model's shapes and random weights.

Offline tool (Python 3 and Debian's python3-numpy). Its one job: let another engine and nextn
time the same bytes on the same machine. `nextn bench --synthetic` builds its models in memory;
llama.cpp's llama-bench needs a file. Both engines load this file, so a comparison of their
`bench` figures compares kernels, not weight layouts or types.

    tools/synthetic_gguf/synthetic_gguf.py OUT.gguf [--model qwen3.5-0.8b] [--type q4_0|q8_0]

Every matrix, the (tied) embedding included, is of the one --type, as llama-quantize --pure
writes them; norms, the Gated DeltaNet's conv, decay and dt bias stay f32, as every Qwen3.5
GGUF has them. The quantized blocks hold random codes under one small scale: dense speed does
not depend on the values (no routing), and a small scale keeps activations finite. The
vocabulary (248320 tokens for the releases) is placeholders ("<t300>") but for the 256 GPT-2 byte tokens,
which llama.cpp's BPE loader needs (it looks up the newline token). No text is tokenized by a
benchmark, so nothing else depends on them.

Layout and keys follow the GGUF v3 specification (ggml's docs/gguf.md) and the qwen35 keys of
the GGUF fixtures in ../shared/fixtures (written by an independent converter).
"""
import argparse
import os
import struct
import sys

# The dense releases' text-model shapes (docs/qwen35-architecture.md section 1.3), a copy of
# src/model/synthetic.cpp's table (tests/cli/synthetic_gguf_shapes.py checks that the two agree),
# and "tiny", a few-MB model of the same structure for the tool's own test
# (tests/cli/synthetic_gguf.sh). Every fourth layer is full attention; one MTP layer follows the
# trunk.
RELEASE = dict(vocab=248320, head_dim=256, rotary_dims=64, gdn_dim=128, conv_kernel=4,
               rope_sections=[11, 11, 10, 0])  # rope_sections: mrope_section of config.json
MODELS = {
    "qwen3.5-0.8b": dict(RELEASE, layers=24, hidden=1024, ffn=3584, q_heads=8, kv_heads=2,
                         gdn_k=16, gdn_v=16, tied=True),
    "qwen3.5-2b": dict(RELEASE, layers=24, hidden=2048, ffn=6144, q_heads=8, kv_heads=2,
                       gdn_k=16, gdn_v=16, tied=True),
    "qwen3.5-9b": dict(RELEASE, layers=32, hidden=4096, ffn=12288, q_heads=16, kv_heads=4,
                       gdn_k=16, gdn_v=32, tied=False),
    "tiny": dict(vocab=512, head_dim=64, rotary_dims=16, gdn_dim=32, conv_kernel=4,
                 rope_sections=[3, 3, 2, 0], layers=4, hidden=128, ffn=256, q_heads=4,
                 kv_heads=2, gdn_k=2, gdn_v=4, tied=False),
}

# GGUF value types and ggml tensor types (GGUF v3).
GGUF_U32, GGUF_F32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY, GGUF_I32 = 4, 6, 7, 8, 9, 5
GGML_F32, GGML_Q4_0, GGML_Q8_0 = 0, 2, 8
QUANT = {  # ggml type, bytes per 32-value block (f16 scale + codes), llama file_type
    "q4_0": (GGML_Q4_0, 18, 2),
    "q8_0": (GGML_Q8_0, 34, 7),
}
ALIGNMENT = 32


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


class Writer:
    """Collects key-values and tensors, then writes header, tensor infos and aligned data.

    A tensor's bytes are made only as it is written (make() returns them), so memory holds one
    tensor at a time: the 9B at q8_0 is 9.6 GB."""

    def __init__(self):
        self.kv = []       # encoded key-value records
        self.tensors = []  # (name, ggml dims ne0-first, ggml type, byte count, make)

    def u32(self, key, v):
        self.kv.append(gguf_string(key) + struct.pack("<II", GGUF_U32, v))

    def f32(self, key, v):
        self.kv.append(gguf_string(key) + struct.pack("<If", GGUF_F32, v))

    def boolean(self, key, v):
        self.kv.append(gguf_string(key) + struct.pack("<I?", GGUF_BOOL, v))

    def string(self, key, v):
        self.kv.append(gguf_string(key) + struct.pack("<I", GGUF_STRING) + gguf_string(v))

    def i32_array(self, key, values):
        self.kv.append(gguf_string(key) + struct.pack("<IIQ", GGUF_ARRAY, GGUF_I32, len(values)) +
                       struct.pack(f"<{len(values)}i", *values))

    def string_array(self, key, values):
        body = b"".join(gguf_string(v) for v in values)
        self.kv.append(gguf_string(key) + struct.pack("<IIQ", GGUF_ARRAY, GGUF_STRING, len(values)) + body)

    def tensor(self, name, dims, ggml_type, nbytes, make):
        self.tensors.append((name, dims, ggml_type, nbytes, make))

    def write(self, path):
        with open(path, "wb") as f:
            f.write(b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), len(self.kv)))
            for record in self.kv:
                f.write(record)
            offset = 0
            for name, dims, ggml_type, nbytes, _ in self.tensors:
                f.write(gguf_string(name) + struct.pack("<I", len(dims)))
                f.write(struct.pack(f"<{len(dims)}Q", *dims))
                f.write(struct.pack("<IQ", ggml_type, offset))
                offset += -(-nbytes // ALIGNMENT) * ALIGNMENT
            f.write(b"\0" * (-f.tell() % ALIGNMENT))
            for name, _, _, nbytes, make in self.tensors:
                data = make()
                assert len(data) == nbytes, name
                f.write(data)
                f.write(b"\0" * (-nbytes % ALIGNMENT))


def gpt2_byte_tokens():
    """The 256 printable stand-ins GPT-2's byte-level BPE gives the bytes (its bytes_to_unicode)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + \
        list(range(0xAE, 0xFF + 1))
    extra = 0
    chars = []
    for b in range(256):
        if b in printable:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + extra))
            extra += 1
    return chars


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--model", default="qwen3.5-0.8b", choices=sorted(MODELS))
    ap.add_argument("--type", default="q4_0", choices=sorted(QUANT))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    # Imported here, not at the top, so that the shape table and the flags' checks need no numpy
    # (tests/cli/synthetic_gguf_shapes.py reads the table where numpy is absent).
    global np
    try:
        import numpy as np
    except ImportError:
        sys.exit("synthetic_gguf.py needs numpy to write weights: install Debian's python3-numpy")

    m = MODELS[args.model]
    layers, hidden, ffn, vocab = m["layers"], m["hidden"], m["ffn"], m["vocab"]
    q_heads, kv_heads, head_dim = m["q_heads"], m["kv_heads"], m["head_dim"]
    gdn_k, gdn_v, gdn_dim, conv_kernel = m["gdn_k"], m["gdn_v"], m["gdn_dim"], m["conv_kernel"]
    ggml_type, block_bytes, file_type = QUANT[args.type]
    conv_channels = 2 * gdn_k * gdn_dim + gdn_v * gdn_dim  # [q | k | v] of the fused projection
    gdn_inner = gdn_v * gdn_dim
    rng = np.random.default_rng(args.seed)
    arch = "qwen35"

    w = Writer()
    w.string("general.architecture", arch)
    w.string("general.type", "model")
    w.string("general.name", f"synthetic {args.model} ({args.type}, random weights)")
    w.u32("general.alignment", ALIGNMENT)
    w.u32(f"{arch}.block_count", layers + 1)  # the MTP layer is the last block
    w.u32(f"{arch}.context_length", 262144)
    w.u32(f"{arch}.embedding_length", hidden)
    w.u32(f"{arch}.feed_forward_length", ffn)
    w.u32(f"{arch}.attention.head_count", q_heads)
    w.u32(f"{arch}.attention.head_count_kv", kv_heads)
    w.i32_array(f"{arch}.rope.dimension_sections", m["rope_sections"])
    w.f32(f"{arch}.rope.freq_base", 1e7)
    w.f32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    w.u32(f"{arch}.attention.key_length", head_dim)
    w.u32(f"{arch}.attention.value_length", head_dim)
    w.u32(f"{arch}.nextn_predict_layers", 1)
    w.u32(f"{arch}.ssm.conv_kernel", conv_kernel)
    w.u32(f"{arch}.ssm.state_size", gdn_dim)
    w.u32(f"{arch}.ssm.group_count", gdn_k)
    w.u32(f"{arch}.ssm.time_step_rank", gdn_v)
    w.u32(f"{arch}.ssm.inner_size", gdn_inner)
    w.u32(f"{arch}.full_attention_interval", 4)
    w.u32(f"{arch}.rope.dimension_count", m["rotary_dims"])

    tokens = [f"<t{i}>" for i in range(vocab)]
    tokens[:256] = gpt2_byte_tokens()
    w.string("tokenizer.ggml.model", "gpt2")
    w.string("tokenizer.ggml.pre", "qwen35")
    w.string_array("tokenizer.ggml.tokens", tokens)
    w.i32_array("tokenizer.ggml.token_type", [1] * vocab)  # 1 = normal
    w.string_array("tokenizer.ggml.merges", [])
    w.u32("tokenizer.ggml.eos_token_id", vocab - 1)
    w.boolean("tokenizer.ggml.add_bos_token", False)
    w.u32("general.quantization_version", 2)
    w.u32("general.file_type", file_type)

    def matrix(name, n_in, n_out):
        # [n_out, n_in / 32 blocks]: each block an f16 scale then random codes.
        blocks = n_in // 32

        def make():
            raw = rng.integers(0, 256, size=(n_out, blocks, block_bytes), dtype=np.uint8)
            raw[:, :, 0:2] = np.frombuffer(np.float16(0.002).tobytes(), dtype=np.uint8)
            return raw.tobytes()
        w.tensor(name, [n_in, n_out], ggml_type, n_out * blocks * block_bytes, make)

    def vector(name, shape, value=None):
        # shape ne0-first, as GGUF lists it
        n = int(np.prod(shape))

        def make():
            a = np.full(n, value, np.float32) if value is not None else \
                rng.standard_normal(n).astype(np.float32) * 0.1
            return a.tobytes()
        w.tensor(name, list(shape), GGML_F32, 4 * n, make)

    matrix("token_embd.weight", hidden, vocab)
    if not m["tied"]:
        matrix("output.weight", hidden, vocab)
    vector("output_norm.weight", [hidden], 1.0)
    for i in range(layers + 1):
        p = f"blk.{i}."
        is_mtp = i == layers
        vector(p + "attn_norm.weight", [hidden], 1.0)
        vector(p + "post_attention_norm.weight", [hidden], 1.0)
        matrix(p + "ffn_gate.weight", hidden, ffn)
        matrix(p + "ffn_up.weight", hidden, ffn)
        matrix(p + "ffn_down.weight", ffn, hidden)
        if (i + 1) % 4 != 0 and not is_mtp:  # Gated DeltaNet layer
            matrix(p + "attn_qkv.weight", hidden, conv_channels)
            matrix(p + "attn_gate.weight", hidden, gdn_inner)
            matrix(p + "ssm_alpha.weight", hidden, gdn_v)
            matrix(p + "ssm_beta.weight", hidden, gdn_v)
            matrix(p + "ssm_out.weight", gdn_inner, hidden)
            vector(p + "ssm_a", [gdn_v], -1.0)
            vector(p + "ssm_dt.bias", [gdn_v], 0.0)
            vector(p + "ssm_conv1d.weight", [conv_kernel, conv_channels])
            vector(p + "ssm_norm.weight", [gdn_dim], 1.0)
        else:  # full attention (the MTP layer's too); q_proj holds the query and its gate
            matrix(p + "attn_q.weight", hidden, 2 * q_heads * head_dim)
            matrix(p + "attn_k.weight", hidden, kv_heads * head_dim)
            matrix(p + "attn_v.weight", hidden, kv_heads * head_dim)
            matrix(p + "attn_output.weight", q_heads * head_dim, hidden)
            vector(p + "attn_q_norm.weight", [head_dim], 1.0)
            vector(p + "attn_k_norm.weight", [head_dim], 1.0)
        if is_mtp:
            matrix(p + "nextn.eh_proj.weight", 2 * hidden, hidden)
            vector(p + "nextn.enorm.weight", [hidden], 1.0)
            vector(p + "nextn.hnorm.weight", [hidden], 1.0)
            vector(p + "nextn.shared_head_norm.weight", [hidden], 1.0)
    # Written beside OUT and renamed over it at the end: an interrupted run leaves no half file.
    part = args.out + ".part"
    try:
        w.write(part)
        os.replace(part, args.out)
    except OSError as e:
        print(f"synthetic_gguf.py: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return 1
    finally:
        if os.path.exists(part):  # a failed or interrupted write
            os.remove(part)
    size = sum(t[3] for t in w.tensors)
    print(f"wrote {args.out}: {args.model} shapes, {args.type}, {size / 1e9:.2f} GB of tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
