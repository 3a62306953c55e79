#!/usr/bin/python3
"""Tokenizer checks: (1) tok.Tokenizer reproduces the fixture golden tokenization (made with HF-compatible
tokenizers and llama.cpp) on the fixture tokenizer.json; (2) the trained tokenizer round-trips held-out files."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
from tok import Tokenizer  # noqa: E402

FIX = "/work/shared/fixtures/qwen35-dense-tiny"


def main():
    ok = True
    if os.path.exists(os.path.join(FIX, "golden", "tokenize.json")):
        tk = Tokenizer(os.path.join(FIX, "tokenizer.json"))
        with open(os.path.join(FIX, "golden", "tokenize.json")) as f:
            gold = json.load(f)["texts"]
        for t, ids in gold.items():
            if tk.encode(t) != ids:
                print("fixture MISMATCH", repr(t))
                ok = False
        print(f"fixture golden: {len(gold)} texts checked")
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "runs", "tok", "tokenizer.json")
    tk = Tokenizer(path)
    _, held = corpus.split_files()
    n = 0
    for p in held:
        text = corpus.read_doc(p)
        ids = tk.encode(text)
        if tk.decode(ids) != text:
            print("round-trip MISMATCH", p)
            ok = False
        n += len(ids)
    print(f"trained tokenizer: {len(held)} held-out files round-trip, {n} tokens")
    print("TOKENIZER TEST", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
