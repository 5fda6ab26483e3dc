"""The ``rtl`` backend (Verilated vdla_top + C++ DRAM model through ctypes) against fsim."""

from __future__ import annotations

import numpy as np
import pytest
from rtl_configs import configs_under_test

from vdla.compiler.cli.main import main as vdla
from vdla.runtime import Device, run
from vdla.runtime.backends.rtl import RtlTimeoutError
from vdla.runtime.program import ProgramBuilder
from vdla.runtime.system_programs import build_case
from vdla.runtime.workloads import tiled_gemm_program
from vdla.simulator.errors import DeadlockError, ProtocolError
from vdla_hw.config import load_config
from vdla_hw.isa import AluOp, MemType, Uop

CASES = ["gemm", "gemm_vt2", "alu_shr", "alu_mul", "alu_chain", "padding", "tokens_full", "random0", "random1", "random2"]


@pytest.fixture(scope="module", params=configs_under_test(["tiny"]))
def tiny(request):
    """The config the backend tests run on (its name is in every test id, for `vdla hw test --config`)."""
    return load_config(request.param)


@pytest.mark.parametrize("case", CASES)
def test_rtl_dram_equals_fsim(tiny, case: str) -> None:
    program = build_case(tiny, case)
    expected = run(program, "fsim").dram
    result = run(program, "rtl")
    np.testing.assert_array_equal(result.dram, expected)
    assert result.backend == "rtl"
    assert result.cycles > 0
    assert result.counters["instructions"] == program.insn_count
    assert result.extra["simulated_cycles"] >= result.cycles


def test_rtl_gemm_matches_numpy_reference(tiny) -> None:
    program, reference = tiled_gemm_program(tiny, 8, 16, 12, virtual_threads=2, seed=3)
    np.testing.assert_array_equal(run(program, "rtl").read("out"), reference)


def test_rtl_cycle_count_is_deterministic(tiny) -> None:
    program = build_case(tiny, "random3")
    assert run(program, "rtl").cycles == run(program, "rtl").cycles


def test_rtl_dram_latency_option_changes_timing_not_results(tiny) -> None:
    program = build_case(tiny, "gemm")
    fast, slow = run(program, "rtl", dram_latency=1), run(program, "rtl", dram_latency=100)
    np.testing.assert_array_equal(fast.dram, slow.dram)
    assert slow.cycles > fast.cycles


def test_device_runs_on_rtl(tiny) -> None:
    dev = Device(tiny, backend="rtl")
    a = np.arange(16).reshape(4, 4) - 8
    src = dev.alloc("a", "acc", (4, 4))
    out = dev.alloc("out", "out", (4, 4))
    dev.copy_to(src, a)
    pb = dev.builder()
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))
    pb.load(MemType.ACC, 0, src.addr, 1, 4, 4)
    pb.alu(AluOp.MUL, 0, 1, imm=-3, iter_out=4, dst_factor=(1, 0), push_next=True)
    pb.store(0, out.addr, 1, 4, 4, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    dev.run(pb)
    np.testing.assert_array_equal(dev.copy_from(out), a * -3)


def _deadlocking_program(cfg):
    pb = ProgramBuilder(cfg)
    inp = pb.alloc("inp", "inp", (4, cfg.block_in), np.ones((4, cfg.block_in), dtype=np.int8))
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))
    pb.load(MemType.INP, 0, inp.addr, 1, 1, 1, pop_next=True)  # waits for compute, which waits for it
    pb.gemm(0, 1, pop_prev=True)
    pb.finish()
    return pb.build()


def test_rtl_deadlock_names_each_module_instruction(tiny) -> None:
    with pytest.raises(DeadlockError) as info:
        run(_deadlocking_program(tiny), "rtl")
    text = str(info.value)
    assert "load: waiting to pop its tokens on instruction 1 (LOAD INP" in text
    assert "compute: waiting to pop its tokens on instruction 2 (GEMM" in text
    assert "c2l (holds 0)" in text and "l2c (holds 0)" in text


def test_rtl_cycle_watchdog_reports_progress(tiny) -> None:
    program = build_case(tiny, "gemm")
    with pytest.raises(RtlTimeoutError) as info:
        run(program, "rtl", max_cycles=100)
    text = str(info.value)
    assert "100 cycles without FINISH" in text
    for module in ("fetch:", "load:", "compute:", "store:"):
        assert module in text


def test_rtl_rejects_illegal_program_before_simulating(tiny) -> None:
    pb = ProgramBuilder(tiny)
    pb.load(MemType.UOP, 0, 0, 1, 1, 1, pad=(1, 0, 0, 0))
    pb.finish()
    with pytest.raises(ProtocolError, match="micro-op loads cannot pad"):
        run(pb.build(), "rtl")


def test_cli_sim_rtl_writes_waveform(tiny, tmp_path, capsys) -> None:
    program = build_case(tiny, "alu_add")
    path = program.save(tmp_path / "prog.vdlaprog")
    fst = tmp_path / "wave.fst"
    assert vdla(["sim", str(path), "--backend", "rtl", "--fst", str(fst)]) == 0
    assert "backend rtl" in capsys.readouterr().out
    assert fst.stat().st_size > 1000
    assert fst.read_bytes()[:1] == b"\x00"  # FST files start with a header block of type 0
