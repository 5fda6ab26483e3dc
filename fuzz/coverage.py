"""Functional coverage of fuzz programs: which corners of the ISA the random programs reached.

Bins (names are ``group:...``):

- ``load`` memory type x padding x strided row (micro-op loads cannot pad), and gathering (element stride); ``store`` strided or not,
  and its requantization (shift or not x clip x ReLU);
- ``loop`` GEMM (reset or multiply-accumulate) and ALU loop shapes: single iteration, outer only,
  inner only or both, with zero or non-zero index factors, over one or several micro-ops;
- ``alu`` every ALU op with a positive immediate, a negative immediate (a left shift for SHR)
  and the accumulator operand;
- ``tokens`` every legal dependency-flag combination of each module;
- ``threads`` the number of virtual threads (up to the token queue depth, at most 16);
- ``queue-full`` / ``token-wait`` per unit, as the cycle model saw them (a unit blocked on a
  full queue, or on a missing token);
- ``edge`` the first and the last element of every SRAM buffer accessed.

:func:`bins_of` lists the bins one program hits; :class:`Coverage` adds them up and
reports what stayed unreached.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Iterable, Mapping

from vdla_hw.config import HwConfig
from vdla_hw.isa import DEP_FLAG_NAMES, FLAG_QUEUES, AluInsn, AluOp, GemmInsn, MemInsn, MemType, Module, Opcode, module_of

from vdla.fuzz.plan import SRAM_KINDS, Plan, UopLoadOp, access_of, sram_depths

THREAD_CHOICES = (1, 2, 3, 4, 8)
UNITS = ("fetch", "load", "compute", "store")


def universe(cfg: HwConfig) -> list[str]:
    """Every bin a run could reach on ``cfg``."""
    bins = ["load:UOP"]
    for mem in (MemType.INP, MemType.WGT, MemType.ACC):
        bins += [f"load:{mem.name}:pad={p}:stride={s}" for p in "ny" for s in "ny"] + [f"load:{mem.name}:gather"]
    bins += [f"store:stride={s}" for s in "ny"]
    bins += [f"store:requant:shift={s}:clip={c}:relu={r}" for s in "ny" for c in "ny" for r in "ny"]
    bins += ["store:bias=none", "store:bias=step0", "store:bias=step1"]
    for kind in ("GEMM-reset", "GEMM-overwrite", "GEMM", "ALU"):
        bins += [f"loop:{kind}:{shape}:factors={f}:uops={u}" for shape in ("1x1", "Nx1", "1xN", "NxN")
                 for f in ("0", "n") for u in ("1", "n") if not (shape == "1x1" and f == "n")]
    bins += [f"alu:{op.name}:{operand}" for op in AluOp for operand in ("imm+", "imm-", "acc")]
    for module in Module:
        flags = [f for f in DEP_FLAG_NAMES if f in FLAG_QUEUES[module]]
        for n in range(len(flags) + 1):
            bins += [f"tokens:{module.name}:{'+'.join(c) or 'none'}" for c in combinations(flags, n)]
    bins += [f"threads:{t}" for t in sorted({*THREAD_CHOICES, cfg.dep_queue_depth}) if t <= min(cfg.dep_queue_depth, 16)]
    bins += [f"queue-full:{unit}" for unit in UNITS]
    bins += [f"token-wait:{unit}" for unit in UNITS[1:]]
    bins += [f"edge:{buf}:{end}" for buf in SRAM_KINDS for end in ("first", "last")]
    return bins


def bins_of(cfg: HwConfig, plan: Plan, insns: Iterable[object], stats: Mapping[str, Any] | None = None) -> set[str]:
    """The bins one program (its plan, its instructions and the cycle model's statistics) hits."""
    hit: set[str] = {f"threads:{plan.threads}"}
    for insn in insns:
        hit |= _insn_bins(insn)
    for unit, s in ((stats or {}).get("units") or {}).items():
        if s.get("wait_queue_full"):
            hit.add(f"queue-full:{unit}")
        if s.get("wait_token"):
            hit.add(f"token-wait:{unit}")
    depths = sram_depths(cfg)
    uops: list = [None] * depths["uop"]
    for rnd in plan.rounds:
        for op in (*rnd.loads, *rnd.computes, *rnd.stores):
            acc = access_of(op, uops)
            if isinstance(op, UopLoadOp):
                uops[op.sram:op.sram + len(op.uops)] = list(op.uops)
            for buf, idx in (*acc.reads.items(), *acc.writes.items()):
                if idx.size and idx.min() == 0:
                    hit.add(f"edge:{buf}:first")
                if idx.size and idx.max() == depths[buf] - 1:
                    hit.add(f"edge:{buf}:last")
    return hit


def _insn_bins(insn: object) -> set[str]:
    hit: set[str] = set()
    if isinstance(insn, MemInsn):
        strided = "y" if insn.x_stride > insn.x_size and insn.y_size > 1 else "n"
        if insn.opcode == Opcode.STORE:
            hit.add(f"store:stride={strided}")
            yn = {True: "y", False: "n"}
            hit.add(f"store:requant:shift={yn[insn.shift > 0]}:clip={yn[insn.clip]}:relu={yn[insn.relu]}")
            hit.add(f"store:bias=step{insn.bias_step}" if insn.bias else "store:bias=none")
        elif insn.mem_type == MemType.UOP:
            hit.add("load:UOP")
        else:
            padded = "y" if any((insn.y_pad0, insn.y_pad1, insn.x_pad0, insn.x_pad1)) else "n"
            hit.add(f"load:{MemType(insn.mem_type).name}:pad={padded}:stride={strided}")
            if insn.elem_stride > 1:
                hit.add(f"load:{MemType(insn.mem_type).name}:gather")
    elif isinstance(insn, (GemmInsn, AluInsn)):
        kind = ("ALU" if isinstance(insn, AluInsn) else "GEMM-reset" if insn.reset
                else "GEMM-overwrite" if insn.overwrite else "GEMM")
        shape = f"{'N' if insn.iter_out > 1 else '1'}x{'N' if insn.iter_in > 1 else '1'}"
        used = [insn.dst_factor_out * (insn.iter_out > 1), insn.dst_factor_in * (insn.iter_in > 1),
                insn.src_factor_out * (insn.iter_out > 1), insn.src_factor_in * (insn.iter_in > 1)]
        if isinstance(insn, GemmInsn):
            used += [insn.wgt_factor_out * (insn.iter_out > 1), insn.wgt_factor_in * (insn.iter_in > 1)]
        uops = "n" if insn.uop_end - insn.uop_bgn > 1 else "1"
        hit.add(f"loop:{kind}:{shape}:factors={'n' if any(used) else '0'}:uops={uops}")
        if isinstance(insn, AluInsn):
            operand = "acc" if not insn.use_imm else ("imm-" if insn.imm < 0 else "imm+")
            hit.add(f"alu:{AluOp(insn.alu_op).name}:{operand}")
    else:
        return hit
    module = module_of(insn)  # type: ignore[arg-type]
    flags = [f for f in DEP_FLAG_NAMES if getattr(insn.deps, f)]  # type: ignore[union-attr]
    hit.add(f"tokens:{module.name}:{'+'.join(flags) or 'none'}")
    return hit


@dataclass
class Coverage:
    """Hit counts of every bin over a run."""

    bins: list[str]
    hits: Counter = field(default_factory=Counter)

    @classmethod
    def for_config(cls, cfg: HwConfig) -> "Coverage":
        return cls(universe(cfg))

    def add(self, hit: Iterable[str]) -> None:
        self.hits.update(hit)

    @property
    def reached(self) -> list[str]:
        return [b for b in self.bins if self.hits[b]]

    @property
    def unreached(self) -> list[str]:
        return [b for b in self.bins if not self.hits[b]]

    def summary(self) -> dict[str, Any]:
        """JSON-ready: totals, per-group counts and the unreached bins."""
        groups: dict[str, list[int]] = {}
        for b in self.bins:
            g = groups.setdefault(b.split(":")[0], [0, 0])
            g[0] += bool(self.hits[b])
            g[1] += 1
        return {"reached": len(self.reached), "total": len(self.bins),
                "groups": {g: {"reached": r, "total": t} for g, (r, t) in groups.items()},
                "unreached": self.unreached, "hits": {b: self.hits[b] for b in self.bins}}

    def format(self) -> str:
        """A short human-readable report."""
        s = self.summary()
        lines = [f"functional coverage: {s['reached']}/{s['total']} bins"]
        lines += [f"  {g:<11} {v['reached']:>3}/{v['total']}" for g, v in s["groups"].items()]
        if s["unreached"]:
            lines.append("  unreached: " + ", ".join(s["unreached"]))
        return "\n".join(lines)
