"""Run a command as on an AVX2-only x86 host: every library in it sees a CPU without AVX-512.

``cpuid_avx2.c`` (built here with the toolchain's C compiler, cached) is preloaded: with Linux's
CPUID faulting it answers every CPUID with the AVX-512, AMX and AVX-VNNI bits cleared, so
onnxruntime's MLAS, PyTorch and LLVM's host detection (our ``llvm`` target) all choose their AVX2
code, and ``GLIBC_TUNABLES`` masks glibc's own string functions, which it picks before the shim
loads.  What this cannot change is the silicon: caches, clocks and the core are still the host's,
so a figure from here is an AVX2-*ISA* comparison on this machine, not an AVX2 *host's* (a Zen 3,
say, with its own caches and two 256-bit FMA pipes).

    python bench/avx2_host/run.py -- python bench/models.py --models resnet18 --output avx2.json

Needs the ``cpuid_fault`` CPU flag (Intel since Ivy Bridge, exposed by most hypervisors); the
command exits 3 with the reason where it is missing.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from vdla_hw.cache import cache_dir  # noqa: E402
from vdla_hw.toolchain import toolchain  # noqa: E402

#: glibc's names for the features the shim hides (its memcpy/strlen variants).
GLIBC_MASK = "glibc.cpu.hwcaps=-AVX512F,-AVX512CD,-AVX512BW,-AVX512DQ,-AVX512VL,-AVX512_VNNI,-AVX512_BF16,-AVX512_FP16"


def shim() -> Path:
    """The shared library, built once per source version."""
    source = HERE / "cpuid_avx2.c"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    out = cache_dir() / "avx2_host" / f"cpuid_avx2-{digest}.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp.so")
        subprocess.run([*toolchain().cc, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(source)], check=True)
        tmp.replace(out)
    return out


def masked_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this environment) with the shim preloaded and glibc's AVX-512 masked."""
    env = dict(os.environ if base is None else base)
    env["LD_PRELOAD"] = " ".join(p for p in (str(shim()), env.get("LD_PRELOAD", "")) if p)
    env["GLIBC_TUNABLES"] = ":".join(t for t in (env.get("GLIBC_TUNABLES", ""), GLIBC_MASK) if t)
    return env


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        env = masked_env()
    except subprocess.CalledProcessError as exc:
        print(f"avx2_host: building the CPUID shim failed ({' '.join(exc.cmd)} exited {exc.returncode}); "
              f"install a C compiler (the `hw` extra brings ziglang)", file=sys.stderr)
        return 2
    try:
        return subprocess.run(argv, env=env, check=False).returncode
    except FileNotFoundError:
        print(f"avx2_host: no such command: {argv[0]!r}", file=sys.stderr)
        return 127
    except KeyboardInterrupt:  # the child got the same Ctrl-C and stopped
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
