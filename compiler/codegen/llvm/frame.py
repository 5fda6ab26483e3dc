"""Stack frames of the generated functions: vector spill slots at their natural alignment.

A caller guarantees the x86-64 ABI's 16 bytes of stack alignment.  LLVM gives the slots that register
allocation spills vectors to no more than that unless the function already realigns its stack, which it
must decide before register allocation (realigning takes the frame pointer).  A 32-byte ymm spill slot
then sits at 16 mod 32 in about half the processes: it crosses a cache line when it starts at 48 mod 64
and, at one stack position in 128, a 4 KiB page.  A kernel whose register tile spills an accumulator
stores and reloads that slot every iteration; split across two pages, that store and reload cost the
kernel up to 4x its time (measured on an AMD Zen 4; this VM has no PMU to say which penalty it is).  Linux starts each process's stack at a random 16-byte
step, so which kernels hit it, and by how much, is drawn anew per process: the AVX2 MobileNetV2 that ran
7-25% slow in about one process in 15 (docs/cpu_speed.md, "The AVX2 MobileNetV2 outlier process").

:func:`align_vector_spills` puts a one-byte ``alloca`` aligned to the widest vector register in a
function's entry block, kept alive by an empty ``asm`` that takes its address: LLVM then realigns the
frame in the prologue (``and $-32, %rsp``) and every vector spill slot is aligned (``vmovaps``), at every
stack position.  The price is the frame pointer (rbp) reserved in those functions.  Inlined functions
carry the alloca, so the realignment, into their caller (the parallel trampolines and the exported
entries).  Where the ABI's 16 bytes already align the widest vector (SSE, NEON) nothing is emitted.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import llvmlite.ir as ir

from .types import I8, VOID

if TYPE_CHECKING:
    from .target import Target

#: Stack alignment every caller guarantees at a call (x86-64 System V and AArch64 AAPCS64 ABIs), bytes.
ABI_STACK_ALIGN = 16


def spill_alignment(target: Target) -> int:
    """The stack alignment a function of ``target`` needs for its vector spill slots (bytes)."""
    return max(ABI_STACK_ALIGN, target.vector_bits // 8)


def align_vector_spills(entry: ir.IRBuilder, target: Target) -> None:
    """Make the function ``entry`` builds into realign its stack to :func:`spill_alignment` (``entry`` is
    positioned in the function's entry block, before any other code)."""
    align = spill_alignment(target)
    if align <= ABI_STACK_ALIGN:
        return
    anchor = entry.alloca(I8, name="spill_align")
    anchor.align = align
    # An alloca nothing reads is deleted with its alignment; an asm statement that takes its address is
    # not, and emits no instruction.
    entry.asm(ir.FunctionType(VOID, [anchor.type]), "", "r", [anchor], side_effect=True)
