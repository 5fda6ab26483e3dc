"""Run a command as on an AVX2-only x86 host: every library in it sees a CPU without AVX-512.

Two modes, one mask (``cpuid_mask.h``: the AVX-512, AMX and AVX-VNNI bits of CPUID and the AVX-512
and AMX state of XCR0 cleared), so onnxruntime's MLAS, PyTorch, numpy and LLVM's host detection
(our ``llvm`` target) all choose their AVX2 code:

* **fault** (preferred where the CPU has the ``cpuid_fault`` flag: Intel since Ivy Bridge, exposed
  by most hypervisors): ``cpuid_avx2.c`` is preloaded and, with Linux's CPUID faulting, answers
  every CPUID of the process.
* **patch** (everywhere else, e.g. an AMD Zen 4 VM): ``cpuid_patch.c`` is an ``LD_AUDIT`` library.
  ``sites.py`` finds the CPUID and XGETBV instructions of the dispatching libraries of this Python
  environment with objdump (cached); as each such library is mapped, before its code runs, the
  audit library turns them into ``ud2`` and answers them from a SIGILL handler. Code outside those
  libraries (the CUDA libraries, a JIT's output) still sees the real CPU.

In both, ``GLIBC_TUNABLES`` masks glibc's own string functions, which it picks before either
library loads. What this cannot change is the silicon: caches, clocks and the core are still the
host's, so a figure from here is an AVX2-*ISA* comparison on this machine, not an AVX2 *host's* (a
Zen 3, say, with its own caches and two 256-bit FMA pipes).

    python bench/avx2_host/run.py -- python bench/models.py --models resnet18 --output avx2.json
    python bench/avx2_host/run.py --mode patch --trace /tmp/cpuid.log -- python -c 'import onnxruntime'

``--trace FILE`` (patch mode) appends each patched library and the first answer of each of its
sites (leaf, real and masked registers) to FILE. ``--mode fault`` exits 3 where the CPU has no
CPUID faulting.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))  # sites.py, also when this file is imported rather than run

from vdla_hw.cache import cache_dir  # noqa: E402
from vdla_hw.toolchain import toolchain  # noqa: E402

from sites import all_sites, dispatching_libraries, write_table  # noqa: E402

#: glibc's names for the features the shim hides (its memcpy/strlen variants).
GLIBC_MASK = "glibc.cpu.hwcaps=-AVX512F,-AVX512CD,-AVX512BW,-AVX512DQ,-AVX512VL,-AVX512_VNNI,-AVX512_BF16,-AVX512_FP16"

#: Each mode's C source (beside this file; both include ``cpuid_mask.h``).
SOURCES = {"fault": "cpuid_avx2.c", "patch": "cpuid_patch.c"}

#: The environment variables the patch-mode library reads (names shared with ``cpuid_patch.c``).
SITES_ENV = "VDLA_AVX2_HOST_SITES"
TRACE_ENV = "VDLA_AVX2_HOST_TRACE"
#: Set to the mode in the command's environment, so a benchmark's host line can say it ran masked.
MODE_ENV = "VDLA_AVX2_HOST_MODE"


def has_cpuid_faulting() -> bool:
    """The CPU (and hypervisor) offer CPUID faulting, which the fault mode needs."""
    return "cpuid_fault" in Path("/proc/cpuinfo").read_text().split()


def default_mode() -> str:
    """``fault`` where the CPU has CPUID faulting (it reaches every CPUID), else ``patch``."""
    return "fault" if has_cpuid_faulting() else "patch"


def shim(mode: str = "fault") -> Path:
    """The mode's shared library, built once per version of its source and the shared mask."""
    source = HERE / SOURCES[mode]
    digest = hashlib.sha256(source.read_bytes() + (HERE / "cpuid_mask.h").read_bytes()).hexdigest()[:16]
    out = cache_dir() / "avx2_host" / f"{source.stem}-{digest}.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp.so")
        subprocess.run([*toolchain().cc, "-O2", "-shared", "-fPIC", "-I", str(HERE), "-o", str(tmp), str(source)],
                       check=True)
        tmp.replace(out)
    return out


def _prepend(env: dict[str, str], name: str, value: str, sep: str) -> None:
    env[name] = sep.join(p for p in (value, env.get(name, "")) if p)


def masked_env(base: dict[str, str] | None = None, mode: str | None = None,
               trace: Path | None = None) -> dict[str, str]:
    """``base`` (default: this environment) with the mode's library loaded and glibc's AVX-512 masked."""
    mode = mode or default_mode()
    env = dict(os.environ if base is None else base)
    if mode == "fault":
        _prepend(env, "LD_PRELOAD", str(shim("fault")), " ")
    else:
        env[SITES_ENV] = str(write_table(all_sites(dispatching_libraries())))
        _prepend(env, "LD_AUDIT", str(shim("patch")), ":")
        if trace is not None:
            env[TRACE_ENV] = str(trace.resolve())
    env[MODE_ENV] = mode
    env["GLIBC_TUNABLES"] = ":".join(t for t in (env.get("GLIBC_TUNABLES", ""), GLIBC_MASK) if t)
    return env


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench/avx2_host/run.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["auto", "fault", "patch"], default="auto",
                        help="auto: fault where the CPU has cpuid_fault, else patch")
    parser.add_argument("--trace", type=Path, help="patch mode: append each library's emulated answers here")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.print_help(sys.stderr)
        return 2
    if shutil.which(command[0]) is None:  # before any build or disassembly
        print(f"avx2_host: no such command: {command[0]!r}", file=sys.stderr)
        return 127
    if os.environ.get(MODE_ENV):
        # A second shim inside the first finds the libraries already patched, and two SIGILL handlers would pass
        # an unlisted trap back and forth instead of dying of it.
        print(f"avx2_host: already running under bench/avx2_host ({MODE_ENV}={os.environ[MODE_ENV]}): this process "
              "sees AVX2 only; run the command directly", file=sys.stderr)
        return 2
    mode = default_mode() if args.mode == "auto" else args.mode
    if mode == "fault" and not has_cpuid_faulting():
        print("avx2_host: this CPU (or its hypervisor) has no CPUID faulting (no cpuid_fault flag in /proc/cpuinfo); "
              "use --mode patch (the default here)", file=sys.stderr)
        return 3
    if args.trace is not None and mode != "patch":
        print("avx2_host: --trace needs the patch mode (the fault mode does not list sites)", file=sys.stderr)
        return 2
    try:
        env = masked_env(mode=mode, trace=args.trace)
    except subprocess.CalledProcessError as exc:
        print(f"avx2_host: building the CPUID shim failed ({' '.join(exc.cmd)} exited {exc.returncode}); "
              f"install a C compiler (the `hw` extra brings ziglang)", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # objdump missing or failing
        print(f"avx2_host: {exc}", file=sys.stderr)
        return 2
    try:
        code = subprocess.run(command, env=env, check=False).returncode
    except FileNotFoundError:
        print(f"avx2_host: no such command: {command[0]!r}", file=sys.stderr)
        return 127
    except KeyboardInterrupt:  # the child got the same Ctrl-C and stopped
        return 130
    if code < 0:  # the child died of a signal (a real SIGILL, say): so does the launcher, as if it were the child
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
