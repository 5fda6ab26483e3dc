"""Timing probes: the marginal cost of one instruction, loop iteration, element or row.

Each probe builds two programs that differ by a known amount of work (one more GEMM,
eight more micro-op iterations, ...) and reports the cycle difference on the RTL and on
the cycle model, divided by that amount.  Where the whole-program calibration
(``rtl_vs_cycle.py``) shows a gap, these rows say which part of the cycle model's
timing differs from the RTL.  Used by ``bench/rtl_vs_cycle.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vdla.runtime import run
from vdla.runtime.program import Program, ProgramBuilder
from vdla_hw.config import HwConfig
from vdla_hw.isa import AluOp, MemType, Uop

REPEAT = 4
"""Instructions per probe program: a probe measures steady state, not the first instruction."""


@dataclass(frozen=True)
class Probe:
    """``build(cfg, size)`` is a program; the probe compares ``size = lo`` and ``size = hi``."""

    name: str
    unit: str
    build: Callable[[HwConfig, int], Program]
    lo: int
    hi: int
    per: Callable[[int], int] = lambda d: d
    """How many units the size difference ``hi - lo`` amounts to."""


def _start(cfg: HwConfig) -> tuple[ProgramBuilder, int, int, int]:
    pb = ProgramBuilder(cfg)
    acc = pb.alloc("acc", "acc", (64 * cfg.batch, cfg.block_out)).addr
    inp = pb.alloc("inp", "inp", (64 * cfg.batch, cfg.block_in)).addr
    out = pb.alloc("out", "out", (64 * cfg.batch, cfg.block_out)).addr
    pb.load_uops(pb.uops([Uop(0, 0, 0)]))
    return pb, acc, inp, out


def _gemms(cfg: HwConfig, count: int, iters: int = 1) -> Program:
    pb, *_ = _start(cfg)
    for _ in range(count):
        pb.gemm(0, 1, iter_out=iters, reset=True)
    pb.finish()
    return pb.build()


def _alus(cfg: HwConfig, count: int, iters: int = 1, op: AluOp = AluOp.ADD) -> Program:
    pb, *_ = _start(cfg)
    pb.gemm(0, 1, reset=True)  # the ALU reads a defined accumulator (the same in every size: no effect on a probe)
    for _ in range(count):
        pb.alu(op, 0, 1, imm=1, iter_out=iters)
    pb.finish()
    return pb.build()


def _acc_loads(cfg: HwConfig, count: int, rows: int = 1, cols: int = 1) -> Program:
    pb, acc, _, _ = _start(cfg)
    for _ in range(count):
        pb.load(MemType.ACC, 0, acc, rows, cols, cols)
    pb.finish()
    return pb.build()


def _inp_loads(cfg: HwConfig, count: int, rows: int = 1, cols: int = 1) -> Program:
    pb, _, inp, _ = _start(cfg)
    for k in range(count):
        pb.load(MemType.INP, 0, inp, rows, cols, cols, push_next=k == count - 1)
    pb.finish(pop_prev=True)
    return pb.build()


def _stores(cfg: HwConfig, count: int, rows: int = 1, cols: int = 1) -> Program:
    pb, _, _, out = _start(cfg)
    pb.gemm(0, 1, iter_out=64, dst_factor=(1, 0), reset=True, push_next=True)
    for k in range(count):
        pb.store(0, out, rows, cols, cols, pop_prev=k == 0, push_prev=k == count - 1)
    pb.finish(pop_next=True)
    return pb.build()


def _round_trips(cfg: HwConfig, count: int) -> Program:
    """compute -> store -> compute token ping-pong, one tile stored per round."""
    pb, _, _, out = _start(cfg)
    for k in range(count):
        pb.gemm(0, 1, reset=True, pop_next=k > 0, push_next=True)
        pb.store(0, out, 1, 1, 1, pop_prev=True, push_prev=True)
    pb.finish(pop_next=True)
    return pb.build()


PROBES: tuple[Probe, ...] = (
    Probe("program start + LOAD UOP + FINISH", "program", lambda cfg, n: _gemms(cfg, n), 0, 0),
    Probe("GEMM instruction (1 iteration)", "insn", _gemms, 1, 1 + REPEAT),
    Probe("GEMM loop iteration", "iteration", lambda cfg, n: _gemms(cfg, REPEAT, n), 1, 9, lambda d: REPEAT * d),
    Probe("ALU instruction (1 iteration)", "insn", _alus, 1, 1 + REPEAT),
    Probe("ALU loop iteration", "iteration", lambda cfg, n: _alus(cfg, REPEAT, n), 1, 9, lambda d: REPEAT * d),
    Probe("ALU MOV loop iteration", "iteration", lambda cfg, n: _alus(cfg, REPEAT, n, AluOp.MOV), 1, 9,
          lambda d: REPEAT * d),
    Probe("LOAD ACC instruction (1 tile)", "insn", _acc_loads, 1, 1 + REPEAT),
    Probe("LOAD ACC tile in a row", "tile", lambda cfg, n: _acc_loads(cfg, REPEAT, 1, n), 1, 9, lambda d: REPEAT * d),
    Probe("LOAD ACC row", "row", lambda cfg, n: _acc_loads(cfg, REPEAT, n, 1), 1, 5, lambda d: REPEAT * d),
    Probe("LOAD INP instruction (1 tile)", "insn", _inp_loads, 1, 1 + REPEAT),
    Probe("LOAD INP row", "row", lambda cfg, n: _inp_loads(cfg, REPEAT, n, 1), 1, 5, lambda d: REPEAT * d),
    Probe("STORE instruction (1 tile)", "insn", _stores, 1, 1 + REPEAT),
    Probe("STORE tile in a row", "tile", lambda cfg, n: _stores(cfg, REPEAT, 1, n), 1, 9, lambda d: REPEAT * d),
    Probe("STORE row", "row", lambda cfg, n: _stores(cfg, REPEAT, n, 1), 1, 5, lambda d: REPEAT * d),
    Probe("compute->store->compute round", "round", _round_trips, 1, 1 + REPEAT),
)


def measure(cfg: HwConfig, probe: Probe) -> tuple[float, float]:
    """(RTL, cycle model) cycles per unit of ``probe`` (total cycles for a one-program probe)."""
    lo, hi = probe.build(cfg, probe.lo), probe.build(cfg, probe.hi)
    rtl = [run(p, "rtl").cycles for p in (lo, hi)]
    model = [run(p, "cycle").cycles for p in (lo, hi)]
    if probe.lo == probe.hi:
        return float(rtl[0]), float(model[0])
    units = probe.per(probe.hi - probe.lo)
    return (rtl[1] - rtl[0]) / units, (model[1] - model[0]) / units
