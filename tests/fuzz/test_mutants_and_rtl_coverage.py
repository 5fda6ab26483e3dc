"""The mutation-testing script and Verilator coverage (builds of their own: the long ones are slow tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vdla.fuzz.campaign import Settings, run_campaign
from vdla.fuzz.mutants import MUTANTS, fuzz_mutant, make_copy


def test_every_mutant_applies_to_the_current_rtl(tmp_path: Path) -> None:
    """Each mutant changes exactly one place of the shipped RTL (an RTL edit that moves the text fails here)."""
    assert len(MUTANTS) >= 10 and len({m.name for m in MUTANTS}) == len(MUTANTS)
    original = make_copy(None, tmp_path / "original")
    for mutant in MUTANTS:
        copy = make_copy(mutant, tmp_path / mutant.name)
        changed = [p.name for p in sorted(copy.glob("*.sv")) if p.read_text() != (original / p.name).read_text()]
        assert changed == [mutant.file], mutant.name


@pytest.mark.slow
@pytest.mark.parametrize("name", ["drop-pop-next", "pad-bottom-short", "imm-zero-extend", "store-stage-a-early",
                                  "store-stage-b-early", "gemm-wgt-unregistered", "gemm-products-unregistered",
                                  "gemm-products-late", "loader-end-from-start", "gather-ignores-elem-stride"])
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


def test_proofs_kill_a_gate_mutant_and_skip_files_without_proofs(tmp_path: Path) -> None:
    """`vdla.fuzz.mutants --proofs`: a real SymbiYosys run refutes a token-gate mutant; an ALU mutant has no proof task."""
    from vdla.fuzz.mutants import format_kill_matrix, prove_mutant

    gate = next(m for m in MUTANTS if m.name == "gate-start-early")
    verdict = prove_mutant(gate, "tiny", tmp_path)
    assert verdict.killed_by is not None and verdict.killed_by.endswith("f_gate_release"), verdict
    alu = prove_mutant(next(m for m in MUTANTS if m.name == "max-is-min"), "tiny", tmp_path)
    assert alu.tasks == () and alu.killed_by is None
    table = format_kill_matrix(None, [verdict, alu])
    assert "| gate-start-early | not run |" in table and "no proof task reads the file" in table
    assert "proofs killed 1/2 mutants" in table


def test_no_fuzz_needs_proofs() -> None:
    from vdla.fuzz.mutants import main

    with pytest.raises(SystemExit) as exc:
        main(["--no-fuzz"])
    assert exc.value.code == 2
