"""Slow: the cycle model with the ULX3S board's DRAM timing against the simulated SoC, on the two
mechanisms traced in it (docs/fpga_ulx3s.md, "Where the cycles go"):

* a chain of short LOADs, each waiting for its one beat (the read pipeline's latency, not bandwidth);
* a 1x1 conv whose STOREs run while weight and input loads do (one command path for reads and
  writes: the stores wait for the loads' bursts and the loads for the stores').

Both within 5% of the whole SoC under Verilator (UART bridge, LiteDRAM, SDRAM model, accelerator),
bit-exact against fsim.  ~2 min once the simulated SoC is built (~4 min, cached).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vdla.compiler.vdla.target import VdlaTarget
from vdla.compiler.vdla.topi import Conv2dWorkload, Requantize, compile_conv2d, random_conv_data, requant_shift
from vdla.runtime.backends import run
from vdla.runtime.fpga.serial_board import open_serial_board
from vdla.runtime.program import Program, ProgramBuilder
from vdla_hw.config import HwConfig, load_config
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.ulx3s_sim import SimulatedUlx3s
from vdla_hw.isa import MemType

BOARD = get_board("ulx3s")
CFG = load_config(BOARD.default_config)


def short_loads(cfg: HwConfig, n: int) -> Program:
    """``n`` LOADs of one bus beat each, one after the other."""
    pb = ProgramBuilder(cfg)
    x = max(1, cfg.bus_bytes // cfg.inp_elem_bytes)
    a = pb.alloc("a", "inp", (n * x * cfg.batch, cfg.block_in))
    for k in range(n):
        pb.load(MemType.INP, 0, a.addr + k * x, 1, x, x, push_next=k == n - 1)
    pb.finish(pop_prev=True)
    return pb.build()


def conv_1x1(cfg: HwConfig) -> Program:
    wl = Conv2dWorkload(cfg.batch, 4 * cfg.block_in, 8, 8, 4 * cfg.block_out, 1, 1, 1, 0)
    compiled = compile_conv2d(wl, VdlaTarget.from_config(cfg.name), epilogue=Requantize(shift=requant_shift(wl)))
    return compiled.module.bind(*compiled.pack_inputs(*random_conv_data(wl)))


@pytest.mark.slow
def test_cycle_model_with_the_boards_dram_timing_is_within_5_percent_of_the_simulated_soc() -> None:
    jobs = {"16 short loads": short_loads(CFG, 16), "conv 1x1": conv_1x1(CFG)}
    with SimulatedUlx3s(CFG) as sim:
        board = open_serial_board(sim.folder, sim.port, timeout=300)
        try:
            soc = {name: board.run(p) for name, p in jobs.items()}
        finally:
            board.close()
    for name, p in jobs.items():
        assert np.array_equal(soc[name].dram, run(p, "fsim").dram), name
        model = run(dataclasses.replace(p, config=BOARD.model_config(p.config)), "cycle").cycles
        preset = run(p, "cycle").cycles
        assert soc[name].cycles > preset  # the board's SDRAM is slower than the preset's memory
        assert abs(model - soc[name].cycles) <= 0.05 * soc[name].cycles, (name, model, soc[name].cycles)
