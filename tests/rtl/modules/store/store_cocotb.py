"""vdla_store against fsim: strided rows requantized from int32 accumulators (a bias per row or per block,
random shift, ReLU and saturating clip, or the plain two's-complement wrap), bytes outside the rows untouched, under random AXI back-pressure; the s2c token
is pushed only after DRAM acknowledged every write."""

from __future__ import annotations

import itertools

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiRamWrite, AxiWriteBus

from cocotb_utils import env_int, start, test_config
from sram_backdoor import tile_int
from vdla.simulator.semantics import execute
from vdla.simulator.state import MachineState
from vdla_hw.isa import DepFlags, MemInsn, MemType, Opcode

DRAM_BYTES = 1 << 18
N_ACC = 64


@cocotb.test()
async def requantizing_stores_match_fsim(dut):
    cfg = test_config()
    rng = np.random.default_rng(env_int("SEED", 17))
    dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    ram = AxiRamWrite(AxiWriteBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst_n, reset_active_level=False, size=DRAM_BYTES)
    ram.write(0, dram.tobytes())
    ram.w_channel.set_pause_generator(itertools.cycle(rng.random(89) < 0.3))
    ram.b_channel.set_pause_generator(itertools.cycle(rng.random(23) < 0.4))
    for name in ("cmd_valid", "c2s_valid", "s2c_ready", "acc_wr_en"):
        getattr(dut, name).value = 0
    await start(dut)
    state = MachineState(cfg, dram, zeroed_sram=True)  # its accumulators are set through the backdoor below
    # Accumulators around the narrowing edges plus random ones.
    edges = np.array([0, 1, -1, 127, 128, -128, -129, 255, 256, 2**31 - 1, -(2**31)], dtype=np.int64)
    vals = rng.integers(-(2**31), 2**31, (N_ACC, cfg.batch, cfg.block_out), dtype=np.int64)
    vals.reshape(-1)[: edges.size] = edges
    state.acc[:N_ACC] = vals.astype(state.acc.dtype)
    for a in range(N_ACC):
        dut.acc_wr_en.value = 1
        dut.acc_wr_addr.value = a
        dut.acc_wr_data.value = tile_int(state.acc[a], cfg.acc_width)
        await RisingEdge(dut.clk)
    dut.acc_wr_en.value = 0
    eb = cfg.out_elem_bytes
    for k in range(env_int("N_INSNS", 10)):
        y, x = int(rng.integers(0, 4)), int(rng.integers(1, 7))
        stride = x + int(rng.integers(0, 3))
        base = int(rng.integers(0, DRAM_BYTES // eb - y * stride - 1))
        # Every other store is the plain narrowing; the rest requantize with random fields.
        requant = k % 2 == 1
        # A third of the stores add a bias: per row (step 1) or one for the block (step 0).
        step = int(rng.integers(0, 2))
        bias = k % 3 == 2
        insn = MemInsn(Opcode.STORE, MemType.OUT, int(rng.integers(0, N_ACC - y * x + 1)), base, y, x, stride,
                       deps=DepFlags(pop_prev=True, push_prev=True),
                       shift=int(rng.integers(0, cfg.acc_width)) if requant else 0,
                       clip=requant and bool(rng.integers(0, 2)), relu=requant and bool(rng.integers(0, 2)),
                       bias=bias, bias_row=int(rng.integers(0, N_ACC - max(y - 1, 0) * step)) if bias else 0,
                       bias_step=step if bias else 0)
        dut.cmd_insn.value = cfg.isa.encode(insn)
        dut.cmd_valid.value = 1
        await RisingEdge(dut.clk)
        dut.cmd_valid.value = 0
        dut.c2s_valid.value = 1
        pushed_at = None
        popped = False
        for cycle in range(5000):
            dut.s2c_ready.value = int(rng.random() < 0.7)
            await ReadOnly()
            if int(dut.c2s_ready.value):
                popped = True
            if int(dut.s2c_valid.value) and int(dut.s2c_ready.value):
                pushed_at = cycle
                # Every byte is in DRAM by the time the token leaves.
                execute(state, insn, k)
                got = np.frombuffer(ram.read(0, DRAM_BYTES), dtype=np.uint8)
                diff = np.flatnonzero(got != state.dram)
                assert diff.size == 0, f"store {k} ({insn}): {diff.size} DRAM bytes differ, first at {diff[:6]}"
            await RisingEdge(dut.clk)
            if popped:
                dut.c2s_valid.value = 0
            if pushed_at is not None:
                break
        else:
            raise AssertionError(f"store {k} ({insn}) did not finish")
