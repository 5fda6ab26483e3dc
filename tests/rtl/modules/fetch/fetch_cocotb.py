"""vdla_fetch: every instruction reaches the queue of the module that runs it, in program
order, with random queue back-pressure and AXI stalls; programs start at any 16-byte address."""

from __future__ import annotations

import itertools

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiRamRead, AxiReadBus

from cocotb_utils import env_int, start, test_config
from vdla_hw.isa import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Module, Opcode, module_of

DRAM_BYTES = 1 << 16
QUEUES = {Module.LOAD: "load", Module.COMPUTE: "compute", Module.STORE: "store"}


def random_insn(rng: np.random.Generator, k: int):
    kind = int(rng.integers(0, 6))
    if kind == 0:
        mt = [MemType.INP, MemType.WGT, MemType.UOP, MemType.ACC][int(rng.integers(0, 4))]
        return MemInsn(Opcode.LOAD, mt, k % 7, k, 1, 1, 1)
    if kind == 1:
        return MemInsn(Opcode.STORE, MemType.OUT, k % 7, k, 1, 1, 1)
    if kind == 2:
        return GemmInsn(False, 0, 1, 1, 1, k % 5, 0, 0, 0, 0, 0)
    if kind == 3:
        return AluInsn(AluOp.ADD, True, k, 0, 1, 1, 1, 0, 0, 0, 0)
    if kind == 4:
        return MemInsn(Opcode.LOAD, MemType.INP, k % 7, k, 1, 1, 1)
    return FinishInsn()


@cocotb.test()
async def dispatch_in_program_order(dut):
    cfg = test_config()
    rng = np.random.default_rng(env_int("SEED", 19))
    ram = AxiRamRead(AxiReadBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst_n, reset_active_level=False, size=DRAM_BYTES)
    ram.r_channel.set_pause_generator(itertools.cycle(rng.random(61) < 0.3))
    for name in ("start", "load_ready", "compute_ready", "store_ready"):
        getattr(dut, name).value = 0
    await start(dut)
    for trial in range(env_int("TRIALS", 3)):
        n = int(rng.integers(1, 3 * max(1, cfg.timing.dram_burst_bytes // 16) + 5))
        prog = [random_insn(rng, k) for k in range(n)]
        words = [cfg.isa.encode(i) for i in prog]
        addr = 16 * int(rng.integers(0, DRAM_BYTES // 16 - n))
        ram.write(addr, cfg.isa.encode_program(prog).tobytes())
        dut.insn_addr.value = addr
        dut.insn_count.value = n
        dut.start.value = 1
        await RisingEdge(dut.clk)
        dut.start.value = 0
        seen: list[tuple[Module, int]] = []
        for _ in range(200 * n + 200):
            for q in QUEUES.values():
                getattr(dut, f"{q}_ready").value = int(rng.random() < 0.5)
            await ReadOnly()
            fired = [m for m, q in QUEUES.items() if int(getattr(dut, f"{q}_valid").value) and int(getattr(dut, f"{q}_ready").value)]
            valid = [m for m, q in QUEUES.items() if int(getattr(dut, f"{q}_valid").value)]
            assert len(valid) <= 1, f"instruction offered to several queues: {valid}"
            if fired:
                seen.append((fired[0], int(dut.insn.value)))
            await RisingEdge(dut.clk)
            if len(seen) == n:
                break
        expected = [(module_of(i), w) for i, w in zip(prog, words)]
        assert seen == expected, f"trial {trial}: dispatch differs from program order at {next((k for k, (a, b) in enumerate(zip(seen, expected)) if a != b), len(seen))}"
        for _ in range(20):  # nothing more comes out
            await RisingEdge(dut.clk)
            assert not any(int(getattr(dut, f"{q}_valid").value) for q in QUEUES.values())
