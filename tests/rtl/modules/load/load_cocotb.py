"""vdla_load against fsim: 2D strided and gathering INP/WGT loads with zero padding, under random AXI
back-pressure; the l2c token follows the load and a c2l pop precedes it."""

from __future__ import annotations

import itertools

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiRamRead, AxiReadBus

from cocotb_utils import env_int, start, test_config
from vdla.simulator import packing
from vdla.simulator.semantics import execute
from vdla.simulator.state import MachineState
from vdla_hw.isa import DepFlags, MemInsn, MemType, Opcode

DRAM_BYTES = 1 << 18


def random_load(cfg, rng: np.random.Generator, mem_type: MemType, eb: int) -> MemInsn:
    y, x = int(rng.integers(0, 4)), int(rng.integers(1, 6))
    # Two in five gather (an element stride of 2..5, no x padding): one DMA command per element.
    step = int(rng.integers(2, 6)) if rng.random() < 0.4 else 1
    span = (x - 1) * step + 1
    stride = span + int(rng.integers(-1 if step > 1 else 0, 4))
    pads = [int(rng.integers(0, 3)) for _ in range(4)]
    if step > 1:
        pads[2] = pads[3] = 0
    n_elems = (y - 1) * stride + span if y else 0
    base = int(rng.integers(0, DRAM_BYTES // eb - n_elems - 1))
    return MemInsn(Opcode.LOAD, mem_type, int(rng.integers(0, 8)), base, y, x, stride, *pads,
                   deps=DepFlags(pop_next=bool(rng.random() < 0.3), push_next=bool(rng.random() < 0.5)),
                   elem_stride=step)


async def read_sram(dut, cfg, mem_type: MemType, addr: int) -> np.ndarray:
    wgt = mem_type == MemType.WGT
    dut.tb_re.value = 1
    dut.tb_sel.value = int(wgt)
    dut.tb_addr.value = addr
    await RisingEdge(dut.clk)
    dut.tb_re.value = 0
    await ReadOnly()
    eb = cfg.wgt_elem_bytes if wgt else cfg.inp_elem_bytes
    raw = int((dut.tb_wgt_q if wgt else dut.tb_inp_q).value).to_bytes(eb, "little")
    await RisingEdge(dut.clk)
    vals = packing.decode(np.frombuffer(raw, dtype=np.uint8).reshape(1, -1), cfg.wgt_width if wgt else cfg.inp_width)
    return vals.reshape((cfg.block_out, cfg.block_in) if wgt else (cfg.batch, cfg.block_in))


@cocotb.test()
async def padded_loads_match_fsim(dut):
    cfg = test_config()
    rng = np.random.default_rng(env_int("SEED", 13))
    dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    ram = AxiRamRead(AxiReadBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst_n, reset_active_level=False, size=DRAM_BYTES)
    ram.write(0, dram.tobytes())
    ram.r_channel.set_pause_generator(itertools.cycle(rng.random(97) < 0.3))
    ram.ar_channel.set_pause_generator(itertools.cycle(rng.random(31) < 0.3))
    for name in ("cmd_valid", "c2l_valid", "l2c_ready", "tb_re"):
        getattr(dut, name).value = 0
    await start(dut)
    state = MachineState(cfg, dram)
    for k in range(env_int("N_INSNS", 12)):
        mem_type = MemType.INP if k % 2 == 0 else MemType.WGT
        eb = cfg.inp_elem_bytes if mem_type == MemType.INP else cfg.wgt_elem_bytes
        insn = random_load(cfg, rng, mem_type, eb)
        dut.cmd_insn.value = cfg.isa.encode(insn)
        dut.cmd_valid.value = 1
        await RisingEdge(dut.clk)
        dut.cmd_valid.value = 0
        # The c2l token arrives late: the load must wait for it before touching the SRAM.
        popped = pushed = False
        for cycle in range(5000):
            if insn.deps.pop_next and cycle == 20:
                dut.c2l_valid.value = 1
            dut.l2c_ready.value = int(rng.random() < 0.5)
            await ReadOnly()
            if int(dut.c2l_valid.value) and int(dut.c2l_ready.value):
                popped = True
            if int(dut.l2c_valid.value) and int(dut.l2c_ready.value):
                pushed = True
            busy = int(dut.busy.value)
            await RisingEdge(dut.clk)
            if popped:
                dut.c2l_valid.value = 0
            if cycle > 3 and not busy:
                break
        else:
            raise AssertionError(f"load {k} ({insn}) did not finish")
        assert popped == insn.deps.pop_next and pushed == insn.deps.push_next, f"load {k}: tokens {popped=} {pushed=}"
        execute(state, insn, k)
        rows = insn.y_pad0 + insn.y_size + insn.y_pad1
        cols = insn.x_pad0 + insn.x_size + insn.x_pad1
        ref = state.inp if mem_type == MemType.INP else state.wgt
        for a in range(insn.sram_base, insn.sram_base + rows * cols):
            got = await read_sram(dut, cfg, mem_type, a)
            assert np.array_equal(got, ref[a]), f"load {k} ({insn}): {mem_type.name}[{a}] = {got}, fsim {ref[a]}"
