"""A planted bug: a copy of the RTL with one unique line replaced (what the formal tests prove must fail)."""

from __future__ import annotations

import shutil
from pathlib import Path

from vdla_hw.rtl_build import RTL_DIR


def mutant_rtl(tmp_path: Path, module: str, old: str, new: str) -> Path:
    """``vdla_hw/rtl`` copied under ``tmp_path`` with ``old`` replaced by ``new`` in ``<module>.sv``; the anchor
    must occur exactly once, so a changed module fails the test loudly instead of planting nothing."""
    rtl = tmp_path / "rtl"
    shutil.copytree(RTL_DIR, rtl)
    path = rtl / f"{module}.sv"
    text = path.read_text()
    assert text.count(old) == 1, f"the planted bug's anchor is not unique in {module}: {old!r}"
    path.write_text(text.replace(old, new))
    return rtl
