"""The control register map the host writes over AXI-lite.

One definition for the board driver, the RTL (through the generated package),
the Verilator harness and the cocotb tests.  All registers are 32 bits wide and
byte-addressed.
"""

from __future__ import annotations

from dataclasses import dataclass

from vdla_hw.config import HwConfig, load_config, preset_names
from vdla_hw.errors import DeviceFaultError

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
    Register("CONFIG_ID", 0x18, "ro", "low 32 bits of the config digest the design was generated for"),
    Register("BUILD_ID", 0x1C, "ro", "the bitstream's build id (vdla_top parameter BUILD_ID; 0 in simulation)"),
    Register("WINDOW_BASE", 0x20, "rw", "DRAM address window: first byte a DMA may touch (reset 0)"),
    Register("WINDOW_LIMIT", 0x24, "rw", "DRAM address window: first byte past it (exclusive; reset 0: nothing allowed)"),
    Register("FAULT_CAUSE", 0x28, "ro", "bits 3:0 the fault class (FAULT_* codes; 0: none), bits 7:4 the buffer "
                                        "(BUF_* codes); cleared by start"),
    Register("FAULT_INSN", 0x2C, "ro", "index in the program of the faulting instruction"),
    Register("FAULT_ADDR", 0x30, "ro", "DRAM faults: the offending byte address; SRAM faults: the offending element index"),
    Register("FAULT_ITER", 0x34, "ro", "loop faults: the micro-op loop iteration (i0/i1/uop order) that faulted"),
)

CONTROL_START = 1 << 0
STATUS_DONE = 1 << 0
"""The machine stopped: FINISH retired, or a fault (then STATUS_FAULT is set too)."""
STATUS_BUSY = 1 << 1
STATUS_FAULT = 1 << 2
"""The design stopped on a fault; FAULT_CAUSE/INSN/ADDR/ITER say which."""
STATUS_BUS_BUSY = 1 << 3
"""DRAM transactions are still in flight (after a fault); a start is ignored until they end."""

# FAULT_CAUSE classes (bits 3:0). A fault stops fetch and every module's command queue, no DMA
# command outside the window is ever issued, and done + irq rise with STATUS_FAULT.
FAULT_NONE = 0
FAULT_DRAM_WINDOW = 1
"""a LOAD/STORE row (or the instruction stream) outside [WINDOW_BASE, WINDOW_LIMIT)"""
FAULT_SRAM_RANGE = 2
"""a LOAD/STORE block past the end of its SRAM buffer"""
FAULT_LOOP_INDEX = 3
"""a GEMM/ALU micro-op loop iteration addressing an element past its buffer"""
FAULT_FETCH_WINDOW = 4
"""the instruction stream [INSN_ADDR, INSN_ADDR + 16 * INSN_COUNT) outside the window"""
FAULT_CLASS_MASK = 0xF
FAULT_BUF_SHIFT = 4
# FAULT_CAUSE buffers (bits 7:4): the SRAM buffer or DMA client at fault.
BUF_UOP, BUF_INP, BUF_WGT, BUF_ACC, BUF_OUT, BUF_INSN = range(6)
BUFFER_NAMES = ("UOP", "INP", "WGT", "ACC", "OUT", "INSN")


def offset(name: str) -> int:
    """Byte offset of the register called ``name``."""
    for reg in REGISTERS:
        if reg.name == name:
            return reg.offset
    raise KeyError(f"no control register {name!r}; registers: {[r.name for r in REGISTERS]}")


def config_id(cfg: HwConfig) -> int:
    """The CONFIG_ID value of ``cfg``: the low 32 bits of :attr:`HwConfig.digest`."""
    return int(cfg.digest, 16) & 0xFFFF_FFFF


def describe_config_id(value: int) -> str:
    """How a message names the config behind a CONFIG_ID value: the label of every preset
    with that id, or the bare id when it is none of them."""
    names = [cfg.label() for cfg in map(load_config, preset_names()) if config_id(cfg) == value]
    return " or ".join(names) if names else f"an unknown config (CONFIG_ID 0x{value:08x})"


def check_config_id(value: int, cfg: HwConfig) -> None:
    """Raise a DeviceFaultError naming both configs when a device's CONFIG_ID ``value`` is
    not that of ``cfg``, the config a program was compiled for."""
    if value != config_id(cfg):
        raise DeviceFaultError(
            f"the device was built for {describe_config_id(value)}, but the program was compiled for "
            f"{cfg.label()}",
            hint=f"recompile the model for the device's config (--config), or build the hardware for "
                 f"{cfg.name!r} (vdla hw gen-pkg / vdla fpga build --config {cfg.name})",
        )
