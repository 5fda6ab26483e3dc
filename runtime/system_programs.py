"""The system-test program suite: named programs that together touch every instruction path.

The RTL system tests (cocotb), the ``rtl`` backend tests and the RTL-vs-cycle-model
calibration all run these, so a cycle count in the calibration table names a program
the regression also checks bit for bit.

* ``gemm``, ``gemm_vt2``: tiled GEMM + bias + ReLU + requantization
  (:func:`vdla.runtime.workloads.tiled_gemm_program`) in several chunks, with one and with
  two virtual threads (ping-pong SRAM regions, the two-thread token pattern);
* ``alu_<op>``: every ALU operation with an accumulator operand and with two
  immediates over full-range accumulators; the results are stored byte by byte
  (store, shift right by the output width, store ...) so all accumulator bits reach
  DRAM despite the narrowing store;
* ``alu_chain``: an ALU instruction whose iterations read what earlier ones wrote
  (read-after-write through the ALU pipeline);
* ``padding``: padded INP, WGT and ACC loads, read back through a GEMM with a one-hot
  weight tile and a direct store;
* ``tokens_full``: load pushes more tokens than the load->compute queue holds while
  compute is still busy, so load blocks on a full queue;
* ``random<N>``: :func:`vdla.runtime.random_programs.random_program` with seed N (it loads
  every SRAM element it may read first: the RTL's SRAM starts random).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import AluOp, MemType, Uop

from vdla.runtime.program import Program, ProgramBuilder
from vdla.runtime.random_programs import random_program
from vdla.runtime.workloads import GemmTiling, tiled_gemm_program

ALU_OPS: tuple[AluOp, ...] = tuple(AluOp)


def _gemm(cfg: HwConfig, vt: int) -> Program:
    m, k, n = 8 * cfg.batch, 2 * cfg.block_in, 2 * cfg.block_out
    return tiled_gemm_program(cfg, m, k, n, virtual_threads=vt, seed=vt, tiling=GemmTiling(tm=2, tn=1, tk=1))[0]


def _full_range(rng: np.random.Generator, cfg: HwConfig, tiles: int) -> np.ndarray:
    bits = cfg.acc_width
    return rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), size=(tiles * cfg.batch, cfg.block_out))


def _store_all_bits(pb: ProgramBuilder, cfg: HwConfig, n: int, shift_uop: int, name: str) -> None:
    """STORE acc[0, n) out_width bits at a time, shifting right in between, so every bit reaches DRAM.

    The caller's last compute instruction must push to store; ``shift_uop`` is a micro-op
    whose destination is 0.  Ends with store pushing back to compute.
    """
    rounds = -(-cfg.acc_width // cfg.out_width)
    for r in range(rounds):
        out = pb.alloc(f"{name}{r}", "out", (n * cfg.batch, cfg.block_out))
        if r:  # the next out_width bits, once the previous store has read the SRAM
            pb.alu(AluOp.SHR, shift_uop, shift_uop + 1, imm=cfg.out_width, iter_out=n, dst_factor=(1, 0),
                   pop_next=True, push_next=True)
        pb.store(0, out.addr, 1, n, n, pop_prev=True, push_prev=True)


def alu_program(cfg: HwConfig, op: AluOp, seed: int = 0) -> Program:
    """``op`` with an accumulator operand and with two immediates; every result bit is stored.

    Accumulator SRAM: [0, d) gets ``op(a, b)`` element-wise over a two-level loop,
    [d, 2d) and [2d, 3d) ``op(a, imm)`` for two immediates, [3d, 4d) holds ``b``.
    """
    rng = np.random.default_rng(seed + 100 * int(op))
    d = 8  # tiles per region
    pb = ProgramBuilder(cfg)
    a = pb.alloc("a", "acc", (3 * d * cfg.batch, cfg.block_out), _full_range(rng, cfg, 3 * d))
    if op == AluOp.SHR:  # shift amounts beyond the accumulator width and negative ones (shift left) too
        b_vals = rng.integers(-(cfg.acc_width + 3), cfg.acc_width + 4, size=(d * cfg.batch, cfg.block_out))
        imms = (int(rng.integers(1, cfg.acc_width)), -int(rng.integers(1, cfg.acc_width)))
    else:
        b_vals = _full_range(rng, cfg, d)
        imms = (-(1 << 15), int(rng.integers(-(1 << 15), 1 << 15)))
    b = pb.alloc("b", "acc", b_vals.shape, b_vals)
    pb.load_uops(pb.uops([Uop(0, 3 * d, 0), Uop(d, 0, 0), Uop(2 * d, 0, 0)]))
    pb.load(MemType.ACC, 0, a.addr, 1, 3 * d, 3 * d)
    pb.load(MemType.ACC, 3 * d, b.addr, 1, d, d)
    half = d // 2
    pb.alu(op, 0, 1, iter_out=2, iter_in=half, dst_factor=(half, 1), src_factor=(half, 1))
    pb.alu(op, 1, 2, imm=imms[0], iter_out=d, dst_factor=(1, 0))
    pb.alu(op, 2, 3, imm=imms[1], iter_out=d, dst_factor=(1, 0), push_next=True)
    _store_all_bits(pb, cfg, 3 * d, 0, "out")
    pb.finish(pop_next=True)
    return pb.build()


def alu_chain_program(cfg: HwConfig, seed: int = 0) -> Program:
    """ALU iterations that read what earlier iterations of the same instruction wrote."""
    rng = np.random.default_rng(seed)
    n = 12
    pb = ProgramBuilder(cfg)
    a = pb.alloc("a", "acc", (n * cfg.batch, cfg.block_out), rng.integers(-1000, 1000, size=(n * cfg.batch, cfg.block_out)))
    pb.load_uops(pb.uops([Uop(1, 0, 0), Uop(0, 0, 0), Uop(n - 1, 0, 0)]))
    pb.load(MemType.ACC, 0, a.addr, 1, n, n)
    pb.alu(AluOp.ADD, 0, 1, iter_out=n - 1, dst_factor=(1, 0), src_factor=(1, 0))  # prefix sum: acc[i+1] += acc[i]
    pb.alu(AluOp.MUL, 2, 3, imm=-3, iter_out=4, iter_in=2)  # one destination, eight times in a row
    pb.alu(AluOp.MAX, 1, 2, iter_out=n - 1, iter_in=1, dst_factor=(0, 0), src_factor=(1, 0))  # running max into acc[0]
    pb.alu(AluOp.MIN, 0, 1, iter_out=n - 1, dst_factor=(1, 0), src_factor=(1, 0), push_next=True)  # running min
    _store_all_bits(pb, cfg, n, 1, "out")
    pb.finish(pop_next=True)
    return pb.build()


def padding_program(cfg: HwConfig, seed: int = 0) -> Program:
    """Padded INP, WGT and ACC loads, read back through a one-hot GEMM and a plain store."""
    rng = np.random.default_rng(seed)
    pb = ProgramBuilder(cfg)
    inp = pb.alloc("inp", "inp", (8 * cfg.batch, cfg.block_in), rng.integers(-128, 128, size=(8 * cfg.batch, cfg.block_in)))
    one_hot = np.zeros((cfg.block_out, cfg.block_in), dtype=np.int64)
    one_hot[np.arange(cfg.block_out), np.arange(cfg.block_out) % cfg.block_in] = 1
    wgt = pb.alloc("wgt", "wgt", one_hot.shape, one_hot)
    accsrc = pb.alloc("accsrc", "acc", (6 * cfg.batch, cfg.block_out), rng.integers(-128, 128, size=(6 * cfg.batch, cfg.block_out)))
    out = pb.alloc("out", "out", (45 * cfg.batch, cfg.block_out))
    uops = pb.uops([Uop(0, 0, 4), Uop(39, 8, 0)])
    # 5 x 6 = 30 input elements, the 2 x 3 data block framed by zeros; the one-hot tile at
    # element 4 of a 2 x 3 weight block; 3 x 3 accumulators at [30, 39).
    pb.load(MemType.INP, 0, inp.addr + 1, 2, 3, 4, pad=(1, 2, 2, 1))
    pb.load(MemType.WGT, 0, wgt.addr, 1, 1, 1, pad=(1, 0, 1, 1), push_next=True)
    pb.load_uops(uops, pop_prev=True)
    pb.load(MemType.ACC, 30, accsrc.addr, 2, 2, 3, pad=(0, 1, 1, 0))
    pb.gemm(0, 1, iter_out=30, dst_factor=(1, 0), reset=True)
    pb.gemm(0, 1, iter_out=30, dst_factor=(1, 0), src_factor=(1, 0))  # acc[i] = inp[i] through the one-hot tile
    pb.gemm(1, 2, iter_out=6, dst_factor=(1, 0), reset=True)
    pb.gemm(1, 2, iter_out=6, dst_factor=(1, 0), wgt_factor=(1, 0), push_next=True)  # inp[8] times each weight element
    pb.store(0, out.addr, 1, 45, 45, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    return pb.build()


def tokens_full_program(cfg: HwConfig, seed: int = 0) -> Program:
    """Load pushes dep_queue_depth + 4 tokens while compute is still loading accumulators."""
    rng = np.random.default_rng(seed)
    n = cfg.dep_queue_depth + 4
    pb = ProgramBuilder(cfg)
    inp = pb.alloc("inp", "inp", (n * cfg.batch, cfg.block_in), rng.integers(-128, 128, size=(n * cfg.batch, cfg.block_in)))
    one_hot = np.zeros((cfg.block_out, cfg.block_in), dtype=np.int64)
    one_hot[np.arange(cfg.block_out), np.arange(cfg.block_out) % cfg.block_in] = 1
    wgt = pb.alloc("wgt", "wgt", one_hot.shape, one_hot)
    slow = pb.alloc("slow", "acc", (n * cfg.batch, cfg.block_out))
    out = pb.alloc("out", "out", (n * cfg.batch, cfg.block_out))
    pb.load(MemType.WGT, 0, wgt.addr, 1, 1, 1)
    for k in range(n):
        pb.load(MemType.INP, k, inp.addr + k, 1, 1, 1, push_next=True)
    pb.load_uops(pb.uops([Uop(k, k, 0) for k in range(n)]))
    pb.load(MemType.ACC, 0, slow.addr, n, 1, 1)  # n separate rows: slow, and zeroes the accumulators
    for k in range(n):
        pb.gemm(k, k + 1, pop_prev=True, push_next=k == n - 1)
    pb.store(0, out.addr, 1, n, n, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    return pb.build()


CASES: dict[str, Callable[[HwConfig], Program]] = {
    "gemm": lambda cfg: _gemm(cfg, 1),
    "gemm_vt2": lambda cfg: _gemm(cfg, 2),
    **{f"alu_{op.name.lower()}": (lambda cfg, op=op: alu_program(cfg, op)) for op in ALU_OPS},
    "alu_chain": alu_chain_program,
    "padding": padding_program,
    "tokens_full": tokens_full_program,
}
"""The fixed programs by name (random ones are ``random<seed>``)."""


def window_probe_program(cfg: HwConfig) -> Program:
    """A program whose STORE writes one tile past the end of its DRAM image: on hardware with the
    DRAM address window (issue 24) it stops with a MemoryAccessError naming instruction 2 and
    writes nothing; a deploy check runs it with the pre-check off to prove the bitstream enforces
    the window."""
    pb = ProgramBuilder(cfg)
    out = pb.alloc("out", "out", (cfg.batch, cfg.block_out))
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))
    pb.gemm(0, 1, reset=True, push_next=True)
    image_tiles = (out.offset + out.nbytes) // cfg.out_elem_bytes
    pb.store(0, out.addr + image_tiles + 64, 1, 1, 1, pop_prev=True, push_prev=True)  # 2: past the image
    pb.finish(pop_next=True)
    return pb.build()


def case_names(randoms: int = 4) -> list[str]:
    """Every fixed case and ``randoms`` random programs."""
    return list(CASES) + [f"random{k}" for k in range(randoms)]


def build_case(cfg: HwConfig, name: str) -> Program:
    """The program called ``name`` (see the module docstring) for ``cfg``."""
    if name in CASES:
        return CASES[name](cfg)
    if name.startswith("random") and name[6:].isdigit():
        return random_program(cfg, int(name[6:]))
    raise KeyError(f"no system-test program {name!r}; names: {', '.join(CASES)}, random<N>")
