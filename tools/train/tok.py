"""Byte-level BPE encoder/decoder matching Hugging Face `tokenizers` semantics for the tokenizer.json
written by train_tokenizer.py (NFC normalizer, Qwen split regex, ByteLevel, BPE merges by rank)."""
import json
import re as _re
import unicodedata

import regex

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen3.5 pre-tokenizer split pattern (same string as the fixture tokenizer.json; letters include \p{M})
PRETOKENIZE_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
                       r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_PAT = regex.compile(PRETOKENIZE_PATTERN)


def bytes_to_unicode():
    """GPT-2 byte -> printable unicode char map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def pretokenize(text):
    return _PAT.findall(text)


class Tokenizer:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        self.vocab = tj["model"]["vocab"]
        self.id_to_str = {i: s for s, i in self.vocab.items()}
        self.ranks = {}
        for r, (a, b) in enumerate(tj["model"]["merges"]):
            self.ranks[(a, b)] = r
        self.special = {t["content"]: t["id"] for t in tj["added_tokens"]}
        for s, i in self.special.items():
            self.id_to_str[i] = s
        self.vocab_size = max(self.id_to_str) + 1
        self.b2u = bytes_to_unicode()
        self.u2b = {c: b for b, c in self.b2u.items()}
        self._cache = {}
        self._special_re = _re.compile("(" + "|".join(_re.escape(s) for s in self.special) + ")")

    def _bpe(self, piece):
        ids = self._cache.get(piece)
        if ids is not None:
            return ids
        syms = [self.b2u[b] for b in piece.encode("utf-8")]
        ranks = self.ranks
        while len(syms) > 1:
            best = None
            best_rank = None
            for i in range(len(syms) - 1):
                r = ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best_rank = r
                    best = (syms[i], syms[i + 1])
            if best is None:
                break
            out = []
            i = 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == best[0] and syms[i + 1] == best[1]:
                    out.append(best[0] + best[1])
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            syms = out
        ids = [self.vocab[s] for s in syms]
        self._cache[piece] = ids
        return ids

    def encode_ordinary(self, text):
        text = unicodedata.normalize("NFC", text)
        out = []
        for piece in pretokenize(text):
            out.extend(self._bpe(piece))
        return out

    def encode(self, text):
        out = []
        for part in self._special_re.split(text):
            if not part:
                continue
            if part in self.special:
                out.append(self.special[part])
            else:
                out.extend(self.encode_ordinary(part))
        return out

    def decode(self, ids):
        buf = bytearray()
        out = []
        for i in ids:
            s = self.id_to_str[int(i)]
            if s in self.special:
                out.append(buf.decode("utf-8", errors="replace"))
                buf = bytearray()
                out.append(s)
            else:
                buf.extend(self.u2b[c] for c in s)
        out.append(buf.decode("utf-8", errors="replace"))
        return "".join(out)
