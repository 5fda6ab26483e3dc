"""A sweep's results as a table, as JSON, and the Pareto-optimal configs per board."""

from __future__ import annotations

import json
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vdla_hw.fpga.boards import BOARDS

from .evaluate import PointResult
from .pareto import pareto_front
from .plots import fronts


def _fit_mark(verdict: str) -> str:
    return "y" if verdict == "yes" else "?" if verdict == "?" else "-"


def board_front(results: Sequence[PointResult], board: str) -> list[PointResult]:
    """The measured points that fit ``board``, Pareto-optimal in latency against LUTs (fastest first)."""
    fit = [r for r in results if r.ok and r.hardware is not None and r.hardware.boards.get(board) == "yes"]
    front = [fit[i] for i in pareto_front([(r.hardware.luts, r.latency_ms) for r in fit])]  # type: ignore[union-attr]
    return sorted(front, key=lambda r: r.latency_ms)


def format_table(results: Sequence[PointResult], reference: PointResult | None = None) -> str:
    """One row per point: resources, clock, cycles, latency, the boards it fits (``y``/``-``/``?``),
    the speed-up and LUT ratio against ``reference`` when given, and a failure's reason."""
    boards = [b for b in BOARDS if BOARDS[b].resources is not None]
    on_front = {id(r) for rs in fronts(results).values() for r in rs}
    head = ["config", "digest", "LUT", "FF", "DSP", "BRAM36", "MHz", "cycles", "VDLA ms", "host ms", "latency ms"]
    head += (["speed-up", "LUT x"] if reference is not None and reference.ok else []) + ["fits " + "/".join(boards), "P"]
    rows = [head]
    for r in results:
        if not r.ok:
            rows.append([r.label, r.digest or "-", f"FAILED ({r.failure}): {(r.reason or '')[:150]}"])
            continue
        hw = r.hardware
        assert hw is not None
        row = [r.label, r.digest or "", f"{hw.luts:,}", f"{hw.ffs:,}", str(hw.dsps), f"{hw.bram36:g}",
               f"{hw.fmax_mhz:g}{'' if hw.fmax_source.startswith('config') else '*'}", f"{r.cycles:,}", f"{r.vdla_ms:.3f}", f"{r.host_ms:.3f}", f"{r.latency_ms:.3f}"]
        if reference is not None and reference.ok:
            row += [f"{reference.latency_ms / r.latency_ms:.2f}x", f"{hw.luts / reference.hardware.luts:.2f}"]  # type: ignore[union-attr]
        row += ["".join(_fit_mark(hw.boards.get(b, "?")) for b in boards), "*" if id(r) in on_front else ""]
        rows.append(row)
    widths = [max(len(row[c]) for row in rows if len(row) == len(head)) for c in range(len(head))]
    lines = []
    for row in rows:
        if len(row) == len(head):
            lines.append("  ".join(cell.rjust(w) if c >= 2 else cell.ljust(w) for c, (cell, w) in enumerate(zip(row, widths))))
        else:
            lines.append("  ".join([row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2]]))
    lines.append("MHz: the config's clock_mhz, or * nextpnr's Fmax on the ECP5-85F (--fmax); latency = VDLA ms (cycles / MHz) + host ms "
                 "(a model's kernels left on the host: the cost rule's figures or a peak-rate estimate, with transfers). "
                 "P: on a Pareto front (latency vs LUT, DSP or BRAM).")
    return "\n".join(lines)


def to_json(results: Sequence[PointResult], meta: dict[str, Any], reference: PointResult | None = None) -> dict[str, Any]:
    """The sweep as a JSON document: the run's facts, every point, the fronts and the per-board picks."""
    front = fronts(results)
    return {
        "meta": {**meta, "host": {"machine": platform.machine(), "python": platform.python_version()}},
        "reference": reference.label if reference is not None else None,
        "points": [r.to_dict() for r in results],
        "pareto": {axis: [r.label for r in rs] for axis, rs in front.items()},
        "boards": {b: [r.label for r in board_front(results, b)] for b in BOARDS if BOARDS[b].resources is not None},
    }


def write_json(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1))
    return path
