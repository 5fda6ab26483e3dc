"""Run one program on vdla_top under cocotb (system_cocotb.py) from the pytest process.

Shared by the system tests and ``bench/rtl_speed.py`` (which times this path against
the ctypes harness).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vdla.runtime.backends import run
from vdla.runtime.program import Program
from vdla.simulator.fsim import run_fsim
from vdla_hw.harness.build import PROBE_SOURCES
from vdla_hw.rtl_build import build_dir, cocotb_run

HERE = Path(__file__).resolve().parent
BUDGET_FACTOR = 8
"""Cycle budget of the watchdog: this many times the cycle model's estimate (back-pressure slows the RTL) ..."""
BUDGET_SLACK = 20_000
"""... plus this many cycles."""
CLOCK_NS = 10
"""The clock period system_cocotb.py drives."""


@dataclass(frozen=True)
class CocotbRun:
    """Simulated time and wall-clock time of one cocotb run (from its results file)."""

    sim_cycles: int
    wall_seconds: float


def run_on_cocotb(name: str, program: Program, *, pause: float = 0.3, seed: int = 1) -> CocotbRun:
    """Run ``program`` on vdla_top with cocotbext-axi's RAM and AXI-lite master; DRAM must equal fsim.

    Under pytest a mismatch or a watchdog expiry fails the calling test.
    """
    cfg = program.config
    expected = run_fsim(cfg, program.instructions, program.dram).dram
    budget = BUDGET_FACTOR * int(run(program, "cycle").cycles) + BUDGET_SLACK
    # Inputs live in a folder keyed by the case name, so cocotb's run folder (keyed by the
    # environment) is reused from one session to the next instead of piling up.
    folder = build_dir(cfg, f"system-{name}", sources=[])
    program_file = program.save(folder / "program.vdlaprog")
    expected_file = folder / "expected.npy"
    np.save(expected_file, expected)
    results = cocotb_run(cfg, "vdla_top", "system_cocotb", HERE, extra_sources=PROBE_SOURCES, purpose="cocotb-system",
                         extra_env={"VDLA_PROGRAM": str(program_file), "VDLA_EXPECTED": str(expected_file),
                                    "VDLA_CASE": name, "VDLA_MAX_CYCLES": str(budget), "VDLA_PAUSE": str(pause),
                                    "VDLA_SEED": str(seed)})
    case = ET.parse(results).getroot().find(".//testcase")
    if case is None:
        raise RuntimeError(f"cocotb wrote no test result to {results}")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    return CocotbRun(round(float(props["sim_time_duration"]) / CLOCK_NS), float(case.get("time", "nan")))
