"""Where the compute module's cycles went in one cycle-model run, by cause.

The GEMM core is busy only during GEMM micro-op iterations; every other cycle of the run is
booked to exactly one cause here, so the parts sum to the run's cycles: GEMM reset iterations,
GEMM pipeline fill and done cycle, ALU iterations (at ``alu_op_ii``) and pipeline, micro-op and accumulator loads,
the dependency-token gate's fixed cycles around each instruction (``insn_overhead``), and the
compute module's stalls (a token not there yet, an empty command queue, a full token queue).
``bench/compute_breakdown.py`` prints it for compiled ResNet-18 layers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from vdla.simulator.cycle.compute import loop_iterations
from vdla.simulator.cycle.machine import CycleResult
from vdla_hw.config import HwConfig
from vdla_hw.isa import AluInsn, AluOp, GemmInsn, Insn, MemInsn

PARTS = ("gemm_iters", "gemm_reset", "gemm_pipeline", "alu_iters", "alu_pipeline", "load_uop_acc", "gate", "wait_token",
         "wait_insn", "wait_queue_full", "idle")
"""The causes, in the order tables print them; ``idle`` is what is left (after FINISH)."""


def compute_breakdown(cfg: HwConfig, insns: Sequence[Insn], result: CycleResult) -> tuple[dict[str, int], dict[str, int]]:
    """``(parts, kinds)``: the run's cycles by cause (:data:`PARTS`, summing to ``result.stats.cycles``)
    and the compute module's instructions by kind.  ``result`` must carry a timeline."""
    if result.timeline is None:
        raise ValueError("compute_breakdown needs a run with a timeline (run_cycle(..., timeline=True))")
    t = cfg.timing
    parts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for s in result.timeline.of_unit("compute", "insn"):
        insn = insns[int(s.name.rsplit("#", 1)[1])]
        span = s.end - s.start  # from the executor's start through the push cycle
        if isinstance(insn, GemmInsn):
            n = loop_iterations(insn)
            parts["gemm_reset" if insn.reset else "gemm_iters"] += n
            parts["gemm_pipeline"] += span - n
            kinds["GEMM reset" if insn.reset else "GEMM"] += 1
        elif isinstance(insn, AluInsn):
            busy = loop_iterations(insn) * t.alu_op_ii(reads_dst=insn.alu_op != AluOp.MOV)
            parts["alu_iters"] += busy
            parts["alu_pipeline"] += span - busy
            kinds[f"ALU {insn.alu_op.name}"] += 1
        elif isinstance(insn, MemInsn):
            parts["load_uop_acc"] += span
            kinds[f"LOAD {insn.mem_type.name}"] += 1
        else:  # FINISH: the run ends in its done cycle, so no gate cycles follow it
            parts["gate"] += span + 1
            kinds["FINISH"] += 1
            continue
        parts["gate"] += t.insn_overhead - 1  # the cycle taking the instruction, the ones after its push
    u = result.stats.units["compute"]
    parts["wait_token"] = u.wait_token
    parts["wait_insn"] = u.wait_queue_empty
    parts["wait_queue_full"] = u.wait_queue_full
    parts["idle"] = result.stats.cycles - sum(parts.values())
    return {p: parts[p] for p in PARTS}, dict(kinds)
