"""The result of running a program on any backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from vdla.runtime.display import html_table
from vdla.runtime.program import Program


@dataclass(frozen=True)
class RunResult:
    """Final DRAM and counters of one run.

    ``counters`` use the names of :class:`vdla.simulator.counters.Counters` (instructions by
    opcode, MACs, DRAM bytes per memory type); ``cycles`` is None for untimed backends;
    ``extra`` holds backend-specific outputs (trace paths, utilization, ...).
    """

    backend: str
    program: Program
    dram: np.ndarray
    counters: Mapping[str, int]
    cycles: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def read(self, name: str) -> np.ndarray:
        """Named buffer ``name`` of the program, read from the final DRAM."""
        return self.program.read(name, self.dram)

    def __repr__(self) -> str:
        cycles = f", {self.cycles:,} cycles" if self.cycles is not None else ""
        counts = ", ".join(f"{k}={v:,}" for k, v in self.counters.items() if v)
        return f"RunResult({self.backend}{cycles}: {counts})"

    def _repr_html_(self) -> str:
        rows = [("cycles", self.cycles)] if self.cycles is not None else []
        rows += [(k, v) for k, v in self.counters.items()]
        stats = self.extra.get("stats")
        if isinstance(stats, Mapping) and "gemm_utilization" in stats:
            rows.append(("GEMM utilization", f"{stats['gemm_utilization']:.1%}"))
        return html_table(("counter", "value"), rows, caption=f"run on {self.backend}")

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary (no DRAM image)."""
        return {"backend": self.backend, "cycles": self.cycles, "counters": dict(self.counters),
                "extra": {k: (str(v) if not isinstance(v, (int, float, str, bool, type(None), list, dict)) else v)
                          for k, v in self.extra.items()}}
