"""vdla_addr_window alone: every cycle's verdict against the rule, with a client model and window moves."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent


def test_window_follows_the_rule(rtl_module):
    rtl_module("tiny", "vdla_addr_window", HERE, modules=["vdla_addr_window"], parameters={"LOG_EB": 2},
               env={"WINDOW_LOG_EB": 2})
