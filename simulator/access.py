"""The checks of the SRAM accesses an instruction makes while it runs, and their errors.

Ranges of SRAM elements (a LOAD's destination, a STORE's source, a micro-op range), the element
indices of a GEMM/ALU instruction's two-level loop and their bounds, the MOV copy-forwarding
rule, and reads of SRAM elements no instruction has written.  What cannot be checked without
the micro-ops and memory contents is checked here, as an instruction executes; the static rules
of a program are :mod:`vdla.simulator.checks`.  Shared by the reference semantics
(:mod:`vdla.simulator.semantics`), the plans of :mod:`vdla.simulator.replay` and the runtime's
fault reports, so every backend words an error alike.
"""

from __future__ import annotations

import numpy as np

from vdla_hw.isa import AluInsn, GemmInsn, Insn, MemType

from vdla.simulator.errors import MemoryAccessError, ProtocolError, UninitializedReadError
from vdla.simulator.state import MachineState, first_unwritten
from vdla.simulator.tokens import describe


def sram_range_error(insn: Insn, index: int, buffer: str, lo: int, hi: int, depth: int) -> MemoryAccessError:
    """The error of an instruction addressing SRAM elements ``[lo, hi]`` of a ``depth``-element buffer."""
    return MemoryAccessError(
        f"instruction {index} ({describe(insn)}): {buffer} SRAM elements [{lo}, {hi}] are out of range; "
        f"the {buffer} buffer holds elements [0, {depth - 1}]"
    )


def check_sram(insn: Insn, index: int, buffer: str, lo: int, hi: int, depth: int) -> None:
    """Raise unless SRAM element indices ``[lo, hi]`` lie in ``[0, depth)``."""
    if lo < 0 or hi >= depth:
        raise sram_range_error(insn, index, buffer, lo, hi, depth)


def uninitialized_read_error(insn: Insn, index: int, buffer: str, element: int, what: str) -> UninitializedReadError:
    """The error of ``what`` (an operand, a tile) of an instruction reading ``buffer`` SRAM ``element``,
    which no instruction has written."""
    return UninitializedReadError(
        f"instruction {index} ({describe(insn)}): {what} reads {buffer} SRAM element {element}, which no "
        f"instruction has written since the program started; SRAM starts with undefined contents on the "
        f"hardware, so LOAD it (or reset accumulators with a GEMM reset) before reading it"
    )


def loop_range(state: MachineState, insn: GemmInsn | AluInsn, index: int) -> tuple[int, int]:
    """The micro-op range ``[uop_bgn, uop_end)`` of a GEMM/ALU instruction, checked against the buffer."""
    bgn, end = insn.uop_bgn, insn.uop_end
    if end < bgn:
        raise ProtocolError(f"instruction {index} ({describe(insn)}): uop_end {end} < uop_bgn {bgn}; the range is [bgn, end)")
    if end > state.uop_words.shape[0]:
        check_sram(insn, index, "UOP", bgn, end - 1, state.uop_words.shape[0])
    return bgn, end


def loop_indices(insn: GemmInsn | AluInsn, fields: np.ndarray, factor_out: int, factor_in: int) -> np.ndarray:
    """Flattened element indices of every loop iteration in sequential (i0, i1, uop) order."""
    outer = np.arange(insn.iter_out, dtype=np.int64)[:, None, None] * factor_out
    inner = np.arange(insn.iter_in, dtype=np.int64)[None, :, None] * factor_in
    return (fields[None, None, :] + outer + inner).reshape(-1)


def loop_index_error(insn: Insn, index: int, buffer: str, at: int, total: int, element: int,
                     depth: int) -> MemoryAccessError:
    """The error of loop iteration ``at`` (of ``total``) addressing ``element`` past a ``depth``-element buffer."""
    return MemoryAccessError(
        f"instruction {index} ({describe(insn)}): loop iteration {at} (of {total}, in i0/i1/uop order) addresses "
        f"{buffer} SRAM element {element}; the {buffer} buffer holds elements [0, {depth - 1}]; fix the "
        f"micro-ops or the loop factors"
    )


def check_loop(insn: Insn, index: int, operands: list[tuple[str, np.ndarray, int]]) -> None:
    """Raise for the first loop iteration (in i0/i1/uop order) with an operand past its buffer;
    within one iteration the operands count in the order given (destination, source, weight),
    as the hardware's loop check reports them."""
    first: tuple[int, int, str, int, int] | None = None
    for rank, (buffer, idx, depth) in enumerate(operands):
        if idx.size and idx.max() >= depth:
            at = int(np.flatnonzero(idx >= depth)[0])
            if first is None or (at, rank) < first[:2]:
                first = (at, rank, buffer, int(idx[at]), depth)
    if first is not None:
        at, _, buffer, element, depth = first
        raise loop_index_error(insn, index, buffer, at, operands[0][1].size, element, depth)


def require_uops_written(state: MachineState, insn: GemmInsn | AluInsn, index: int) -> None:
    """Raise unless every micro-op in the instruction's range was loaded."""
    missing = first_unwritten(state, MemType.UOP, slice(insn.uop_bgn, insn.uop_end))
    if missing is not None:
        raise uninitialized_read_error(insn, index, "UOP", insn.uop_bgn + missing, "its micro-op range")


def require_loop_written(
    state: MachineState, insn: GemmInsn | AluInsn, index: int, mt: MemType, operand: str, rows: np.ndarray
) -> None:
    """Raise unless every element in ``rows`` -- the distinct elements the loop's ``operand``
    (``"dst"``, ``"src"`` or ``"wgt"``) indices address -- was written."""
    if first_unwritten(state, mt, rows) is None:
        return
    fields = state.uop_fields[operand][insn.uop_bgn : insn.uop_end]
    idx = loop_indices(insn, fields, getattr(insn, f"{operand}_factor_out"), getattr(insn, f"{operand}_factor_in"))
    at = int(np.argmin(state.written[mt][idx]))
    raise uninitialized_read_error(insn, index, mt.name, int(idx[at]), f"loop iteration {at} (in i0/i1/uop order)")


def copy_forwarding_hazard(dst: np.ndarray, src: np.ndarray) -> int | None:
    """The first iteration of a tensor-operand MOV (destinations ``dst``, sources ``src`` in loop
    order) that reads an accumulator an earlier iteration of it writes, or None.  A copy issues
    every cycle, before that write lands, and the hardware does not forward it: such a MOV is illegal."""
    first_write = np.full(int(max(dst.max(initial=0), src.max(initial=0))) + 1, dst.size, dtype=np.int64)
    np.minimum.at(first_write, dst, np.arange(dst.size, dtype=np.int64))
    late = np.flatnonzero(first_write[src] < np.arange(src.size))
    return int(late[0]) if late.size else None


def check_copy_forwarding(insn: AluInsn, index: int, dst: np.ndarray, src: np.ndarray) -> None:
    """Raise unless the MOV ``insn`` is free of :func:`copy_forwarding_hazard`."""
    k = copy_forwarding_hazard(dst, src)
    if k is not None:
        writer = int(np.flatnonzero(dst == src[k])[0])
        raise ProtocolError(
            f"instruction {index} ({describe(insn)}): MOV iteration {k} reads ACC[{int(src[k])}], which iteration "
            f"{writer} of the same MOV writes; a copy issues every cycle and does not see that "
            f"write: copy from rows no earlier iteration writes, or split the MOV into two instructions"
        )
