"""Back-door access to the SRAM test wrappers (tb_gemm, tb_alu) and the fsim reference state."""

from __future__ import annotations

import numpy as np
from cocotb.triggers import ReadOnly, RisingEdge

from vdla.simulator import packing
from vdla.simulator.state import MachineState
from vdla_hw.config import HwConfig

SEL = {"uop": 0, "inp": 1, "wgt": 2, "acc": 3}


def tile_int(values: np.ndarray, width: int) -> int:
    """One SRAM element as an integer: its values packed little-endian."""
    return int.from_bytes(packing.encode(np.asarray(values).reshape(1, -1), width).tobytes(), "little")


async def write(dut, buf: str, addr: int, word: int) -> None:
    dut.tb_we.value = 1
    dut.tb_sel.value = SEL[buf]
    dut.tb_addr.value = addr
    dut.tb_data.value = word
    await RisingEdge(dut.clk)
    dut.tb_we.value = 0


async def read_acc(dut, cfg: HwConfig, addr: int) -> np.ndarray:
    dut.tb_acc_re.value = 1
    dut.tb_addr.value = addr
    await RisingEdge(dut.clk)
    dut.tb_acc_re.value = 0
    await ReadOnly()
    raw = int(dut.tb_acc_q.value).to_bytes(cfg.acc_elem_bytes, "little")
    await RisingEdge(dut.clk)
    return packing.decode(np.frombuffer(raw, dtype=np.uint8).reshape(1, -1), cfg.acc_width).reshape(cfg.batch, cfg.block_out)


async def load_state(dut, cfg: HwConfig, state: MachineState, regions: dict[str, int]) -> None:
    """Copy the first ``regions[buf]`` elements of each buffer of ``state`` into the RTL SRAMs."""
    for buf, n in regions.items():
        for k in range(n):
            if buf == "uop":
                word = int(state.uop[k])
            else:
                width = {"inp": cfg.inp_width, "wgt": cfg.wgt_width, "acc": cfg.acc_width}[buf]
                word = tile_int(getattr(state, buf)[k], width)
            await write(dut, buf, k, word)


async def run_insn(dut, word: int, limit: int = 100_000) -> int:
    """Start one instruction and wait for done; returns the cycles from start to done."""
    dut.insn.value = word
    dut.start.value = 1
    await RisingEdge(dut.clk)
    dut.start.value = 0
    for cycles in range(1, limit):
        await ReadOnly()
        if int(dut.done.value):
            await RisingEdge(dut.clk)
            return cycles
        await RisingEdge(dut.clk)
    raise AssertionError(f"instruction did not finish within {limit} cycles")


def random_state(cfg: HwConfig, rng: np.random.Generator, n: int) -> MachineState:
    """A machine state whose first ``n`` inp/wgt/acc elements are random (acc: mixed magnitudes)."""
    # The tests write the same contents into the RTL's SRAM through the backdoor.
    state = MachineState(cfg, np.zeros(16, dtype=np.uint8), zeroed_sram=True)
    lo_i, hi_i = -(1 << (cfg.inp_width - 1)), 1 << (cfg.inp_width - 1)
    lo_w, hi_w = -(1 << (cfg.wgt_width - 1)), 1 << (cfg.wgt_width - 1)
    state.inp[:n] = rng.integers(lo_i, hi_i, state.inp[:n].shape)
    state.wgt[:n] = rng.integers(lo_w, hi_w, state.wgt[:n].shape)
    big = rng.integers(-(1 << (cfg.acc_width - 1)), 1 << (cfg.acc_width - 1), state.acc[:n].shape, dtype=np.int64)
    small = rng.integers(-40, 41, state.acc[:n].shape)
    state.acc[:n] = np.where(rng.random(state.acc[:n].shape) < 0.5, small, big)
    return state


def set_uops(state: MachineState, cfg: HwConfig, uops) -> None:
    words = cfg.isa.encode_uops(uops)
    state.uop[: len(words)] = words
    dst, src, wgt = cfg.isa.decode_uop_fields(words)
    state.uop_dst[: len(words)] = dst
    state.uop_src[: len(words)] = src
    state.uop_wgt[: len(words)] = wgt
