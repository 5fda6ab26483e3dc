"""``vdla demo``: a tiled int8 GEMM + bias + ReLU + requantize, run and checked against NumPy."""

from __future__ import annotations

import argparse
import time

import numpy as np

from vdla_hw.config import load_config

from runtime.backends import get_backend
from runtime.workloads import tiled_gemm_program


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help="build, run and check a tiled int8 GEMM + bias + ReLU + requantize",
                              description=__doc__)
    p.add_argument("--config", default="default", help="hardware preset name or .json path (default: default)")
    p.add_argument("--m", type=int, default=64, help="rows of the input matrix (default: 64)")
    p.add_argument("--k", type=int, default=256, help="reduction size (default: 256)")
    p.add_argument("--n", type=int, default=128, help="output channels (default: 128)")
    p.add_argument("--virtual-threads", type=int, default=2, choices=(1, 2), help="ping-pong SRAM regions (default: 2)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the data (default: 0)")
    p.add_argument("--backend", default="fsim", help="backend to run on (default: fsim)")
    p.add_argument("--save", metavar="PATH", help="also save the program bundle (run it with: vdla sim PATH)")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    program, expected = tiled_gemm_program(cfg, args.m, args.k, args.n, virtual_threads=args.virtual_threads,
                                           seed=args.seed)
    if args.save:
        program.save(args.save)
    backend = get_backend(args.backend)
    start = time.perf_counter()
    result = backend.run(program)
    elapsed = time.perf_counter() - start
    got = result.read("out")
    c = result.counters
    ops = ", ".join(f"{op} {c[f'insn.{op}']}" for op in ("LOAD", "GEMM", "ALU", "STORE", "FINISH"))
    print(f"VDLA demo: int8 ({args.m}x{args.k}) @ ({args.k}x{args.n}) + bias, ReLU, shift, clip")
    print(f"  config {cfg.name!r} ({cfg.batch}x{cfg.block_in}x{cfg.block_out}), {args.virtual_threads} virtual thread(s)")
    print(f"  program: {program.insn_count} instructions ({ops}), DRAM image {program.dram.size:,} bytes")
    cycles = "" if result.cycles is None else f", {result.cycles:,} cycles"
    print(f"  {result.backend}: {c['macs']:,} MACs, {c['dram_bytes']:,} DRAM bytes moved "
          f"(read {c['dram_bytes'] - c['dram_write_bytes.OUT']:,}, written {c['dram_write_bytes.OUT']:,}), "
          f"{elapsed * 1e3:.1f} ms{cycles}")
    if args.save:
        print(f"  saved program to {args.save} (run: vdla sim {args.save} --backend fsim)")
    bad = np.argwhere(got != expected)
    if bad.size:
        r, col = bad[0]
        print(f"  FAIL: {len(bad)} of {expected.size} outputs differ from NumPy "
              f"(first at [{r}, {col}]: got {got[r, col]}, expected {expected[r, col]})")
        return 1
    print(f"  PASS: all {expected.size} outputs bit-exact vs NumPy")
    return 0
