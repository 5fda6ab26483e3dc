"""The mutation-testing script and Verilator coverage (builds of their own: the long ones are slow tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.campaign import Settings, run_campaign
from fuzz.mutants import MUTANTS, fuzz_mutant, make_copy


def test_every_mutant_applies_to_the_current_rtl(tmp_path: Path) -> None:
    """Each mutant changes exactly one place of the shipped RTL (an RTL edit that moves the text fails here)."""
    assert len(MUTANTS) >= 10 and len({m.name for m in MUTANTS}) == len(MUTANTS)
    original = make_copy(None, tmp_path / "original")
    for mutant in MUTANTS:
        copy = make_copy(mutant, tmp_path / mutant.name)
        changed = [p.name for p in sorted(copy.glob("*.sv")) if p.read_text() != (original / p.name).read_text()]
        assert changed == [mutant.file], mutant.name


@pytest.mark.slow
@pytest.mark.parametrize("name", ["drop-pop-next", "pad-bottom-short", "imm-zero-extend"])
def test_fuzzer_kills_mutant(name: str, tmp_path: Path) -> None:
    mutant = next(m for m in MUTANTS if m.name == name)
    verdict = fuzz_mutant(mutant, "tiny", 1000, 0, tmp_path)
    assert verdict.killed, verdict


@pytest.mark.slow
def test_rtl_coverage_is_measured_and_merged(tmp_path: Path) -> None:
    cov_dir = tmp_path / "cov"
    cov_dir.mkdir()
    result = run_campaign(Settings("tiny", count=10, backends=("fsim", "rtl"),
                                   options={"rtl": {"coverage_dir": str(cov_dir)}}), quiet=True)
    totals = result.rtl_coverage.totals()
    assert result.rtl_coverage.files == 10 and not list(cov_dir.iterdir())  # merged and removed
    for kind in ("line", "toggle"):
        assert 0 < totals[kind]["covered"] <= totals[kind]["total"]
