"""The compute unit: GEMM core, vector ALU, micro-op and accumulator loads, FINISH.

Timing (``n`` = iter_out x iter_in x micro-ops, the instruction's loop iterations):

* GEMM: ``insn_overhead + gemm_pipeline_depth + n`` -- one micro-op iteration
  enters the core per cycle, the last result is written a pipeline depth later.
* ALU: ``insn_overhead + alu_pipeline_depth + (n - 1) * alu_ii + 1`` -- a new
  iteration every ``alu_ii`` cycles (the GEMM formula is this one with II = 1).
* An instruction with ``n = 0`` costs ``insn_overhead`` only.

With ``insn_overhead`` = 4 these are the RTL's per-instruction totals
(``docs/rtl.md``: GEMM n + D + 4, ALU (n - 1) II + D + 5).
* LOAD UOP / LOAD ACC: as a LOAD on the load unit (see :mod:`simulator.cycle.load`),
  sharing the DRAM channel.
* FINISH: ``insn_overhead``; the program ends when it retires.  Its tokens must
  order every load and store before it (checked as in fsim), so nothing is in
  flight then: the machine is drained.
"""

from __future__ import annotations

from simulator.cycle.load import load_cycles
from simulator.cycle.unit import Context, Unit
from simulator.errors import ProtocolError
from simulator.tokens import describe
from vdla_hw.config import TimingConfig
from vdla_hw.isa import AluInsn, FinishInsn, GemmInsn, Insn, MemInsn, Module


def loop_iterations(insn: GemmInsn | AluInsn) -> int:
    """Micro-op iterations of a GEMM/ALU: iter_out x iter_in x (uop_end - uop_bgn)."""
    return insn.iter_out * insn.iter_in * max(0, insn.uop_end - insn.uop_bgn)


def gemm_cycles(timing: TimingConfig, insn: GemmInsn) -> int:
    """Cycles of one GEMM instruction on the core."""
    n = loop_iterations(insn)
    return timing.insn_overhead + (timing.gemm_pipeline_depth + n if n else 0)


def alu_cycles(timing: TimingConfig, insn: AluInsn) -> int:
    """Cycles of one ALU instruction: a new micro-op iteration every ``alu_ii`` cycles."""
    n = loop_iterations(insn)
    return timing.insn_overhead + (timing.alu_pipeline_depth + (n - 1) * timing.alu_ii + 1 if n else 0)


class ComputeUnit(Unit):
    """Runs GEMM, ALU, LOAD UOP/ACC and FINISH; talks to load (l2c/c2l) and store (c2s/s2c)."""

    name = "compute"
    module = Module.COMPUTE

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        modules = [o.module for o in ctx.ops]
        self.program_of = {m: [i for i, mm in enumerate(modules) if mm == m] for m in (Module.LOAD, Module.STORE)}

    def execute(self, index: int, insn: Insn) -> int:
        timing = self.ctx.cfg.timing
        if isinstance(insn, GemmInsn):
            return gemm_cycles(timing, insn)
        if isinstance(insn, AluInsn):
            return alu_cycles(timing, insn)
        if isinstance(insn, MemInsn):
            return load_cycles(self, insn)
        assert isinstance(insn, FinishInsn)
        self._check_finish_ordering(index)
        return timing.insn_overhead

    def _check_finish_ordering(self, index: int) -> None:
        """Raise unless every load and store is ordered before FINISH by a chain of tokens.

        Such a program would end while DRAM writes (or SRAM loads) race with the end of the
        run; fsim rejects it the same way, so both backends accept the same programs.
        """
        for module in (Module.LOAD, Module.STORE):
            left = self.program_of[module][self.clock[module] :]
            if left:
                raise ProtocolError(
                    f"FINISH (instruction {index}) retired while the {module.name.lower()} module's instructions "
                    f"{left[:8]}{'...' if len(left) > 8 else ''} were not ordered before it by dependency tokens "
                    f"(first: {describe(self.ctx.insns[left[0]])}); make FINISH pop a token the last of them pushes "
                    f"(e.g. STORE push_prev + FINISH pop_next)"
                )
