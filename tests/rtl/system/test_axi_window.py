"""No AXI transaction of vdla_top leaves the DRAM address window (issue 24).

Programs that try to read or write outside the window the host set, a micro-op loop that
leaves its buffer, and a correct program inside a tight window run on vdla_top under cocotb
(axi_window_cocotb.py): a monitor checks every AR/AW burst and W strobe against the window,
the faulty programs must stop with the right FAULT registers and leave the RAM outside the
window untouched, the correct one must match fsim.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from rtl_configs import configs_under_test

from vdla.runtime.program import Program, ProgramBuilder
from vdla.simulator.fsim import run_fsim
from vdla_hw import regmap
from vdla_hw.config import HwConfig, load_config
from vdla_hw.harness.build import PROBE_SOURCES
from vdla_hw.isa import MemType, Uop
from vdla_hw.rtl_build import build_dir, cocotb_run
from system_runner import HERE


def _data(cfg: HwConfig):  # type: ignore[no-untyped-def]
    pb = ProgramBuilder(cfg)
    rng = np.random.default_rng(1)
    out = pb.alloc("out", "out", (8 * cfg.batch, cfg.block_out))  # first: a window can leave it out below
    inp = pb.alloc("inp", "inp", (8 * cfg.batch, cfg.block_in), rng.integers(-8, 8, (8 * cfg.batch, cfg.block_in)))
    wgt = pb.alloc("wgt", "wgt", (8 * cfg.block_out, cfg.block_in), rng.integers(-8, 8, (8 * cfg.block_out, cfg.block_in)))
    return pb, inp, wgt, out


def _gemm(cfg: HwConfig, *, wgt_at: int | None = None, src_walk: bool = False) -> Program:
    """LOAD UOP; LOAD INP; LOAD WGT; GEMM reset; GEMM; STORE; FINISH -- with one address made bad on demand."""
    pb, inp, wgt, out = _data(cfg)
    src = cfg.inp_buff_depth - 2 if src_walk else 0
    pb.load_uops(pb.uops([Uop(0, src, 0)]))
    pb.load(MemType.INP, src, inp.addr, 1, 2, 2)
    pb.load(MemType.WGT, 0, wgt.addr if wgt_at is None else wgt_at, 1, 1, 1, push_next=True)
    loop = dict(iter_out=4 if src_walk else 1, dst_factor=(1, 0), src_factor=(1 if src_walk else 0, 0))
    pb.gemm(0, 1, reset=True, pop_prev=True, **loop)
    pb.gemm(0, 1, push_next=True, **loop)
    pb.store(0, out.addr, 1, 1, 1, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    return pb.build()


def _cause(klass: int, buf: int) -> int:
    return klass | buf << regmap.FAULT_BUF_SHIFT


@pytest.mark.parametrize("config", configs_under_test(["default"]))  # shares test_system.py's build
def test_axi_master_stays_in_the_window(config: str) -> None:
    cfg = load_config(config)
    folder = build_dir(cfg, "system-axi-window", sources=[])
    good = _gemm(cfg)
    first = good.buffers["inp"].offset  # a window that leaves the output out: [inp, end of image)
    cases = [
        # the STORE into the output buffer, below the window's base
        ("store_below_base", good, (first, None), [_cause(regmap.FAULT_DRAM_WINDOW, regmap.BUF_OUT), 5]),
        # a LOAD WGT past the window's limit (inside the RAM's guard area)
        ("load_past_limit", _gemm(cfg, wgt_at=good.dram.size // cfg.wgt_elem_bytes + 1), (0, None),
         [_cause(regmap.FAULT_DRAM_WINDOW, regmap.BUF_WGT), 2]),
        # the instruction stream outside the window
        ("fetch_outside", good, (0, good.insn_addr), [_cause(regmap.FAULT_FETCH_WINDOW, regmap.BUF_INSN), 0]),
        # a GEMM whose input index leaves the buffer at iteration 2: an SRAM fault, no DMA
        ("loop_src_overrun", _gemm(cfg, src_walk=True), (0, None), [_cause(regmap.FAULT_LOOP_INDEX, regmap.BUF_INP), 4]),
        # the correct program inside a window that is exactly its image
        ("correct", good, (0, None), None),
    ]
    spec = []
    for name, program, (base, limit), fault in cases:
        path = program.save(folder / f"{name}.vdlaprog")
        item = {"name": name, "program": str(path), "base": base, "fault": fault, "no_traffic": name == "fetch_outside",
                "limit": program.dram.size if limit is None else limit}
        assert item["base"] % cfg.bus_bytes == 0 and item["limit"] % cfg.bus_bytes == 0  # bus-aligned windows
        if fault is None:
            np.save(folder / f"{name}.npy", run_fsim(cfg, program.instructions, program.dram).dram)
            item["expected"] = str(folder / f"{name}.npy")
        spec.append(item)
    cocotb_run(cfg, "vdla_top", "axi_window_cocotb", HERE, extra_sources=PROBE_SOURCES, purpose="cocotb-system",
               extra_env={"VDLA_WINDOW_CASES": json.dumps(spec)})
