"""RTL assertions in the Verilator harness: a failed one stops the run with a DeviceFaultError
naming the assertion, the module and the instance (docs/rtl.md, "Assertions")."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from rtl_configs import configs_under_test

from vdla.runtime import run
from vdla.runtime.program import ProgramBuilder
from vdla.runtime.system_programs import build_case
from vdla_hw.config import load_config
from vdla_hw import regmap
from vdla_hw.harness import RtlSim, RunStatus
from vdla_hw.harness.sim import RtlAssertionError
from vdla_hw.isa import MemType
from vdla_hw.rtl_build import RTL_DIR


@pytest.fixture(scope="module", params=configs_under_test(["tiny"]))
def tiny(request):
    return load_config(request.param)


def test_sram_overrun_is_a_fault_not_an_assertion(tiny) -> None:
    """A LOAD whose block runs past the input buffer is a program fault the design reports
    (docs/rtl.md, "Faults"), not a broken invariant: driven through the harness directly, the
    run ends with done, STATUS.fault and FAULT registers naming the instruction and element."""
    pb = ProgramBuilder(tiny)
    inp = pb.alloc("inp", "inp", (2, tiny.block_in), np.ones((2, tiny.block_in), dtype=np.int8))
    pb.load(MemType.INP, tiny.inp_buff_depth - 1, inp.addr, 1, 2, 2)
    pb.finish()
    program = pb.build()
    with RtlSim(tiny) as sim:
        sim.load_dram(program.dram)
        sim.start(program.insn_addr, program.insn_count)
        assert sim.run(100_000) == RunStatus.DONE
        status = sim.read_reg("STATUS")
        assert status & regmap.STATUS_FAULT and status & regmap.STATUS_DONE and not status & regmap.STATUS_BUSY
        cause = sim.read_reg("FAULT_CAUSE")
        assert cause == regmap.FAULT_SRAM_RANGE | regmap.BUF_INP << regmap.FAULT_BUF_SHIFT
        assert (sim.read_reg("FAULT_INSN"), sim.read_reg("FAULT_ADDR")) == (0, tiny.inp_buff_depth)


@pytest.mark.slow
def test_rtl_backend_reports_a_broken_design(tiny, tmp_path) -> None:
    """The rtl backend on a mutant RTL whose write engine puts WLAST on the wrong beat: the
    AXI checker's assertion fires before the DRAM model sees the burst end."""
    rtl = tmp_path / "rtl"
    shutil.copytree(RTL_DIR, rtl)
    dma_wr = rtl / "vdla_dma_wr.sv"
    text = dma_wr.read_text()
    assert "assign w_last    = beats_now == 9'd1;" in text
    dma_wr.write_text(text.replace("assign w_last    = beats_now == 9'd1;", "assign w_last    = beats_now == 9'd2;"))
    with pytest.raises(RtlAssertionError) as info:
        run(build_case(tiny, "gemm"), "rtl", rtl_dir=str(rtl))
    assert (info.value.assertion, info.value.module) == ("a_axi_wlast", "vdla_axi_check")
