"""Register spills of a built CPU kernel, counted from its object code.

A kernel whose register tile needs more vector registers than the target has is spilled by LLVM: some
vectors go to fixed stack slots and are read back in the hot loop.  Such a kernel's time is not a property
of its config: the slots' addresses move with the stack pointer at the call (a ctypes call in the tuner,
the graph runtime's loop in the model, and Linux randomizes the stack's start per process), and where they
fall against the kernel's data streams moved one kernel's time up to 1.5x between call sites
(``bench/spill_stack.py``, ``docs/autotune.md`` "Spilling configs and the stem").  A kernel without spills
moves 1-3%.  The tuner therefore counts each built candidate's spills (:func:`spills_of`) and, by default,
does not time one that spills on an AVX-512 target (:data:`REJECT_MIN_REGISTERS`,
:mod:`~vdla.compiler.autotune.measure`).

The count: ``objdump -d`` of the shared object (AT&T syntax), function by function.  A spill slot is a fixed
offset from the stack pointer (``0x40(%rsp)``; from ``%rbp`` only in a function that sets it up as its frame
pointer, ``mov %rsp,%rbp``: elsewhere LLVM uses ``%rbp`` as one more pointer into the data) that a vector
instruction stores to and a later one reads back.  Counted: the reads of such slots by an instruction with a
``ymm`` or ``zmm`` operand (the AVX2 and AVX-512 vectors the register tiles hold; a reload folded into an FMA
or a broadcast counts), and the vector stores to the slots they read.  Not counted: indexed reads
(``(%rsp,%rax,4)``), stack data no vector store wrote (a row buffer written through an index), and ``xmm``
round trips (the entry function of every kernel passes two pointers of its OpenMP closure through one).
LLVM's assembly printer, as llvmlite drives it, writes no ``Spill``/``Reload`` comments, so the object code is
what can be read.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass

from vdla_hw.errors import ToolchainError

#: A fixed stack offset: ``0x40(%rsp)``, ``-0x80(%rbp)``, ``(%rsp)``; an indexed ``(%rsp,%rax,4)`` does not match.
_STACK_SLOT = re.compile(r"(-?0x[0-9a-f]+)?\((%r[sb]p)\)")
_WIDE = re.compile(r"%[yz]mm\d+")
_ANY_VECTOR = re.compile(r"%[xyz]mm\d+")
_FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")

#: Spill counting reads x86 object code: the targets whose kernels it applies to.
SPILL_ARCHES = ("x86_64",)

#: The tuner rejects spilling configs on targets with at least this many vector registers (AVX-512's 32), where it
#: was measured: there the spills are accumulators, a 7-reload kernel moved 12% and a 17-reload one 39% with the
#: stack position of the call, and no pick of the MobileNetV2 or ResNet-18 logs that the model confirmed was lost.
#: With AVX2's 16 ``ymm`` spilling is the rule (29 of MobileNetV2's 31 defaults), the spills measured are hoisted
#: weights that moved a kernel 2-7% with 72-191 reloads, and rejecting would drop picks the tuner timed 1.03-1.35x
#: faster than the next clean config (``docs/autotune.md``, "Spilling configs and the stem").
REJECT_MIN_REGISTERS = 32


@dataclass(frozen=True)
class SpillCount:
    """A kernel's ``ymm``/``zmm`` reloads of spill slots and the stores to them (:func:`count_spills`)."""

    reloads: int
    stores: int

    @property
    def spills(self) -> bool:
        """Whether the kernel reads vectors back from the stack (spills vector registers)."""
        return self.reloads > 0

    def describe(self) -> str:
        """One line for a log record's detail: ``spills vector registers (17 reloads, 18 stores ...)``."""
        what = "spills vector registers" if self.spills else "no vector spills"
        return f"{what} ({self.reloads} reloads, {self.stores} stores of stack slots)"


def _functions(disassembly: str) -> list[list[str]]:
    """The instructions (``mnemonic operands``) of each function of ``objdump -d`` text."""
    functions: list[list[str]] = []
    for line in disassembly.splitlines():
        if _FUNCTION.match(line.strip()):
            functions.append([])
        elif "\t" in line and functions:
            functions[-1].append(line.split("\t")[-1].strip())
    return functions or [[line.split("\t")[-1].strip() for line in disassembly.splitlines() if "\t" in line]]


def count_spills(disassembly: str) -> SpillCount:
    """The :class:`SpillCount` of ``objdump -d`` text (AT&T syntax): per function, the ``ymm``/``zmm`` reads of
    fixed stack slots that a vector store of the same function wrote, and those stores."""
    reloads = stores = 0
    for instructions in _functions(disassembly):
        framed = any(i.split()[:2] == ["mov", "%rsp,%rbp"] for i in instructions if i.startswith("mov"))
        bases = ("%rsp", "%rbp") if framed else ("%rsp",)
        written: dict[tuple[str, str], int] = {}
        reads: list[tuple[str, str]] = []
        for instruction in instructions:
            _, _, operands = instruction.partition(" ")
            operands = operands.strip()
            if not _ANY_VECTOR.search(operands):
                continue
            slot = _STACK_SLOT.search(operands)
            if slot is None or slot.group(2) not in bases:
                continue
            key = (slot.group(2), slot.group(1) or "0x0")
            if _STACK_SLOT.search(operands.rsplit(",", 1)[-1]):
                written[key] = written.get(key, 0) + 1
            elif _WIDE.search(operands):
                reads.append(key)
        reloaded = {k for k in reads if k in written}
        reloads += sum(1 for k in reads if k in written)
        stores += sum(written[k] for k in reloaded)
    return SpillCount(reloads, stores)


def find_objdump() -> str | None:
    """The ``objdump`` that disassembles the artifacts (binutils' or LLVM's), or None when neither is installed."""
    for name in ("objdump", "llvm-objdump"):
        path = shutil.which(name)
        if path is not None:
            return path
    return None


@functools.cache
def warn_no_objdump() -> None:
    """Warn once per process that the tuner times spilling configs: there is no disassembler to count them."""
    warnings.warn("objdump is not installed: the tuner times every config, spilling or not (a spilling "
                  "kernel's time moves with its call's stack position); install binutils "
                  "(apt-get install binutils) to skip them", RuntimeWarning, stacklevel=3)


def objdump() -> str:
    """:func:`find_objdump`, with a clear error when neither is installed."""
    path = find_objdump()
    if path is None:
        raise ToolchainError("counting a kernel's register spills needs objdump, and neither objdump nor "
                             "llvm-objdump is on PATH",
                             hint="install binutils (apt-get install binutils), or tune with "
                                  "--max-spill-reloads keep")
    return path


def spills_of(artifact: bytes) -> SpillCount:
    """:func:`count_spills` of a built x86 shared object (the bytes :func:`~.measure.build_job` returns)."""
    tool = objdump()
    with tempfile.NamedTemporaryFile(suffix=".so") as f:
        f.write(artifact)
        f.flush()
        done = subprocess.run([tool, "-d", "--no-show-raw-insn", f.name], capture_output=True, text=True)
    if done.returncode != 0:
        raise ToolchainError(f"{tool} could not disassemble a built kernel: {done.stderr.strip()[:300]}",
                             hint="the artifact is not an x86 shared object; spill counting applies to x86 targets")
    return count_spills(done.stdout)
