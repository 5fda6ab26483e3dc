"""Verilator line, branch and toggle coverage of the RTL over a fuzz campaign.

The ``rtl`` backend's ``coverage_dir`` option runs a coverage build of the harness
(:func:`vdla_hw.harness.harness_library` with ``coverage=True``) and writes one
Verilator ``coverage.dat`` per program.  :class:`RtlCoverage` merges those files
(a point counts as covered when any program hit it) and deletes them as it goes,
since each holds every toggle point of the design.
"""

from __future__ import annotations

import re
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TYPE = re.compile("\x01t\x02([a-z]+)")
_PAGE = re.compile("\x01page\x02v_[a-z]+/([A-Za-z0-9_]+?)(?:__|\x01|$)")


@dataclass
class RtlCoverage:
    """Merged coverage points: key -> covered, with each key's type and module."""

    covered: dict[str, bool] = field(default_factory=dict)
    kinds: dict[str, tuple[str, str]] = field(default_factory=dict)
    files: int = 0

    def merge_file(self, path: str | Path, *, delete: bool = True) -> None:
        """Add the points of one ``coverage.dat`` (and delete it unless ``delete`` is False)."""
        path = Path(path)
        with path.open(encoding="latin-1") as fh:
            for line in fh:
                if not line.startswith("C '"):
                    continue
                key, _, count = line.rstrip("\n").rpartition(" ")
                hit = count != "0"
                if key not in self.kinds:
                    kind = _TYPE.search(key)
                    page = _PAGE.search(key)
                    self.kinds[key] = (kind.group(1) if kind else "other", page.group(1) if page else "?")
                    self.covered[key] = hit
                elif hit:
                    self.covered[key] = True
        self.files += 1
        if delete:
            path.unlink()

    def totals(self) -> dict[str, dict[str, int]]:
        """Per coverage type: points covered and in total."""
        out: dict[str, dict[str, int]] = defaultdict(lambda: {"covered": 0, "total": 0})
        for key, (kind, _) in self.kinds.items():
            out[kind]["total"] += 1
            out[kind]["covered"] += self.covered[key]
        return dict(out)

    def by_module(self, kind: str = "line") -> dict[str, dict[str, int]]:
        """Per RTL module: points of ``kind`` covered and in total."""
        out: dict[str, dict[str, int]] = defaultdict(lambda: {"covered": 0, "total": 0})
        for key, (k, module) in self.kinds.items():
            if k == kind:
                out[module]["total"] += 1
                out[module]["covered"] += self.covered[key]
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.files, "totals": self.totals(), "line_by_module": self.by_module("line"),
                "toggle_by_module": self.by_module("toggle")}

    def format(self) -> str:
        """Covered/total per type, and the modules with uncovered lines."""
        lines = [f"RTL coverage (Verilator, {self.files} runs):"]
        for kind, t in sorted(self.totals().items()):
            lines.append(f"  {kind:<7} {t['covered']:>6}/{t['total']:<6} {t['covered'] / max(t['total'], 1):6.1%}")
        gaps = [f"{m} {v['covered']}/{v['total']}" for m, v in self.by_module("line").items() if v["covered"] < v["total"]]
        if gaps:
            lines.append("  modules with uncovered lines: " + ", ".join(gaps))
        return "\n".join(lines)


def reset_coverage(folder: str | Path) -> None:
    """Empty ``folder`` of coverage files left by an earlier run."""
    folder = Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
