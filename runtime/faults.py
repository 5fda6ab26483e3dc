"""Turning the accelerator's FAULT registers back into the simulators' errors.

A fault stops the hardware with STATUS.fault set and FAULT_CAUSE (class and buffer),
FAULT_INSN (the instruction's index), FAULT_ADDR and FAULT_ITER naming it (``vdla_hw/regmap.py``).
:func:`raise_device_fault` raises the exception fsim and the cycle model raise for the same
program -- same class, same message -- so a driver (the rtl backend, a board) reports a
fault the hardware found exactly as the simulators would.
"""

from __future__ import annotations

from typing import Callable, NoReturn

from vdla_hw import regmap
from vdla_hw.config import HwConfig
from vdla_hw.errors import DeviceFaultError
from vdla_hw.isa import AluInsn, GemmInsn, Insn, MemInsn, MemType, Opcode

from vdla.runtime.program import Program
from vdla.simulator.checks import check_insn
from vdla.simulator.access import loop_index_error, sram_range_error
from vdla.simulator.window import Window, dram_window_error, fetch_window_error


def read_fault(read: Callable[[str], int]) -> tuple[int, int, int, int, int] | None:
    """(class, buffer, instruction, address, iteration) from the FAULT registers read with
    ``read(name)``, or None when STATUS has no fault."""
    if not read("STATUS") & regmap.STATUS_FAULT:
        return None
    cause = read("FAULT_CAUSE")
    return (cause & regmap.FAULT_CLASS_MASK, (cause >> regmap.FAULT_BUF_SHIFT) & 0xF, read("FAULT_INSN"),
            read("FAULT_ADDR"), read("FAULT_ITER"))


def _elem_bytes(cfg: HwConfig, mt: MemType) -> int:
    return {MemType.UOP: cfg.uop_elem_bytes, MemType.INP: cfg.inp_elem_bytes, MemType.WGT: cfg.wgt_elem_bytes,
            MemType.ACC: cfg.acc_elem_bytes, MemType.OUT: cfg.out_elem_bytes}[mt]


def _depth(cfg: HwConfig, buffer: str) -> int:
    return {"UOP": cfg.uop_buff_depth, "INP": cfg.inp_buff_depth, "WGT": cfg.wgt_buff_depth,
            "ACC": cfg.acc_buff_depth}[buffer]


def raise_device_fault(program: Program, window: Window, fault: tuple[int, int, int, int, int]) -> NoReturn:
    """Raise the simulators' error for the hardware ``fault`` (:func:`read_fault`) of ``program``
    run with the DRAM ``window``; a DeviceFaultError when the registers name nothing sensible
    (then the hardware and the simulators disagree: a design bug)."""
    cfg = program.config
    klass, buf, index, addr, it = fault
    insns = program.instructions
    buffer = regmap.BUFFER_NAMES[buf] if buf < len(regmap.BUFFER_NAMES) else f"buffer {buf}"
    if klass == regmap.FAULT_FETCH_WINDOW:
        raise fetch_window_error(program.insn_addr, program.insn_count, window)
    insn: Insn | None = insns[index] if 0 <= index < len(insns) else None
    if klass == regmap.FAULT_DRAM_WINDOW and isinstance(insn, MemInsn):
        raise dram_window_error(insn, index, _elem_bytes(cfg, insn.mem_type), window)
    if klass == regmap.FAULT_SRAM_RANGE and isinstance(insn, MemInsn):
        if insn.opcode == Opcode.STORE:
            n = insn.y_size * insn.x_size
            last_bias = insn.bias_row + (insn.y_size - 1) * insn.bias_step
            if insn.bias and insn.sram_base + n - 1 < cfg.acc_buff_depth and last_bias >= cfg.acc_buff_depth:
                raise sram_range_error(insn, index, "ACC (the STORE's bias)", insn.bias_row, last_bias,
                                       cfg.acc_buff_depth)
            raise sram_range_error(insn, index, "ACC (stored as OUT)", insn.sram_base, insn.sram_base + n - 1,
                                   cfg.acc_buff_depth)
        n = (insn.y_pad0 + insn.y_size + insn.y_pad1) * (insn.x_pad0 + insn.x_size + insn.x_pad1)
        name = insn.mem_type.name
        raise sram_range_error(insn, index, name, insn.sram_base, insn.sram_base + n - 1, _depth(cfg, name))
    if klass == regmap.FAULT_LOOP_INDEX and isinstance(insn, (GemmInsn, AluInsn)):
        if buffer == "UOP":
            check_insn(cfg, insn, index)  # raises the static check's ProtocolError for the range
        else:
            total = insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_bgn)
            raise loop_index_error(insn, index, buffer, it, total, addr, _depth(cfg, buffer))
    raise DeviceFaultError(
        f"the accelerator stopped on fault class {klass} ({buffer}) at instruction {index}, address/element {addr}, "
        f"iteration {it}, which does not match that instruction ({insn!r})",
        hint="this is a hardware/simulator mismatch: report it with the program (vdla asm/disasm)",
    )
