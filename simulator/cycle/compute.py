"""The compute unit: GEMM core, vector ALU, micro-op and accumulator loads, FINISH.

Executor cycles, from its start to its done pulse (``n`` = iter_out x iter_in x
micro-ops, the instruction's loop iterations), as the RTL's ``vdla_gemm`` /
``vdla_alu``:

* GEMM: ``n + gemm_pipeline_depth + 1`` -- one micro-op iteration enters the core
  per cycle, the last result is written a pipeline depth later, done a cycle after.
* ALU: ``(n - 1) * ii + alu_pipeline_depth + 2`` -- a new iteration every
  ``ii = alu_ii`` cycles, or ``alu_copy_ii`` (1) for a MOV, which never reads its destination.
* An instruction with ``n = 0`` is done the cycle after it starts.
* LOAD UOP / LOAD ACC: as a LOAD on the load unit (see :mod:`vdla.simulator.cycle.load`),
  sharing the DRAM read channel.
* FINISH: done the cycle after it starts; the program ends then.  Its tokens must
  order every load and store before it (checked as in fsim), so load and store
  have drained by then, which is what the RTL's FINISH waits for.

The token gate adds ``insn_overhead`` cycles to each (:mod:`vdla.simulator.cycle.unit`):
with 3, a GEMM takes n + D + 4 cycles and an ALU (n - 1) II + D + 5, as in ``docs/rtl.md``.
"""

from __future__ import annotations

from vdla.simulator.cycle.dma import ReadRows
from vdla.simulator.cycle.load import start_load
from vdla.simulator.cycle.unit import Context, Unit
from vdla.simulator.errors import ProtocolError
from vdla.simulator.tokens import describe
from vdla_hw.config import TimingConfig
from vdla_hw.isa import AluInsn, AluOp, FinishInsn, GemmInsn, Insn, MemInsn, Module


def loop_iterations(insn: GemmInsn | AluInsn) -> int:
    """Micro-op iterations of a GEMM/ALU: iter_out x iter_in x (uop_end - uop_bgn)."""
    return insn.iter_out * insn.iter_in * max(0, insn.uop_end - insn.uop_bgn)


def gemm_cycles(timing: TimingConfig, insn: GemmInsn) -> int:
    """Executor cycles of one GEMM instruction on the core."""
    n = loop_iterations(insn)
    return n + timing.gemm_pipeline_depth + 1 if n else 1


def alu_cycles(timing: TimingConfig, insn: AluInsn) -> int:
    """Executor cycles of one ALU instruction: a new micro-op iteration every ``alu_ii`` cycles
    (``alu_copy_ii`` for a copy)."""
    n = loop_iterations(insn)
    ii = timing.alu_op_ii(reads_dst=insn.alu_op != AluOp.MOV)
    return (n - 1) * ii + timing.alu_pipeline_depth + 2 if n else 1


class ComputeUnit(Unit):
    """Runs GEMM, ALU, LOAD UOP/ACC and FINISH; talks to load (l2c/c2l) and store (c2s/s2c)."""

    name = "compute"
    module = Module.COMPUTE

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        modules = [o.module for o in ctx.ops]
        self.program_of = {m: [i for i, mm in enumerate(modules) if mm == m] for m in (Module.LOAD, Module.STORE)}

    def execute(self, index: int, insn: Insn, start: int) -> tuple[int, int, ReadRows | None]:
        timing = self.ctx.cfg.timing
        if isinstance(insn, GemmInsn):
            return gemm_cycles(timing, insn), 0, None
        if isinstance(insn, AluInsn):
            return alu_cycles(timing, insn), 0, None
        if isinstance(insn, MemInsn):
            return start_load(self, insn, start)
        assert isinstance(insn, FinishInsn)
        self._check_finish_ordering(index)
        return 1, 0, None

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
