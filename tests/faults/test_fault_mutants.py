"""The RTL's fault logic is tested: every mutant of it (vdla.fuzz.mutants.FAULT_MUTANTS) lets a
faulty program through -- run with the pre-check off, it no longer raises fsim's error.

Each mutant needs its own Verilator build of the harness (minutes): slow.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vdla.fuzz.mutants import FAULT_MUTANTS, make_copy
from vdla.runtime import run
from vdla_hw.config import load_config

from test_faults import FAULTS  # type: ignore[import-not-found]


@pytest.mark.slow
@pytest.mark.parametrize("mutant,fault_name", FAULT_MUTANTS, ids=[m.name for m, _ in FAULT_MUTANTS])
def test_fault_mutant_is_killed(tmp_path: Path, mutant, fault_name: str) -> None:
    cfg = load_config("tiny")
    fault = FAULTS[fault_name]
    program = fault.build(cfg)
    options = fault.options("rtl")
    with pytest.raises(fault.error) as want:
        run(program, "fsim", **options)
    rtl_dir = make_copy(mutant, tmp_path / mutant.name)
    try:
        run(program, "rtl", no_precheck=True, rtl_dir=str(rtl_dir), max_seconds=60.0, **options)
    except Exception as exc:  # noqa: BLE001 -- any other outcome kills the mutant
        assert str(exc) != str(want.value), f"mutant {mutant.name} still raises fsim's error"
    # Running to the end without the error also kills it.
