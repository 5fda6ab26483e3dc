"""Work counters of a simulated run, summed from per-instruction :class:`InsnEffect` records."""

from __future__ import annotations

from vdla_hw.isa import MemType, Opcode

from vdla.simulator.state import InsnEffect

# Counter names built once: formatting them per instruction is a measurable share of a run.
_INSN_KEYS = {op: f"insn.{op.name}" for op in Opcode}
_READ_KEYS = {m: f"dram_read_bytes.{m.name}" for m in MemType}
# Enum members as constants (a member lookup on its class is slow in Python 3.11; see semantics).
_LOAD, _STORE, _GEMM, _ALU = Opcode.LOAD, Opcode.STORE, Opcode.GEMM, Opcode.ALU


def _zeros() -> dict[str, int]:
    """Every counter at zero, in the order :meth:`Counters.as_dict` reports them."""
    base = {"instructions": 0, "macs": 0, "uop_iters.gemm": 0, "uop_iters.alu": 0, "uop_iters.alu_copy": 0}
    base.update({f"insn.{op.name}": 0 for op in Opcode})
    base.update({f"dram_read_bytes.{m.name}": 0 for m in MemType if m != MemType.OUT})
    base.update({"dram_write_bytes.OUT": 0, "sram_elems_written": 0, "pad_elems": 0})
    return base


class Counters:
    """Instructions by opcode, MACs, micro-op iterations and DRAM bytes per memory type.

    Keys of :meth:`as_dict` are flat strings (``insn.GEMM``, ``dram_read_bytes.INP``, ...)
    so every backend reports the same names and JSON output stays simple.
    """

    def __init__(self) -> None:
        # A plain dict with every key present: cheaper per instruction than a Counter.
        self._c: dict[str, int] = _zeros()

    def add(self, effect: InsnEffect) -> None:
        c = self._c
        op = effect.opcode
        c["instructions"] += 1
        c[_INSN_KEYS[op]] += 1
        if op == _LOAD:
            key = _READ_KEYS[effect.mem_type]  # type: ignore[index]
            c[key] = c.get(key, 0) + effect.rows * effect.row_bytes
            c["sram_elems_written"] += effect.sram_elems
            c["pad_elems"] += effect.pad_elems
        elif op == _STORE:
            c["dram_write_bytes.OUT"] += effect.rows * effect.row_bytes
        elif op == _GEMM:
            c["uop_iters.gemm"] += effect.uop_iters
            c["macs"] += effect.macs
        elif op == _ALU:
            c["uop_iters.alu"] += effect.uop_iters
            if effect.alu_copy:  # the MOV share of the ALU iterations, which issue every cycle
                c["uop_iters.alu_copy"] += effect.uop_iters

    def as_dict(self) -> dict[str, int]:
        """All counters, with every opcode and memory-type key present (zero if unused)."""
        base = dict(self._c)
        base["dram_bytes"] = sum(v for k, v in base.items() if k.startswith("dram_") and k != "dram_bytes")
        return base
