"""bench/fuzz_cycle_error.py reads saved RTL counts from its own JSON and from a pool campaign's journal."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Callable

import pytest


def test_saved_rtl_counts_come_from_a_journal_or_a_json(tmp_path: Path, bench_script: Callable[[str], ModuleType]) -> None:
    script = bench_script("fuzz_cycle_error")
    journal = tmp_path / "journal.jsonl"
    chunks = [
        {"config": "tiny", "seeds": [0, 1], "records": [
            {"seed": 0, "instructions": 12, "cycles": {"fsim": None, "cycle": 300, "rtl": 301}, "failure": None},
            {"seed": 1, "instructions": 40, "cycles": {"fsim": None, "cycle": 900, "rtl": None}, "failure": None}]},
        {"config": "wide", "seeds": [7], "records": [
            {"seed": 7, "instructions": 9, "cycles": {"rtl": 555}, "failure": "mismatch"}]},
    ]
    journal.write_text("".join(json.dumps(c) + "\n" for c in chunks))
    # Only seeds with an RTL count and no failure: a seed without one is run on the RTL again.
    assert script.read_saved(journal) == {"tiny": {0: (301, 12)}}
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({"presets": {"default": {
        "row_fields": list(script.ROW_FIELDS), "rows": [[3, 1000, 1010, 33, 0.01]]}}}))
    assert script.read_saved(saved) == {"default": {3: (1000, 33)}}
    with pytest.raises(SystemExit, match="no such file"):
        script.read_saved(tmp_path / "missing.json")
