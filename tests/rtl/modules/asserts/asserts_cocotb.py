"""Broken stimuli, one per RTL assertion: each test resets tb_asserts and drives one violation.

The pytest side (test_asserts.py) runs them all in one simulation with Verilator's error
limit raised, so a failed assertion is reported and the run goes on; it then checks that
the log section of each test holds exactly the assertion that test targets.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, FallingEdge

from cocotb_utils import start, test_config
from vdla_hw.isa import DepFlags, MemInsn, MemType, Opcode

SETTLE = 4  # cycles an assertion gets to fire after the broken stimulus


def _idle(dut) -> None:
    for name in ("f_in_valid", "f_in_data", "f_out_ready", "q_in_valid", "q_in_data", "s_in_valid", "s_in_data", "g_cmd_valid", "g_cmd_insn", "g_exec_done",
                 "g_pop_prev_valid", "t_start", "t_insn", "w_valid", "w_addr", "w_count", "w_span_end", "w_in_window", "u_start", "u_bgn", "u_end", "x_ar_valid", "x_ar_ready",
                 "x_ar_addr", "x_ar_len", "x_aw_valid", "x_aw_ready", "x_aw_addr", "x_aw_len", "x_w_valid",
                 "x_w_ready", "x_w_data", "x_w_last"):
        getattr(dut, name).value = 0


async def _begin(dut) -> None:
    _idle(dut)
    await start(dut)
    await FallingEdge(dut.clk)  # drive inputs away from the sampling edge


async def _no_fire(dut, label: str) -> None:
    """Give ``label`` time to fire; whether it did is read from the log by the pytest side."""
    await ClockCycles(dut.clk, SETTLE)
    # Back to reset (which disables the assertions) so the violation does not spill into the next test.
    dut.rst_n.value = 0
    _idle(dut)
    await ClockCycles(dut.clk, 2)
    dut._log.info("end of the stimulus for %s", label)


def _insn(**fields) -> int:
    cfg = test_config()
    base = dict(mem_type=MemType.INP, sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1)
    base.update(fields)
    insn = MemInsn(Opcode.LOAD, base["mem_type"], base["sram_base"], base["dram_base"], base["y_size"],
                   base["x_size"], base["x_stride"], 0, 0, 0, 0, DepFlags(False, False, False, False))
    return cfg.isa.encode(insn)


async def _fill_fifo(dut) -> None:
    dut.f_in_valid.value = 1
    for k in range(2):
        dut.f_in_data.value = k
        await FallingEdge(dut.clk)
    assert dut.f_in_ready.value == 0


@cocotb.test()
async def fifo_overflow(dut):
    await _begin(dut)
    await _fill_fifo(dut)  # a third push with the FIFO full: the strict producer ignored in_ready
    await _no_fire(dut, "a_fifo_overflow")


@cocotb.test()
async def fifo_underflow(dut):
    await _begin(dut)
    dut.f_out_ready.value = 1  # pop an empty FIFO whose consumer relies on an entry
    await _no_fire(dut, "a_fifo_underflow")


@cocotb.test()
async def fifo_count(dut):
    # Built from a mutant vdla_fifo whose in_ready admits a push at DEPTH entries: the strict
    # producer sees in_ready and pushes a third entry into the two-entry FIFO.
    await _begin(dut)
    dut.f_in_valid.value = 1
    for k in range(3):
        dut.f_in_data.value = k
        await FallingEdge(dut.clk)
    await _no_fire(dut, "a_fifo_count")


@cocotb.test()
async def fifo_in_stable(dut):
    await _begin(dut)
    dut.q_in_valid.value = 1
    dut.q_in_data.value = 1
    await FallingEdge(dut.clk)  # the one-entry queue takes it and is full; the next push waits ...
    dut.q_in_data.value = 2
    await FallingEdge(dut.clk)
    dut.q_in_data.value = 3  # ... and its payload changes before the queue accepted it
    await _no_fire(dut, "a_fifo_in_stable")


@cocotb.test()
async def skid_in_stable(dut):
    await _begin(dut)
    dut.s_in_valid.value = 1
    dut.s_in_data.value = 1
    await FallingEdge(dut.clk)  # the output register takes it (and is never emptied) ...
    dut.s_in_data.value = 2
    await FallingEdge(dut.clk)  # ... the skid register the next; the slice is full
    assert dut.s_in_ready.value == 0
    dut.s_in_data.value = 3
    await FallingEdge(dut.clk)
    dut.s_in_data.value = 4  # the word offered to the full slice changes before it was taken
    await _no_fire(dut, "a_skid_in_stable")


@cocotb.test()
async def window_span_end(dut):
    await _begin(dut)
    cfg = test_config()
    dut.w_valid.value = 1
    dut.w_addr.value = 0x100
    dut.w_count.value = 3
    # a client whose registered end byte is one element short of addr + count elements
    dut.w_span_end.value = 0x100 + 2 * cfg.inp_elem_bytes
    dut.w_in_window.value = 1  # the verdict the window [0, 2^32) gives that span: only the sum is wrong
    await _no_fire(dut, "a_window_span_end")


@cocotb.test()
async def window_verdict(dut):
    await _begin(dut)
    cfg = test_config()
    dut.w_valid.value = 1
    dut.w_addr.value = 0x100
    dut.w_count.value = 3
    dut.w_span_end.value = 0x100 + 3 * cfg.inp_elem_bytes
    # a client whose registered verdict refuses a command the window [0, 2^32) holds
    dut.w_in_window.value = 0
    await _no_fire(dut, "a_window_verdict")


@cocotb.test()
async def gate_cmd_stable(dut):
    await _begin(dut)
    dut.g_cmd_valid.value = 1
    dut.g_cmd_insn.value = _insn()
    await FallingEdge(dut.clk)  # the gate takes it and is busy; offer the next one ...
    dut.g_cmd_insn.value = _insn(sram_base=1)
    await FallingEdge(dut.clk)
    dut.g_cmd_insn.value = _insn(sram_base=2)  # ... and change it before it is taken
    await _no_fire(dut, "a_gate_cmd_stable")


@cocotb.test()
async def gate_token_held(dut):
    await _begin(dut)
    dut.g_pop_prev_valid.value = 1  # a token offered while the gate is idle (not popping) ...
    await FallingEdge(dut.clk)
    dut.g_pop_prev_valid.value = 0  # ... vanishes before it was popped
    await _no_fire(dut, "a_gate_token_held")


@cocotb.test()
async def gate_exec_done(dut):
    await _begin(dut)
    dut.g_exec_done.value = 1  # a completion while no instruction executes
    await _no_fire(dut, "a_gate_exec_done")


@cocotb.test()
async def axi_ar_burst(dut):
    cfg = test_config()
    await _begin(dut)
    dut.x_ar_addr.value = 4096 - cfg.bus_bytes  # the last beat of a page, then one more
    dut.x_ar_len.value = 1
    dut.x_ar_valid.value = 1
    await _no_fire(dut, "a_axi_ar_burst")


@cocotb.test()
async def axi_aw_burst(dut):
    cfg = test_config()
    await _begin(dut)
    dut.x_aw_addr.value = 2 * 4096 - 2 * cfg.bus_bytes
    dut.x_aw_len.value = 2  # three beats from two before a page boundary
    dut.x_aw_valid.value = 1
    await _no_fire(dut, "a_axi_aw_burst")


@cocotb.test()
async def axi_ar_stable(dut):
    await _begin(dut)
    dut.x_ar_valid.value = 1
    await FallingEdge(dut.clk)
    dut.x_ar_addr.value = 0x40  # moved while ARREADY is low
    await _no_fire(dut, "a_axi_ar_stable")


@cocotb.test()
async def axi_aw_stable(dut):
    await _begin(dut)
    dut.x_aw_valid.value = 1
    await FallingEdge(dut.clk)
    dut.x_aw_valid.value = 0  # withdrawn before AWREADY
    await _no_fire(dut, "a_axi_aw_stable")


@cocotb.test()
async def axi_w_stable(dut):
    await _begin(dut)
    dut.x_w_valid.value = 1
    dut.x_w_data.value = 1
    await FallingEdge(dut.clk)
    dut.x_w_data.value = 2  # changed while WREADY is low
    await _no_fire(dut, "a_axi_w_stable")


@cocotb.test()
async def axi_wlast(dut):
    await _begin(dut)
    dut.x_aw_valid.value = 1
    dut.x_aw_ready.value = 1
    dut.x_aw_len.value = 1  # a two-beat burst ...
    await FallingEdge(dut.clk)
    dut.x_aw_valid.value = 0
    dut.x_w_valid.value = 1
    dut.x_w_ready.value = 1
    dut.x_w_last.value = 1  # ... whose first beat carries WLAST
    await _no_fire(dut, "a_axi_wlast")
