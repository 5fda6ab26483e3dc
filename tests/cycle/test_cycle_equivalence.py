"""Speed work never changes a result: the cycle model against a record of the reference code.

``data/cycle_equivalence.json`` holds, for the first 12 fuzz programs of
``bench/cycle_equivalence.py`` (4 per preset), what the cycle model gave before the speed work
of issue 24 part 6 (the SimPy kernel, per-instruction checks): cycles, DRAM digest, work
counters, every unit's timing counters, tokens left.  This tree must give exactly the same.
(Re-recorded 2026-11-29 when the fuzz generator began to draw gathering LOADs: the 8 programs that
got one were recorded by that tree; the 4 without one were unchanged, bit for bit.)
After an *intended* timing change, check with ``python bench/cycle_equivalence.py --peer <ref>``
and re-record with ``--count 12 --no-layers --record tests/cycle/data/cycle_equivalence.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Callable


RECORD = Path(__file__).parent / "data" / "cycle_equivalence.json"


def test_cycle_model_matches_the_reference_record(bench_script: Callable[[str], ModuleType]) -> None:
    script = bench_script("cycle_equivalence")
    saved = json.loads(RECORD.read_text())
    assert not saved["layers"] and saved["count"] == 12
    mine = script.record(saved["count"], layers=False, quiet=True)
    assert script.compare(saved["programs"], mine) == []


def test_compare_reports_a_changed_cycle_count(bench_script: Callable[[str], ModuleType]) -> None:
    script = bench_script("cycle_equivalence")
    ref = json.loads(RECORD.read_text())["programs"]
    name = sorted(ref)[0]
    changed = {k: dict(v) for k, v in ref.items()}
    changed[name]["cycles"] += 1
    diffs = script.compare(ref, changed)
    assert len(diffs) == 1 and diffs[0].startswith(f"{name}: cycles differs")
