#!/usr/bin/python3
"""Tokenize the corpus into flat uint16 token streams (documents separated by <|endoftext|>).
Writes <out>/train.npy, <out>/heldout.npy and <out>/heldout_files.json."""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
from tok import Tokenizer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def encode_files(tk, files):
    eot = tk.special["<|endoftext|>"]
    out = []
    starts = []
    for p in files:
        starts.append(len(out))
        out.extend(tk.encode_ordinary(corpus.read_doc(p)))
        out.append(eot)
    return np.array(out, dtype=np.uint16), starts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "runs", "tok", "tokenizer.json"))
    ap.add_argument("--out", default=os.path.join(HERE, "runs", "data"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tk = Tokenizer(args.tokenizer)
    train_files, held_files = corpus.split_files()
    t0 = time.time()
    tr, _ = encode_files(tk, train_files)
    he, he_starts = encode_files(tk, held_files)
    np.save(os.path.join(args.out, "train.npy"), tr)
    np.save(os.path.join(args.out, "heldout.npy"), he)
    nbytes_tr = sum(len(corpus.read_doc(p).encode("utf-8")) for p in train_files)
    with open(os.path.join(args.out, "heldout_files.json"), "w") as f:
        json.dump({"files": held_files, "starts": he_starts}, f, indent=1)
    print(f"train: {len(train_files)} files {len(tr)} tokens ({nbytes_tr / len(tr):.2f} bytes/token); "
          f"heldout: {len(held_files)} files {len(he)} tokens; {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
