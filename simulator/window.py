"""The DRAM address window: the byte range ``[base, limit)`` a program's DMA may touch.

The hardware checks every DMA command against its WINDOW_BASE/WINDOW_LIMIT registers
(``vdla_addr_window.sv``) and faults instead of issuing a transfer outside; fsim and the cycle
model apply the same rule, so all three backends raise the same error for the same program.
By default the window is the program's whole DRAM image. This module also builds the error
messages the hardware's fault registers are turned back into (:mod:`vdla.runtime.backends.rtl`).
"""

from __future__ import annotations

from vdla_hw.errors import UsageError
from vdla_hw.isa import INSN_BYTES, MemInsn

from vdla.simulator.errors import MemoryAccessError
from vdla.simulator.tokens import describe

Window = tuple[int, int]
ADDR_SPACE = 1 << 32
"""The DMA address space (AXI_ADDR_WIDTH = 32): a window lies inside it."""


def resolve_window(window: Window | None, dram_size: int) -> Window:
    """``window`` checked, or the whole DRAM image ``[0, dram_size)`` when None."""
    if window is None:
        return 0, dram_size
    base, limit = (int(v) for v in window)
    if not 0 <= base <= limit <= ADDR_SPACE:
        raise UsageError(f"DRAM window [{base}, {limit}) is not a byte range inside [0, 2**32)",
                         hint="give byte addresses 0 <= BASE <= LIMIT <= 2**32 (omit --window for the whole DRAM image)")
    return base, limit


def parse_window(text: str) -> Window:
    """``"BASE:LIMIT"`` (decimal or 0x-hex byte addresses) as a window."""
    try:
        base, limit = (int(part, 0) for part in text.split(":"))
    except ValueError:
        raise UsageError(f"--window {text!r} is not BASE:LIMIT",
                         hint="give byte addresses, e.g. --window 0:65536 or --window 0x1000:0x9000") from None
    return resolve_window((base, limit), limit)


def dram_window_error(insn: MemInsn, index: int, elem_bytes: int, window: Window) -> MemoryAccessError:
    """The error of a LOAD/STORE whose DRAM block leaves ``window``."""
    first = insn.dram_base
    last = insn.last_elem
    base, limit = window
    return MemoryAccessError(
        f"instruction {index} ({describe(insn)}): DRAM {insn.mem_type.name} elements [{first}, {last}] "
        f"(bytes [{first * elem_bytes}, {(last + 1) * elem_bytes})) are outside the DRAM window [{base}, {limit}) "
        f"the job may access; fix dram_base/x_stride/y_size/elem_stride, or place the data inside the window"
    )


def in_window(insn: MemInsn, elem_bytes: int, window: Window) -> bool:
    """Whether every byte of the (non-empty) DRAM block of ``insn`` lies in ``window``."""
    first = insn.dram_base
    last = insn.last_elem
    return window[0] <= first * elem_bytes and (last + 1) * elem_bytes <= window[1]


def fetch_window_error(insn_addr: int, count: int, window: Window) -> MemoryAccessError:
    """The error of an instruction stream that leaves ``window``."""
    return MemoryAccessError(
        f"the instruction stream of {count} instructions at DRAM bytes [{insn_addr}, {insn_addr + count * INSN_BYTES}) "
        f"is outside the DRAM window [{window[0]}, {window[1]}) the job may access; place the program inside the window"
    )


def check_fetch_window(insn_addr: int, count: int, window: Window) -> None:
    """Raise :func:`fetch_window_error` unless the instruction stream lies in ``window``."""
    if insn_addr < window[0] or insn_addr + count * INSN_BYTES > window[1]:
        raise fetch_window_error(insn_addr, count, window)
