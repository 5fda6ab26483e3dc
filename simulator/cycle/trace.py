"""The timeline of a cycle-model run and its Chrome-trace (Perfetto) export.

Units append :class:`Slice` records while they run (only when a timeline was
asked for, so plain runs pay nothing).  :func:`chrome_trace` turns them into
the Trace Event Format: one process, one thread track per unit, each
instruction a complete ("X") event named ``OPCODE#index`` with its fields as
args, and stalls as slices of category ``wait`` on the same track.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

UNITS = ("fetch", "load", "compute", "store")


@dataclass(frozen=True)
class Slice:
    """One interval on a unit's track, in accelerator cycles."""

    unit: str
    name: str
    start: int
    end: int
    category: str
    """``insn`` for an executing instruction, ``wait`` for a stall, ``fetch`` for a fetch burst."""
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Timeline:
    """Slices of one run, appended in completion order."""

    clock_mhz: float
    slices: list[Slice] = field(default_factory=list)

    def add(
        self, unit: str, name: str, start: int, end: int, category: str, args: dict[str, Any] | None = None
    ) -> None:
        if end > start:
            self.slices.append(Slice(unit, name, start, end, category, args or {}))

    def of_unit(self, unit: str, category: str | None = None) -> list[Slice]:
        return [s for s in self.slices if s.unit == unit and (category is None or s.category == category)]


def chrome_trace(timeline: Timeline, stats: dict[str, Any] | None = None) -> dict[str, Any]:
    """The timeline as a Trace Event Format object (timestamps in microseconds at the clock)."""
    us_per_cycle = 1.0 / timeline.clock_mhz
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": "VDLA (cycle model)"}},
    ]
    for tid, unit in enumerate(UNITS, start=1):
        events.append({"ph": "M", "pid": 1, "tid": tid, "name": "thread_name", "args": {"name": unit}})
        events.append({"ph": "M", "pid": 1, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    tids = {unit: tid for tid, unit in enumerate(UNITS, start=1)}
    for s in sorted(timeline.slices, key=lambda s: (s.start, tids[s.unit])):
        events.append(
            {
                "ph": "X",
                "pid": 1,
                "tid": tids[s.unit],
                "name": s.name,
                "cat": s.category,
                "ts": s.start * us_per_cycle,
                "dur": (s.end - s.start) * us_per_cycle,
                "args": {"start_cycle": s.start, "cycles": s.end - s.start, **s.args},
            }
        )
    trace: dict[str, Any] = {"traceEvents": events, "displayTimeUnit": "ns"}
    if stats is not None:
        trace["otherData"] = {"stats": stats}
    return trace


def write_chrome_trace(timeline: Timeline, path: str | Path, stats: dict[str, Any] | None = None) -> Path:
    """Write the Chrome-trace JSON (open it at https://ui.perfetto.dev)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(chrome_trace(timeline, stats), default=_jsonable))
    return path


def _jsonable(value: Any) -> Any:
    # Instruction fields are ints, bools and IntEnums, plus numpy scalars from effect counts.
    if hasattr(value, "item"):
        return value.item()
    return str(value)
