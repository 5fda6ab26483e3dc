"""System tests: programs from the runtime builder on vdla_top under cocotb, DRAM equal to fsim.

Each case builds a program (:mod:`vdla.runtime.system_programs`) and runs it on the RTL with
cocotbext-axi's AXI RAM (random back-pressure and idle cycles) and AXI-lite master
(system_runner.py, system_cocotb.py); the final DRAM must equal fsim's bit for bit.
The default CI run checks one program on ``default``; the whole suite on ``tiny`` and
``default`` runs under ``-m slow``.
"""

from __future__ import annotations

import pytest
from rtl_configs import configs_under_test
from system_runner import run_on_cocotb

from vdla.runtime.system_programs import build_case, case_names
from vdla_hw.config import load_config

RANDOM_PROGRAMS = 6
SLOW_CONFIGS = ("tiny", "default")


def run_system(config: str, case: str, *, pause: float = 0.3, seed: int = 1) -> None:
    run_on_cocotb(case, build_case(load_config(config), case), pause=pause, seed=seed)


def test_system_default_gemm_two_virtual_threads() -> None:
    """CI subset: GEMM, bias, every ALU stage of requantization and the two-thread token pattern on default."""
    run_system("default", "gemm_vt2")


@pytest.mark.slow
@pytest.mark.parametrize("case", case_names(RANDOM_PROGRAMS))
@pytest.mark.parametrize("config", configs_under_test(SLOW_CONFIGS))
def test_system(config: str, case: str) -> None:
    run_system(config, case, seed=len(case) + 7 * (SLOW_CONFIGS.index(config) if config in SLOW_CONFIGS else 0))


@pytest.mark.slow
@pytest.mark.parametrize("case", ["gemm_vt2", "tokens_full", "random0"])
def test_system_tiny_without_stalls(case: str) -> None:
    """Full-speed AXI (no pauses): the schedule differs from the back-pressured runs above."""
    run_system("tiny", case, pause=0.0)
