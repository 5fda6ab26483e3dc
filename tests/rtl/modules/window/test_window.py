"""vdla_addr_window alone: its registered verdict against the combinational rule, cycle by cycle.

The slow cases plant the bugs a registered verdict invites (the mutants of its registers) and
check that the same cocotb test catches each.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vdla_hw.rtl_build import RTL_DIR

HERE = Path(__file__).parent
VERDICT = "in_window_q <= load ? verdict_d : in_span(addr, span_end, base, limit);"
MUTANTS = {
    # vdla_ctrl's window_new ignored: for a cycle after the host moves the window, a waiting
    # command is judged by the old one
    "window-new-ignored": ("assign in_window = in_window_q && !window_new;", "assign in_window = in_window_q;"),
    # the verdict not loaded with the client's verdict of its next command: a cycle late after every command
    "verdict-stale": (VERDICT, "in_window_q <= in_span(addr, span_end, base, limit);"),
    # the verdict always the client's next one: a waiting command is judged by the one after it
    "verdict-next-only": (VERDICT, "in_window_q <= verdict_d;"),
}


def _run(rtl_module, rtl_dir: Path | None = None) -> None:
    rtl_module("tiny", "vdla_addr_window", HERE, modules=["vdla_addr_window"], parameters={"LOG_EB": 2},
               env={"WINDOW_LOG_EB": 2}, rtl_dir=rtl_dir)


def test_window_registered_verdict(rtl_module):
    _run(rtl_module)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_window_mutant_is_caught(rtl_module, tmp_path: Path, name: str):
    old, new = MUTANTS[name]
    rtl = tmp_path / "rtl"
    shutil.copytree(RTL_DIR, rtl)
    path = rtl / "vdla_addr_window.sv"
    text = path.read_text()
    assert text.count(old) == 1, f"mutant {name}: its text is no longer in vdla_addr_window.sv"
    path.write_text(text.replace(old, new))
    with pytest.raises(SystemExit):  # cocotb's runner: the cocotb test failed
        _run(rtl_module, rtl)
