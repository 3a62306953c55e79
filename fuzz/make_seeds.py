#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (fuzz/corpus/<target>/) from the committed test data.

Seeds are small valid files, a few KB each, so the fuzzers start from inputs that get past the
magic and length checks and spend their time in the interesting parts of the readers:
- gguf: the metadata of a llama.cpp-made fixture GGUF (tokenizer arrays cut to a few entries,
  every tensor info kept with a tiny shape of its own type), when ../shared/fixtures has one,
  and a synthetic file that uses every metadata value type and several block-quantized types;
- safetensors: the first tensors of tests/data/qwen35-dense-tiny/model.safetensors with their
  real names and dtypes, shapes shrunk and data offsets rewritten;
- config: the committed dense and MoE config.json files and a text-only variant without
  layer_types and head_dim (so the derived defaults are exercised);
- chat_template: the Qwen3 and tiny-fixture chat templates, ChatML, and small templates that
  each use one feature (loops, macros, filters, slicing, namespace, ...), one of them followed by
  a NUL byte and a message content (chat_template_fuzz renders that as the user's text);
- tokenizer: the tiny fixture's golden texts and a few prompts (special tokens, code, mixed
  scripts, ill-formed UTF-8).

Usage: fuzz/make_seeds.py  (run from anywhere; rewrites fuzz/corpus/ in place)
"""
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
DATA = os.path.join(ROOT, "tests", "data")
FIXTURES = os.environ.get("NEXTN_FIXTURES") or os.path.join(ROOT, "..", "shared", "fixtures")

# ---- GGUF ----
SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q",
          11: "<q", 12: "<d"}
# ggml type id -> (block size, block bytes)
GGML_BLOCK = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
              8: (32, 34), 12: (256, 144), 13: (256, 176), 14: (256, 210), 30: (1, 2)}


class GgufReader:
    """Just enough of a GGUF reader to copy a fixture's metadata and tensor infos."""

    def __init__(self, data):
        self.d, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.pos)
        self.pos += struct.calcsize(fmt)
        return v if len(v) > 1 else v[0]

    def string(self):
        n = self.take("<Q")
        s = self.d[self.pos:self.pos + n]
        self.pos += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<IQ")
            return (et, [self.value(et) for _ in range(n)])
        return self.take(SCALAR[t])


def put_string(out, s):
    if isinstance(s, str):
        s = s.encode()
    out += struct.pack("<Q", len(s)) + s


def put_value(out, t, v):
    if t == 8:
        put_string(out, v)
    elif t == 9:
        et, items = v
        out += struct.pack("<IQ", et, len(items))
        for item in items:
            put_value(out, et, item)
    else:
        out += struct.pack(SCALAR[t], v)


def build_gguf(kvs, tensors, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, ne list, ggml type)] -> file bytes."""
    out = bytearray(b"GGUF") + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, t, v in kvs:
        put_string(out, key)
        out += struct.pack("<I", t)
        put_value(out, t, v)
    offset, blobs = 0, []
    for name, ne, gtype in tensors:
        block, block_bytes = GGML_BLOCK[gtype]
        numel = 1
        for n in ne:
            numel *= n
        nbytes = numel // block * block_bytes
        put_string(out, name)
        out += struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        out += struct.pack("<IQ", gtype, offset)
        blobs.append((offset, bytes((i * 7 + 1) & 0xFF for i in range(nbytes))))
        offset += (nbytes + alignment - 1) // alignment * alignment
    out += bytes(-len(out) % alignment)
    data = bytearray(offset)
    for off, blob in blobs:
        data[off:off + len(blob)] = blob
    return bytes(out + data)


def shrunk_fixture_gguf(path, max_tensors=24):
    r = GgufReader(open(path, "rb").read())
    assert r.take("<I") == 0x46554747, path
    r.take("<I")
    n_tensors, n_kv = r.take("<QQ")
    kvs = []
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        v = r.value(t)
        if t == 9 and len(v[1]) > 16:
            v = (v[0], v[1][:16])  # tokenizer tables: a few entries are enough
        kvs.append((key, t, v))
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.take("<I")
        r.take("<%dQ" % n_dims)
        gtype, _offset = r.take("<IQ")
        block = GGML_BLOCK.get(gtype, (32, 0))[0]
        ne = [block] + [1] * (n_dims - 1)  # one block: tiny, still a whole row
        if gtype in GGML_BLOCK and len(tensors) < max_tensors:
            tensors.append((name, ne, gtype))
    return build_gguf(kvs, tensors)


def synthetic_gguf():
    kvs = [
        ("general.architecture", 8, "qwen35"),
        ("general.alignment", 4, 64),
        ("t.u8", 0, 200), ("t.i8", 1, -3), ("t.u16", 2, 60000), ("t.i16", 3, -2),
        ("t.u32", 4, 7), ("t.i32", 5, -7), ("t.f32", 6, 0.5), ("t.bool", 7, 1),
        ("t.u64", 10, 2**63 + 5), ("t.i64", 11, -(2**40)), ("t.f64", 12, 1e-6),
        ("t.ints", 9, (5, [1, -2, 3])), ("t.floats", 9, (6, [0.25, -1.5])),
        ("t.strings", 9, (8, ["a", "bc", ""])),
        ("t.nested", 9, (9, [(4, [1, 2]), (8, ["x"])])),
    ]
    tensors = [("f32", [4, 2], 0), ("f16", [8], 1), ("bf16", [2, 2, 2], 30),
               ("q8_0", [32, 2], 8), ("q4_0", [32], 2), ("q4_k", [256], 12),
               ("q6_k", [256], 14)]
    return build_gguf(kvs, tensors, alignment=64)


# ---- safetensors ----
ELEM = {"F32": 4, "F16": 2, "BF16": 2, "U32": 4, "I32": 4}


def shrunk_safetensors(path, count):
    data = open(path, "rb").read()
    (header_len,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8:8 + header_len])
    out, offset = {}, 0
    if "__metadata__" in header:
        out["__metadata__"] = header["__metadata__"]
    names = [n for n in header if n != "__metadata__"][:count]
    for i, name in enumerate(names):
        shape = [2, 3] if i % 3 else ([4] if i % 2 else [])
        dtype = header[name]["dtype"]
        numel = 1
        for n in shape:
            numel *= n
        nbytes = numel * ELEM[dtype]
        out[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(out, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the writers pad the header to 8 bytes
    return struct.pack("<Q", len(text)) + text + bytes(range(256)) * (offset // 256) + bytes(offset % 256)


def write(target, name, blob):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(blob)
    print("%-40s %6d bytes" % (os.path.join("fuzz/corpus", target, name), len(blob)))


def main():
    write("gguf", "synthetic.gguf", synthetic_gguf())
    fixture = os.path.join(FIXTURES, "qwen35-dense-tiny", "mtp-model-bf16.gguf")
    if os.path.exists(fixture):
        write("gguf", "qwen35-mtp-shrunk.gguf", shrunk_fixture_gguf(fixture))
    else:
        print("note: %s not found, fixture-derived GGUF seed not written" % fixture, file=sys.stderr)
    fixture = os.path.join(FIXTURES, "qwen35-moe-tiny", "model-Q4_K_M.gguf")
    if os.path.exists(fixture):
        write("gguf", "qwen35moe-q4km-shrunk.gguf", shrunk_fixture_gguf(fixture))

    dense = os.path.join(DATA, "qwen35-dense-tiny")
    moe = os.path.join(DATA, "qwen35-moe-tiny")
    write("safetensors", "dense.safetensors", shrunk_safetensors(os.path.join(dense, "model.safetensors"), 8))
    write("safetensors", "moe.safetensors", shrunk_safetensors(os.path.join(moe, "model.safetensors"), 12))

    for name, src in (("dense.json", dense), ("moe.json", moe)):
        write("config", name, open(os.path.join(src, "config.json"), "rb").read())
    # Text-only layout (fields at top level, no layer_types: the interval rule applies; no
    # head_dim: hidden_size / num_attention_heads applies).
    cfg = json.load(open(os.path.join(dense, "config.json")))
    text = dict(cfg.get("text_config", cfg))
    text.pop("layer_types", None)
    text.pop("head_dim", None)
    text["model_type"] = "qwen3_5_text"
    write("config", "text-only.json", json.dumps(text, indent=1).encode())

    tokenizer = os.path.join(DATA, "tokenizer")
    for name, cfg in (("qwen3.jinja", "qwen3"), ("tiny.jinja", "dense-tiny")):
        tpl = json.load(open(os.path.join(tokenizer, cfg, "tokenizer_config.json")))["chat_template"]
        write("chat_template", name, tpl.encode())
    for name, tpl in CHAT_TEMPLATE_SEEDS.items():
        write("chat_template", name + ".jinja", tpl.encode())

    texts = json.load(open(os.path.join(tokenizer, "dense-tiny", "tokenize.json")))["texts"]
    for i, text in enumerate(texts):
        write("tokenizer", "golden-%02d.txt" % i, text.encode())
    for name, blob in TOKENIZER_SEEDS.items():
        write("tokenizer", name, blob)


# ---- chat templates and prompt text ----
CHATML = ("{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
          "'<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
          "{%- endif %}")
CHAT_TEMPLATE_SEEDS = {
    "chatml": CHATML,
    "loops": "{% for m in messages if m.role != 'system' %}{{ loop.index }}/{{ loop.length }}"
             "{% if loop.first %}F{% elif loop.last %}L{% else %}{{ loop.cycle('a', 'b') }}{% endif %}"
             "{% if m.role == 'tool' %}{% continue %}{% endif %}{{ m.content }}{% else %}none{% endfor %}"
             "{% for k, v in {'a': 1, 'b': [2, 3]}.items() %}{{ k }}={{ v }}{% break %}{% endfor %}",
    "macros": "{% macro render(m, prefix='>', sep=none) %}{{ prefix }}{{ m.role|upper }}: "
              "{{ m.content|trim }}{% endmacro %}{% for m in messages %}{{ render(m) }}"
              "{{ render(m, prefix='#') }}{% endfor %}{% set block %}x{{ 1 + 2 }}{% endset %}{{ block }}",
    "filters": "{{ tools|tojson }}{{ tools|tojson(indent=2) }}{{ messages|map(attribute='role')|unique|join(',') }}"
               "{{ messages|selectattr('role', 'equalto', 'user')|list|length }}{{ [3, 1, 2]|sort|reverse|first }}"
               "{{ 'a b'|title }}{{ ' x '|trim|default('d') }}{{ messages|rejectattr('tool_calls')|list|count }}"
               "{{ '5'|int + 2.5|round|int }}{{ {'b': 1, 'a': 2}|dictsort }}{{ 'x'|indent(4, true) }}",
    "slicing": "{{ messages[1:] }}{{ messages[::-1][0].role }}{{ messages[-1].content[::2] }}"
               "{{ 'hello'[1:-1] }}{{ [1, 2, 3, 4][1::2] }}{{ messages[0]['content'][:5] }}",
    "namespace": "{% set ns = namespace(last=-1, found=false) %}{% for m in messages[::-1] %}"
                 "{% if not ns.found and m.role == 'user' %}{% set ns.found = true %}"
                 "{% set ns.last = messages|length - loop.index %}{% endif %}{% endfor %}{{ ns.last }}",
    "strings": "{% for m in messages %}{% set c = m.content %}{% if '</think>' in c %}"
               "{{ c.split('</think>')[-1].lstrip('\\n') }}{{ c.split('<think>')[0].rstrip() }}{% endif %}"
               "{{ c.startswith('<tool_response>') }}{{ c.replace('a', 'b', 1) }}{{ c.find('x') }}"
               "{{ c ~ 1 ~ none }}{{ c * 2 }}{{ c|e }}{{ c|length }}{% endfor %}",
    "expressions": "{{ 7 // 2 }}{{ -7 % 3 }}{{ 2 ** 10 }}{{ 1 < 2 < 3 }}{{ 'a' if x is defined else 'b' }}"
                   "{{ (1, 2) }}{{ [1] + [2] }}{{ not none }}{{ 1 in [1] }}{{ range(1, 7, 2)|list }}"
                   "{{ x is not none and x.y }}{{ 0.1 + 0.2 }}{{ 1e300 * 1e300 }}{{ enable_thinking is false }}",
    "whitespace": "  {%- if true -%}  a  {%+ if false %}b{% endif %}\n{# c #}{% raw %}{{ d }}{% endraw %}"
                  "{{- ' e ' -}}\n",
    "tools": "{% if tools %}{% for tool in tools %}{{ tool.function.name }}({{ tool.function.parameters.properties"
             "|items|map('first')|join(', ') }}){% endfor %}{% endif %}{% for m in messages %}{% if m.tool_calls %}"
             "{% for tc in m.tool_calls %}{% set f = tc.function if tc.function else tc %}{{ f.name }}"
             "{{ f.arguments|tojson if f.arguments is not string else f.arguments }}{% endfor %}{% endif %}"
             "{% endfor %}{{ raise_exception('bad') if messages|length > 100 }}",
    "content": "{{ messages[1].content|tojson }}{{ messages[1].content|e }}{{ messages[1].content[1:-1] }}"
               "{{ messages[1].content.split()|reverse|join('.') }}{{ messages[1].content|upper|length }}"
               "\0<|im_start|>user\n\"quoted\" 'single' \\ é 日本 <think>x</think>\t\x01",
}
TOKENIZER_SEEDS = {
    "chat.txt": "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
                "<|im_start|>assistant\n<think>\n\n</think>\n\n".encode(),
    "code.txt": "def f(x):\n    return x ** 2  # squared\r\n\tif x != 0:\n\t\tpass\n\n\n".encode(),
    "scripts.txt": "Ça va? Ünïcödé e\u0301 \u00e9 한국어 العربية हिन्दी 😀👍🏽 \u200b\u00a0x".encode(),
    "numbers.txt": "1234567890 3.14159 -42 1e10 0x1F 1,000,000".encode(),
    "invalid-utf8.bin": b"ok \xff\xfe \xc3 \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf end",
}


if __name__ == "__main__":
    main()
