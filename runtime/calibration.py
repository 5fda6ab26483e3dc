"""Cycle-model calibration: the cycle backend's count beside the RTL's for one program.

The cycle model (``simulator``) is meant to predict the Verilated RTL within
:data:`TARGET` (5%). :func:`calibrate` runs a program on fsim, rtl and cycle, checks the
two timed backends leave fsim's DRAM, and returns both counts with the relative error
``(model - rtl) / rtl``. ``bench/rtl_vs_cycle.py`` tabulates it over every preset and the
default test suite guards it on ``tiny`` (tests/rtl/backend/test_cycle_calibration.py).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from vdla.runtime.program import Program
from vdla.runtime.backends import run

TARGET = 0.05
"""Largest relative error of the cycle model against the RTL the project accepts."""


class CalibrationMismatch(RuntimeError):
    """A timed backend left a DRAM image different from fsim's (a correctness bug, not timing)."""


@dataclass(frozen=True)
class Calibration:
    """RTL and cycle-model cycles of one program (``error`` = (model - rtl) / rtl)."""

    config: str
    program: str
    instructions: int
    rtl_cycles: int
    cycle_model_cycles: int
    rtl_seconds: float
    cycle_seconds: float

    @property
    def error(self) -> float:
        return (self.cycle_model_cycles - self.rtl_cycles) / self.rtl_cycles

    @property
    def within_target(self) -> bool:
        return abs(self.error) <= TARGET

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "relative_error": self.error}


def calibrate(name: str, program: Program) -> Calibration:
    """Run ``program`` on fsim, rtl and cycle; both timed backends must match fsim's DRAM."""
    expected = run(program, "fsim").dram
    t0 = time.perf_counter()
    rtl = run(program, "rtl")
    t1 = time.perf_counter()
    model = run(program, "cycle")
    t2 = time.perf_counter()
    for backend, result in (("rtl", rtl), ("cycle", model)):
        if not np.array_equal(result.dram, expected):
            raise CalibrationMismatch(f"{program.config.name}/{name}: the {backend} backend's DRAM differs from fsim")
    return Calibration(program.config.name, name, program.insn_count, rtl.cycles, model.cycles, t1 - t0, t2 - t1)
