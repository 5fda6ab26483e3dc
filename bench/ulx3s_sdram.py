"""The ULX3S SoC's SDRAM probed with small LOAD programs: what costs cycles that the cycle model misses?

Each probe runs on the whole simulated SoC (UART bridge, LiteDRAM + SDRAM model, accelerator) and on
the cycle model with the board's DRAM timing (the peer, same run):

* ``seq`` / ``bank`` / ``row``: one LOAD of ``--rows`` rows of one 64-byte burst, back to back (one
  SDRAM row), 1 KiB apart (the next bank each row: LiteDRAM maps ROW_BANK_COL and a row of the
  16-bit MT48LC16M16 holds 1 KiB), 4 KiB apart (the same bank, a new row each time: precharge +
  activate per row).  ``row - seq`` over the rows is what a row miss costs.
* ``2 engines, same row`` / ``other bank`` / ``other row``: a load-module LOAD and a compute-module
  LOAD of 8 bursts each at once, their buffers in one SDRAM row, in two banks, or in two rows of
  one bank (their bursts alternate).
* ``N loads of 1 beat``: N LOAD instructions of one bus beat each (a chain of small accesses).
* ``N uop loads``: N LOAD UOP instructions of 2 micro-ops (elements narrower than the bus).

Run: ``python bench/ulx3s_sdram.py [--rows 16]``; writes ``bench/results/ulx3s_sdram.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from tqdm import tqdm

from host import host_line, host_record
from vdla.runtime.backends import run
from vdla.runtime.fpga.serial_board import open_serial_board
from vdla.runtime.program import Program, ProgramBuilder
from vdla_hw.config import HwConfig, load_config
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.ulx3s_sim import SimulatedUlx3s
from vdla_hw.isa import MemType, Uop

ROOT = Path(__file__).resolve().parents[1]
BURST = 64


def strided_load(cfg: HwConfig, rows: int, stride_bytes: int) -> Program:
    """One LOAD of ``rows`` rows of one burst each, ``stride_bytes`` apart."""
    eb = cfg.inp_elem_bytes
    x, stride = BURST // eb, stride_bytes // eb
    pb = ProgramBuilder(cfg)
    buf = pb.alloc("inp", "inp", (rows * stride * cfg.batch, cfg.block_in), None)
    pb.load(MemType.INP, 0, buf.addr, rows, x, stride, push_next=True)
    pb.finish(pop_prev=True)
    return pb.build()


def two_engines(cfg: HwConfig, gap_bytes: int) -> Program:
    """A load-module and a compute-module LOAD of 8 bursts each, at once, ``gap_bytes`` apart in DRAM."""
    pb = ProgramBuilder(cfg)
    a = pb.alloc("a", "inp", (8 * BURST // cfg.inp_elem_bytes * cfg.batch, cfg.block_in))
    if gap_bytes:
        pb.alloc("gap", "inp", (gap_bytes // cfg.inp_elem_bytes * cfg.batch, cfg.block_in))
    per_row = BURST // cfg.acc_elem_bytes
    b = pb.alloc("b", "acc", (8 * per_row * cfg.batch, cfg.block_out))
    pb.load(MemType.INP, 0, a.addr, 8, BURST // cfg.inp_elem_bytes, BURST // cfg.inp_elem_bytes, push_next=True)
    pb.load(MemType.ACC, 0, b.addr, 8, per_row, per_row)
    pb.finish(pop_prev=True)
    return pb.build()


def small_loads(cfg: HwConfig, n: int, mem_type: MemType) -> Program:
    """``n`` LOAD instructions of one bus beat (INP) or two micro-ops (UOP) each."""
    pb = ProgramBuilder(cfg)
    if mem_type == MemType.UOP:
        uops = pb.uops([Uop(0, 0, 0), Uop(1, 1, 0)])
        for _ in range(n):
            pb.load_uops(uops)
        pb.finish()
        return pb.build()
    x = max(1, cfg.bus_bytes // cfg.inp_elem_bytes)
    a = pb.alloc("a", "inp", (n * x * cfg.batch, cfg.block_in))
    for k in range(n):
        pb.load(MemType.INP, 0, a.addr + k * x, 1, x, x, push_next=k == n - 1)
    pb.finish(pop_prev=True)
    return pb.build()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "ulx3s_sdram.json"))
    args = parser.parse_args()
    board_info = get_board("ulx3s")
    cfg = load_config(board_info.default_config)
    timing = dict(board_info.dram_timing)
    print(f"{host_line()} (simulation speed only; cycle counts do not depend on it)")
    jobs = [("seq", strided_load(cfg, args.rows, BURST)), ("bank", strided_load(cfg, args.rows, 1024)),
            ("row", strided_load(cfg, args.rows, 4096)), ("2 engines, same row", two_engines(cfg, 0)),
            ("2 engines, other bank", two_engines(cfg, 1024 - 8 * BURST)),
            ("2 engines, other row", two_engines(cfg, 4096 - 8 * BURST)),
            ("1 load of 1 beat", small_loads(cfg, 1, MemType.INP)),
            (f"{args.rows} loads of 1 beat", small_loads(cfg, args.rows, MemType.INP)),
            ("1 uop load", small_loads(cfg, 1, MemType.UOP)),
            (f"{args.rows} uop loads", small_loads(cfg, args.rows, MemType.UOP))]
    rows = []
    with SimulatedUlx3s(cfg) as sim:
        board = open_serial_board(sim.folder, sim.port, timeout=300)
        try:
            for name, p in tqdm(jobs, desc="SoC simulation"):
                soc = board.run(p).cycles
                model = run(dataclasses.replace(p, config=p.config.replace(timing=timing)), "cycle").cycles
                rows.append({"program": name, "instructions": p.insn_count, "soc_cycles": soc,
                             "cycle_model_cycles": model, "model_minus_soc": model - soc})
        finally:
            board.close()
    print(f"SoC = simulated ULX3S SoC at {sim.info['sys_clk_hz'] / 1e6:g} MHz, model = cycle model ({timing})")
    print(f"{'probe':<24} {'insns':>5} {'SoC':>6} {'model':>6} {'model - SoC':>11}")
    for r in rows:
        print(f"{r['program']:<24} {r['instructions']:>5} {r['soc_cycles']:>6} {r['cycle_model_cycles']:>6} "
              f"{r['model_minus_soc']:>+11}")
    by = {r["program"]: r["soc_cycles"] for r in rows}
    print(f"row miss: {(by['row'] - by['seq']) / args.rows:+.2f} cycles per row; bank change: "
          f"{(by['bank'] - by['seq']) / args.rows:+.2f} cycles per row")
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": host_record(), "config": cfg.name, "rows": args.rows,
                                "dram_timing": timing, "results": rows}, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
