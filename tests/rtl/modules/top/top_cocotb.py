"""Smoke test of vdla_top: one small program touching every instruction, DRAM vs fsim; the identity registers."""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam, AxiResp

from cocotb_utils import start, test_config
from vdla.simulator.fsim import run_fsim
from vdla_hw import regmap
from vdla_hw.isa import AluInsn, AluOp, DepFlags, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop

DRAM_BYTES = 1 << 20
REGION = 1 << 16  # every buffer starts on a 64 KiB boundary: aligned for any element size


def build_program(cfg):
    rng = np.random.default_rng(1)
    isa = cfg.isa
    dram = np.zeros(DRAM_BYTES, dtype=np.uint8)
    uop_at, inp_at, wgt_at, acc_at, out_at, insn_at = (k * REGION for k in range(1, 7))
    uops = [Uop(dst=i, src=i, wgt=i % 2) for i in range(4)]
    words = isa.encode_uops(uops).view(np.uint8)
    dram[uop_at : uop_at + words.size] = words
    dram[inp_at : inp_at + 16 * cfg.inp_elem_bytes] = rng.integers(0, 256, 16 * cfg.inp_elem_bytes)
    dram[wgt_at : wgt_at + 4 * cfg.wgt_elem_bytes] = rng.integers(0, 256, 4 * cfg.wgt_elem_bytes)
    dram[acc_at : acc_at + 8 * cfg.acc_elem_bytes] = rng.integers(0, 256, 8 * cfg.acc_elem_bytes)
    e = lambda at, mt: at // {MemType.UOP: 4, MemType.INP: cfg.inp_elem_bytes, MemType.WGT: cfg.wgt_elem_bytes,
                              MemType.ACC: cfg.acc_elem_bytes, MemType.OUT: cfg.out_elem_bytes}[mt]
    L, S = Opcode.LOAD, Opcode.STORE
    prog = [
        MemInsn(L, MemType.UOP, 0, e(uop_at, MemType.UOP), 1, 4, 4),
        MemInsn(L, MemType.ACC, 0, e(acc_at, MemType.ACC), 2, 3, 4, 0, 0, 1, 0),
        MemInsn(L, MemType.INP, 0, e(inp_at, MemType.INP), 2, 3, 5, 1, 1, 1, 0),
        MemInsn(L, MemType.WGT, 0, e(wgt_at, MemType.WGT), 1, 4, 4, deps=DepFlags(push_next=True)),
        GemmInsn(False, 0, 4, 2, 2, 4, 0, 4, 8, 0, 2, deps=DepFlags(pop_prev=True)),
        AluInsn(AluOp.ADD, True, 3, 0, 4, 2, 1, 4, 0, 0, 0),
        AluInsn(AluOp.MAX, False, 0, 0, 4, 1, 1, 0, 0, 4, 0),
        AluInsn(AluOp.SHR, True, 1, 0, 4, 2, 1, 4, 0, 0, 0),
        AluInsn(AluOp.MUL, True, -3, 0, 4, 2, 1, 4, 0, 0, 0),
        AluInsn(AluOp.MIN, True, 100, 0, 4, 2, 1, 4, 0, 0, 0, deps=DepFlags(push_next=True)),
        MemInsn(S, MemType.OUT, 0, e(out_at, MemType.OUT), 2, 4, 6, deps=DepFlags(pop_prev=True, push_prev=True)),
        FinishInsn(deps=DepFlags(pop_next=True)),
    ]
    code = isa.encode_program(prog)
    dram[insn_at : insn_at + code.size] = code
    return prog, dram, insn_at


@cocotb.test()
async def program_matches_fsim(dut):
    cfg = test_config()
    prog, dram, insn_at = build_program(cfg)
    expected = run_fsim(cfg, prog, dram).dram
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst_n, reset_active_level=False, size=DRAM_BYTES)
    ram.write(0, dram.tobytes())
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst_n, reset_active_level=False)
    await start(dut)
    await axil.write_dword(regmap.offset("WINDOW_LIMIT"), DRAM_BYTES)
    await axil.write_dword(regmap.offset("INSN_ADDR"), insn_at)
    await axil.write_dword(regmap.offset("INSN_COUNT"), len(prog))
    await axil.write_dword(regmap.offset("CONTROL"), regmap.CONTROL_START)
    for _ in range(2000):
        await ClockCycles(dut.clk, 20)
        if int(dut.done.value):
            break
    else:
        raise AssertionError("vdla_top did not finish in 40000 cycles")
    status = await axil.read_dword(regmap.offset("STATUS"))
    assert status & regmap.STATUS_DONE and not status & regmap.STATUS_BUSY
    cycles = await axil.read_dword(regmap.offset("CYCLES_LO"))
    dut._log.info("program of %d instructions took %d cycles", len(prog), cycles)
    got = np.frombuffer(ram.read(0, DRAM_BYTES), dtype=np.uint8)
    diff = np.flatnonzero(got != expected)
    assert diff.size == 0, f"{diff.size} DRAM bytes differ from fsim, first at {diff[:8]}: got {got[diff[:8]]}, want {expected[diff[:8]]}"


@cocotb.test()
async def identity_registers_read_the_config_digest(dut):
    cfg = test_config()
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst_n, reset_active_level=False)
    await start(dut)
    assert f"{await axil.read_dword(regmap.offset('CONFIG_ID')):08x}" == cfg.digest[-8:]
    assert await axil.read_dword(regmap.offset("BUILD_ID")) == 0
    # read-only: a write answers SLVERR and changes nothing
    resp = await axil.write(regmap.offset("CONFIG_ID"), (0).to_bytes(4, "little"))
    assert resp.resp == AxiResp.SLVERR
    assert f"{await axil.read_dword(regmap.offset('CONFIG_ID')):08x}" == cfg.digest[-8:]
