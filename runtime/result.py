"""The result of running a program on any backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from runtime.program import Program


@dataclass(frozen=True)
class RunResult:
    """Final DRAM and counters of one run.

    ``counters`` use the names of :class:`simulator.counters.Counters` (instructions by
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

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary (no DRAM image)."""
        return {"backend": self.backend, "cycles": self.cycles, "counters": dict(self.counters),
                "extra": {k: (str(v) if not isinstance(v, (int, float, str, bool, type(None), list, dict)) else v)
                          for k, v in self.extra.items()}}
