"""Static checks of a whole program, shared by the functional and the cycle model.

These are the rules that do not depend on memory contents: legal dependency
flags per module, legal memory types and padding, ordered micro-op ranges and a
single FINISH at the end.  Bounds of SRAM/DRAM accesses depend on micro-op
contents and DRAM size and are checked when an instruction executes.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import INSN_BYTES, MAX_ELEM_STRIDE, OPCODE_W, AluInsn, FinishInsn, GemmInsn, Insn, MemInsn, MemType, Opcode

from vdla.simulator.errors import IllegalInstructionError, ProtocolError
from vdla.simulator.tokens import TokenOps, describe, token_ops


def check_insn(cfg: HwConfig, insn: Insn, index: int) -> TokenOps:
    """Validate one instruction's static rules; returns its token operations."""
    ops = token_ops(insn, index)
    where = _Where(insn, index)
    if isinstance(insn, MemInsn):
        pads = (insn.y_pad0, insn.y_pad1, insn.x_pad0, insn.x_pad1)
        if insn.opcode == Opcode.STORE:
            if insn.mem_type != MemType.OUT:
                raise ProtocolError(f"{where}: STORE of memory type {insn.mem_type.name}; only OUT can be stored")
            if any(pads):
                raise ProtocolError(f"{where}: STORE cannot pad; set all pads to 0")
            if insn.elem_stride != 1:
                raise ProtocolError(f"{where}: STORE with elem_stride {insn.elem_stride}; only a LOAD gathers "
                                    f"elements, store contiguous rows (elem_stride 1)")
            if insn.shift >= cfg.acc_width:
                raise ProtocolError(f"{where}: STORE shift {insn.shift} is not below the {cfg.acc_width}-bit "
                                    f"accumulator width; use a shift in [0, {cfg.acc_width - 1}]")
        elif insn.mem_type == MemType.OUT:
            raise ProtocolError(f"{where}: LOAD of memory type OUT; load accumulators with mem_type ACC")
        elif insn.mem_type == MemType.UOP and any(pads):
            raise ProtocolError(f"{where}: micro-op loads cannot pad; set all pads to 0")
        if not 1 <= insn.elem_stride <= MAX_ELEM_STRIDE:
            raise ProtocolError(f"{where}: elem_stride {insn.elem_stride} is outside [1, {MAX_ELEM_STRIDE}]")
        if insn.elem_stride > 1 and (insn.x_pad0 or insn.x_pad1):
            raise ProtocolError(f"{where}: a gathering LOAD (elem_stride {insn.elem_stride}) cannot pad along x; "
                                f"set x_pad0 and x_pad1 to 0")
    elif isinstance(insn, (GemmInsn, AluInsn)):
        if insn.uop_end < insn.uop_bgn:
            raise ProtocolError(f"{where}: uop_end {insn.uop_end} < uop_bgn {insn.uop_bgn}; the range is [bgn, end)")
        if insn.uop_end > cfg.uop_buff_depth:
            raise ProtocolError(
                f"{where}: micro-op range ends at {insn.uop_end}, beyond the {cfg.uop_buff_depth}-entry micro-op buffer"
            )
    elif not isinstance(insn, FinishInsn):
        raise ProtocolError(f"instruction {index}: {insn!r} is not a VDLA instruction")
    return ops


class _Where:
    """Formats "instruction i (disassembly)" only when an error message needs it."""

    def __init__(self, insn: Insn, index: int) -> None:
        self.insn, self.index = insn, index

    def __format__(self, spec: str) -> str:
        return f"instruction {self.index} ({describe(self.insn)})"


def static_key(insn: Insn) -> tuple | None:
    """Every field :func:`check_insn` reads, as a tuple of ints (None for a non-instruction):
    instructions with equal keys pass or fail its checks alike and have the same token operations."""
    cls = type(insn)
    if cls is MemInsn:
        d = insn.deps
        return (0, insn.opcode, insn.mem_type, insn.y_pad0, insn.y_pad1, insn.x_pad0, insn.x_pad1, insn.shift,
                insn.elem_stride, d.pop_prev, d.pop_next, d.push_prev, d.push_next)
    if cls is GemmInsn or cls is AluInsn:
        d = insn.deps
        return (1, insn.uop_bgn, insn.uop_end, d.pop_prev, d.pop_next, d.push_prev, d.push_next)
    if cls is FinishInsn:
        d = insn.deps
        return (2, d.pop_prev, d.pop_next, d.push_prev, d.push_next)
    return None


def check_program(cfg: HwConfig, insns: Sequence[Insn]) -> list[TokenOps]:
    """Validate a program statically; returns the token operations of every instruction.

    A program must end with its only FINISH: fetch stops there, and anything after it
    would never run.
    """
    if not insns:
        raise ProtocolError("empty program: a program needs at least a FINISH instruction")
    # Instructions equal in the fields the checks read pass the same checks with the same token
    # operations; tiled programs repeat few such combinations, so each is checked once. The key is a
    # tuple of plain ints (hashing a whole frozen instruction, its DepFlags in Python, cost more).
    checked: dict[tuple, TokenOps] = {}
    ops: list[TokenOps] = []
    append = ops.append
    for i, insn in enumerate(insns):
        key = static_key(insn)
        insn_ops = checked.get(key) if key is not None else None
        if insn_ops is None:
            insn_ops = check_insn(cfg, insn, i)
            if key is not None:
                checked[key] = insn_ops
        append(insn_ops)
    finishes = [i for i, insn in enumerate(insns) if isinstance(insn, FinishInsn)]
    last = len(insns) - 1
    if not finishes:
        raise ProtocolError(
            f"program of {len(insns)} instructions has no FINISH; append a FINISH (usually with pop_next, so it "
            f"waits for the last STORE's push_prev)"
        )
    if finishes != [last]:
        early = [i for i in finishes if i != last] or finishes
        raise ProtocolError(
            f"FINISH at instruction {early[0]} is not the last instruction ({last}); a program has exactly one "
            f"FINISH, at its end"
        )
    return ops


def check_opcodes(image: np.ndarray, insn_addr: int, count: int) -> None:
    """Raise :class:`IllegalInstructionError` for the first of the ``count`` instruction words at
    byte ``insn_addr`` of the DRAM ``image`` whose opcode is not an ISA opcode.

    Backends run a program's decoded instructions while the hardware fetches the encoded
    stream from DRAM; a word that cannot decode must stop every backend alike. The opcode
    sits in the low bits of each little-endian word, so one vectorized mask checks them all.
    """
    words = np.asarray(image, dtype=np.uint8).reshape(-1)[insn_addr : insn_addr + count * INSN_BYTES]
    if words.size != count * INSN_BYTES:
        raise ProtocolError(
            f"the instruction stream of {count} instructions at DRAM byte {insn_addr} runs past the "
            f"{np.asarray(image).size}-byte DRAM image"
        )
    opcodes = words.reshape(count, INSN_BYTES)[:, 0] & ((1 << OPCODE_W) - 1)
    bad = np.flatnonzero(opcodes > max(Opcode))
    if bad.size:
        k = int(bad[0])
        word = int.from_bytes(words[k * INSN_BYTES : (k + 1) * INSN_BYTES].tobytes(), "little")
        raise IllegalInstructionError(
            f"instruction {k} (word 0x{word:032x} at DRAM byte {insn_addr + k * INSN_BYTES}): unknown opcode "
            f"{int(opcodes[k])}, not one of {', '.join(f'{o.name}={int(o)}' for o in Opcode)}; the instruction "
            f"stream is corrupt -- re-assemble the program"
        )
