#!/usr/bin/python3
"""Train a byte-level BPE tokenizer (Qwen-style) on the corpus and save it in the
Hugging Face `tokenizer.json` / `tokenizer_config.json` format.

Vocabulary layout (ids):
  0..255                 the 256 byte tokens, in byte order, spelled with the GPT-2 byte->unicode map
  256..256+M-1           one token per merge, in merge order (rank)
  256+M .. 256+M+2       <|endoftext|>, <|im_start|>, <|im_end|>   (added tokens, special)

Usage:  /usr/bin/python3 tools/train/train_tokenizer.py --vocab-size 4096 --out tools/train/runs/tok
"""
import argparse
import heapq
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
from tok import (SPECIAL_TOKENS, PRETOKENIZE_PATTERN, bytes_to_unicode,  # noqa: E402
                 pretokenize)


def count_words(texts):
    counts = {}
    for text in texts:
        for piece in pretokenize(text):
            counts[piece] = counts.get(piece, 0) + 1
    return counts


def train_bpe(word_counts, n_merges, log_every=500):
    """Classic BPE training. Words are tuples of byte ids. Ties in pair frequency are broken
    by the smallest (left id, right id) pair so the result is deterministic."""
    words = []
    freqs = []
    for w, c in sorted(word_counts.items()):
        b = w.encode("utf-8")
        if len(b) < 2:
            continue
        words.append(list(b))
        freqs.append(c)
    pair_count = {}
    pair_where = {}
    for wi, w in enumerate(words):
        f = freqs[wi]
        for i in range(len(w) - 1):
            p = (w[i], w[i + 1])
            pair_count[p] = pair_count.get(p, 0) + f
            pair_where.setdefault(p, set()).add(wi)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    next_id = 256
    t0 = time.time()
    while len(merges) < n_merges and heap:
        negc, p = heapq.heappop(heap)
        c = pair_count.get(p, 0)
        if c != -negc:
            continue  # stale heap entry
        if c <= 0:
            break
        new_id = next_id
        next_id += 1
        merges.append(p)
        affected = pair_where.pop(p, set())
        del pair_count[p]
        changed = set()
        for wi in affected:
            w = words[wi]
            f = freqs[wi]
            # remove this word's old pair contributions
            for i in range(len(w) - 1):
                q = (w[i], w[i + 1])
                if q == p:
                    continue
                pair_count[q] -= f
                changed.add(q)
            # merge left to right, non-overlapping
            out = []
            i = 0
            n = len(w)
            while i < n:
                if i + 1 < n and w[i] == p[0] and w[i + 1] == p[1]:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[wi] = out
            for i in range(len(out) - 1):
                q = (out[i], out[i + 1])
                pair_count[q] = pair_count.get(q, 0) + f
                pair_where.setdefault(q, set()).add(wi)
                changed.add(q)
        for q in changed:
            c2 = pair_count.get(q, 0)
            if c2 > 0:
                heapq.heappush(heap, (-c2, q))
            else:
                pair_count.pop(q, None)
        if log_every and len(merges) % log_every == 0:
            print(f"  merges {len(merges)}  last count {c}  {time.time() - t0:.1f}s", flush=True)
    return merges


def build_tokenizer_json(merges):
    b2u = bytes_to_unicode()
    strings = [b2u[i] for i in range(256)]
    for a, b in merges:
        strings.append(strings[a] + strings[b])
    vocab = {}
    for i, s in enumerate(strings):
        assert s not in vocab, f"duplicate token string {s!r}"
        vocab[s] = i
    n = len(strings)
    added = []
    for j, tok in enumerate(SPECIAL_TOKENS):
        added.append({"id": n + j, "content": tok, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
    bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    tj = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": PRETOKENIZE_PATTERN}, "behavior": "Isolated", "invert": False},
            dict(bl)]},
        "post_processor": dict(bl),
        "decoder": dict(bl),
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
            "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab,
            "merges": [[strings[a], strings[b]] for a, b in merges],
        },
    }
    return tj


def build_tokenizer_config(n_base):
    dec = {}
    for j, tok in enumerate(SPECIAL_TOKENS):
        dec[str(n_base + j)] = {"content": tok, "single_word": False, "lstrip": False, "rstrip": False,
                                "normalized": False, "special": True}
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": dec,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "chat_template": ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
                          "{{ '<|im_start|>assistant\\n' }}{% endif %}"),
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 4096,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs", "tok"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    train_files, _ = corpus.split_files()
    texts = [corpus.read_doc(p) for p in train_files]
    t0 = time.time()
    wc = count_words(texts)
    print(f"{len(train_files)} train files, {len(wc)} unique pre-tokens ({time.time() - t0:.1f}s)", flush=True)
    n_merges = args.vocab_size - 256 - len(SPECIAL_TOKENS)
    merges = train_bpe(wc, n_merges)
    print(f"{len(merges)} merges ({time.time() - t0:.1f}s)", flush=True)
    tj = build_tokenizer_json(merges)
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, indent=1)
    with open(os.path.join(args.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(build_tokenizer_config(256 + len(merges)), f, ensure_ascii=False, indent=2)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
