"""The host a benchmark ran on, described the same way by every bench: one printed line, one JSON record.

Everything is detected, nothing assumed: the CPU's model name (``/proc/cpuinfo``), LLVM's name for
its micro-architecture, the vector ISA and register width our ``llvm`` target compiles for on it
(:func:`vdla.compiler.codegen.llvm.target.host_target`, the same detection the code generator uses),
the SIMD features among its features, the cores and the Python version.  A bench prints
:func:`host_line` before its table and stores :func:`host_record` under ``"host"`` in its JSON.

Figures such as a measured peak or the environment's ``OPENBLAS_CORETYPE`` stay with the benches that
measure or depend on them.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vdla.compiler.codegen.llvm.target import host_target  # noqa: E402
from vdla.runtime.cpu_module import host_cpu_model  # noqa: E402

SIMD_FEATURES = ("avx512f", "avx512vnni", "avx512bf16", "avx512fp16", "avx2", "fma", "neon", "sve")
"""The LLVM features a host line lists when the CPU has them (the ones that change what kernels and
peer libraries run), widest first."""


@cache
def host_record() -> dict[str, Any]:
    """The host as a JSON-ready record: ``model`` (the vendor's name), ``cpu`` (LLVM's), ``arch``,
    ``isa`` and ``vector_bits`` (what our kernels use), ``simd`` (:data:`SIMD_FEATURES` present),
    ``cores``, ``python`` and ``avx2_shim`` (the mode of ``bench/avx2_host`` the process runs under, or None)."""
    target = host_target()
    return {
        "model": host_cpu_model(),
        "cpu": target.cpu,
        "arch": target.arch,
        "isa": target.isa,
        "vector_bits": target.vector_bits,
        "simd": [f for f in SIMD_FEATURES if f in target.features],
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "avx2_shim": os.environ.get("VDLA_AVX2_HOST_MODE"),
    }


def host_line(label: str = "host") -> str:
    """The host in one line, e.g. ``host: AMD EPYC 7B13 64-Core Processor (znver3, x86_64, avx2
    256-bit vectors; SIMD avx2 fma), 2 cores, Python 3.11.2``."""
    h = host_record()
    simd = " ".join(h["simd"]) or "none"
    return (f"{label}: {h['model']} ({h['cpu']}, {h['arch']}, {h['isa']} {h['vector_bits']}-bit vectors; "
            f"SIMD {simd}), {h['cores']} cores, Python {h['python']}"
            + (f"; AVX2-only CPUID via bench/avx2_host ({h['avx2_shim']} mode)" if h["avx2_shim"] else ""))


if __name__ == "__main__":
    print(host_line())


def finish_run(out: dict[str, Any], output: str | Path) -> Path:
    """Print the run's load averages (``out["load_average_before"]`` / ``["load_average_after"]``) and write
    ``out`` as JSON to ``output`` (folders made); the benchmarks' common last step."""
    print("load average (1, 5, 15 min) before / after: "
          + " / ".join(", ".join(f"{v:.2f}" for v in out[k]) for k in ("load_average_before", "load_average_after")))
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")
    return path
