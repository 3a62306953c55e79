"""Corpus: the Python standard library sources Debian ships (/usr/lib/python3.11), tests excluded.
Deterministic held-out split by a hash of the relative path (~3% of files)."""
import hashlib
import os

ROOT = "/usr/lib/python3.11"
EXCLUDE_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"}
HELDOUT_PERCENT = 3


def list_files(root=ROOT):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in EXCLUDE_DIRS)
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                out.append(os.path.relpath(os.path.join(dirpath, fn), root))
    return sorted(out)


def is_heldout(relpath):
    h = int(hashlib.md5(relpath.encode("utf-8")).hexdigest()[:8], 16)
    return h % 100 < HELDOUT_PERCENT


def split_files(root=ROOT):
    files = list_files(root)
    train = [f for f in files if not is_heldout(f)]
    held = [f for f in files if is_heldout(f)]
    return train, held


def read_doc(relpath, root=ROOT):
    with open(os.path.join(root, relpath), "rb") as f:
        return f.read().decode("utf-8", errors="replace")
