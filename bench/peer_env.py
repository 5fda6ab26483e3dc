"""The process environment every latency benchmark runs under, so its peers show their best.

glibc's default malloc thresholds make large per-call temporaries page-fault on every call, and
libraries must be pinned to one thread for single-thread figures; ``OPENBLAS_CORETYPE`` (set on
these machines) is dropped unless ``--keep-openblas-coretype`` is given. The environment only
takes effect for a fresh process, so the script re-executes itself once.
"""

from __future__ import annotations

import os
import sys

MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "268435456", "MALLOC_TRIM_THRESHOLD_": "1073741824"}
THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def reexec_with_peer_env(child_flag: str) -> None:
    """Re-run this script under the benchmark environment (a no-op in the re-run child).

    The child finds the original ``OPENBLAS_CORETYPE`` (or ``-``) in ``child_flag``.
    """
    if os.environ.get(child_flag):
        return
    env = {**os.environ, **MALLOC_ENV, **THREAD_ENV, child_flag: os.environ.get("OPENBLAS_CORETYPE", "-")}
    if "--keep-openblas-coretype" not in sys.argv:
        env.pop("OPENBLAS_CORETYPE", None)
    os.execve(sys.executable, [sys.executable, *sys.argv], env)
