"""The dependency-token protocol shared by the functional and the cycle model.

Four bounded FIFOs carry tokens between the modules: load->compute (``l2c``),
compute->load (``c2l``), compute->store (``c2s``) and store->compute (``s2c``).
An instruction's flags are relative to the module that executes it: for load
"next" is compute, for compute "prev" is load and "next" is store, for store
"prev" is compute.  Pops happen before an instruction executes, pushes after
it completes.  This module owns that mapping; simulators only count tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from vdla_hw.isa import DEP_QUEUE_NAMES, FLAG_QUEUES, DepFlags, FinishInsn, Insn, Module, module_of

from vdla.simulator.errors import ProtocolError

L2C, C2L, C2S, S2C = DEP_QUEUE_NAMES
DEP_QUEUES: tuple[str, ...] = DEP_QUEUE_NAMES
"""Names of the four dependency queues, in the order simulators report them."""


@dataclass(frozen=True)
class TokenOps:
    """The queues one instruction pops before it runs and pushes after it completes."""

    module: Module
    pops: tuple[str, ...]
    pushes: tuple[str, ...]


def flag_queue(module: Module, flag: str) -> str | None:
    """The queue that ``flag`` (e.g. ``"pop_prev"``) of an instruction on ``module`` uses."""
    return FLAG_QUEUES[module].get(flag)


def token_ops(insn: Insn, index: int) -> TokenOps:
    """Validate the dependency flags of ``insn`` and return the queues it pops and pushes.

    Raises :class:`ProtocolError` when a flag names a neighbour the executing module
    does not have (load has no previous stage, store no next stage).
    """
    module = module_of(insn)
    deps: DepFlags = insn.deps
    table = FLAG_QUEUES[module]
    pops: list[str] = []
    pushes: list[str] = []
    for flag, out in (("pop_prev", pops), ("pop_next", pops), ("push_prev", pushes), ("push_next", pushes)):
        if not getattr(deps, flag):
            continue
        queue = table.get(flag)
        if queue is None:
            side = flag.split("_")[1]
            raise ProtocolError(
                f"instruction {index} ({describe(insn)}) runs on the {module.name.lower()} module, which has no "
                f"{side} stage, so it cannot {flag.replace('_', ' ')}; clear {flag} "
                f"(load may only use pop_next/push_next, store only pop_prev/push_prev)"
            )
        out.append(queue)
    return TokenOps(module, tuple(pops), tuple(pushes))


def describe(insn: Insn) -> str:
    """A one-line, disassembly-like description of an instruction for error messages."""
    from vdla_hw.isa import AluInsn, GemmInsn, MemInsn

    deps = str(insn.deps)
    tail = f" deps={deps}" if deps else ""
    if isinstance(insn, MemInsn):
        pad = (insn.y_pad0, insn.y_pad1, insn.x_pad0, insn.x_pad1)
        pad_s = f" pad={pad}" if any(pad) else ""
        pad_s += f" shift={insn.shift}" if insn.shift else ""
        pad_s += "".join(f" {w}" for w, on in (("clip", insn.clip), ("relu", insn.relu)) if on)
        pad_s += f" bias={insn.bias_row},{insn.bias_step}" if insn.bias else ""
        pad_s += f" estride={insn.elem_stride}" if insn.elem_stride != 1 else ""
        return (
            f"{insn.opcode.name} {insn.mem_type.name} sram={insn.sram_base} dram={insn.dram_base} "
            f"{insn.y_size}x{insn.x_size} stride={insn.x_stride}{pad_s}{tail}"
        )
    if isinstance(insn, GemmInsn):
        reset = " reset" if insn.reset else (" overwrite" if insn.overwrite else "")
        return f"GEMM{reset} uop[{insn.uop_bgn}:{insn.uop_end}) loop {insn.iter_out}x{insn.iter_in}{tail}"
    if isinstance(insn, AluInsn):
        operand = f"imm={insn.imm}" if insn.use_imm else "tensor"
        return f"ALU {insn.alu_op.name} {operand} uop[{insn.uop_bgn}:{insn.uop_end}) loop {insn.iter_out}x{insn.iter_in}{tail}"
    if isinstance(insn, FinishInsn):
        return f"FINISH{tail}"
    return repr(insn)


def waiting_for(ops: TokenOps, counts: dict[str, int], depth: int, *, popped: bool) -> str:
    """Why an instruction with ``ops`` cannot proceed given the queue ``counts``.

    ``popped`` says whether its pops already happened (it is then waiting to push).
    """
    if not popped:
        empty = [q for q in ops.pops if counts[q] < ops.pops.count(q)]
        return "pop " + ", ".join(f"{q} (empty: no token from {_producer(q)})" for q in empty)
    full = [q for q in ops.pushes if counts[q] >= depth]
    return "push " + ", ".join(f"{q} (full: {counts[q]}/{depth}, {_consumer(q)} never pops)" for q in full)


def _producer(queue: str) -> str:
    return {L2C: "load", C2L: "compute", C2S: "compute", S2C: "store"}[queue]


def _consumer(queue: str) -> str:
    return {L2C: "compute", C2L: "load", C2S: "store", S2C: "compute"}[queue]


def check_flags(insns: Sequence[Insn]) -> list[TokenOps]:
    """Validate the flags of a whole program; returns the token operations per instruction."""
    return [token_ops(insn, i) for i, insn in enumerate(insns)]
