"""Debian's torch links the generic libblas.so.3; if that is the slow reference BLAS, matrix products run
~10x slower than with OpenBLAS. Import this module FIRST: if Debian's OpenBLAS (apt-get install
libopenblas0-pthread) is installed and not yet on LD_LIBRARY_PATH, re-exec the interpreter with it
(without touching the system-wide BLAS alternative), with passive OpenMP waiting."""
import os
import sys

OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"


def ensure():
    if os.environ.get("NEXTN_NO_REEXEC") == "1":
        return
    if not os.path.exists(os.path.join(OPENBLAS_DIR, "libblas.so.3")):
        return
    paths = os.environ.get("LD_LIBRARY_PATH", "").split(":")
    if OPENBLAS_DIR in paths:
        return
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join([OPENBLAS_DIR] + [p for p in paths if p])
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # spinning BLAS threads waste CPU on a busy box
    # busy-waiting OpenMP threads are ~6x slower on an oversubscribed 2-core machine
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env["NEXTN_NO_REEXEC"] = "1"
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


ensure()
