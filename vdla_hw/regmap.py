"""The control register map the host writes over AXI-lite.

One definition for the board driver, the RTL (through the generated package),
the Verilator harness and the cocotb tests.  All registers are 32 bits wide and
byte-addressed.
"""

from __future__ import annotations

from dataclasses import dataclass

AXIL_ADDR_WIDTH = 8
AXIL_DATA_WIDTH = 32


@dataclass(frozen=True)
class Register:
    """One 32-bit control register."""

    name: str
    offset: int
    access: str  # "rw", "ro" or "wo"
    doc: str


REGISTERS: tuple[Register, ...] = (
    Register("CONTROL", 0x00, "wo", "bit 0: write 1 to start the program (ignored while busy)"),
    Register("STATUS", 0x04, "ro", "bit 0: done (cleared by start), bit 1: busy"),
    Register("INSN_COUNT", 0x08, "rw", "number of 128-bit instructions to fetch"),
    Register("INSN_ADDR", 0x0C, "rw", "DRAM byte address of the first instruction (16-byte aligned)"),
    Register("CYCLES_LO", 0x10, "ro", "clock cycles from start to done, low 32 bits"),
    Register("CYCLES_HI", 0x14, "ro", "clock cycles from start to done, high 32 bits"),
)

CONTROL_START = 1 << 0
STATUS_DONE = 1 << 0
STATUS_BUSY = 1 << 1


def offset(name: str) -> int:
    """Byte offset of the register called ``name``."""
    for reg in REGISTERS:
        if reg.name == name:
            return reg.offset
    raise KeyError(f"no control register {name!r}; registers: {[r.name for r in REGISTERS]}")
