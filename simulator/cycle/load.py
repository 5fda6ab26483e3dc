"""The load unit: input and weight tiles DRAM -> SRAM, with zero padding.

Timing of one LOAD (also used by compute for micro-op and accumulator loads), as
in the RTL's tile loader: after ``insn_overhead`` cycles the DRAM rows are
requested (all at once, see :mod:`simulator.cycle.dram`) while the SRAM writer
walks the padded block in order, one element per ``sram_write_cycles``.  Padding
elements never wait, data elements wait for their beats.  So a LOAD ends at the
latest of:

* every element written at the SRAM rate: ``t0 + padded_elements * w``;
* the data at the SRAM rate after the DRAM latency: ``t0 + dram_latency + data_elements * w``
  (this bound dominates for elements narrower than the bus);
* the last data beat (bandwidth and arbitration),

the last two followed by the padding after the last data element (bottom rows and the last
row's right pad), ``t0 = start + insn_overhead``, ``w = sram_write_cycles``.
"""

from __future__ import annotations

from simulator.cycle.unit import Unit
from vdla_hw.isa import Insn, MemInsn, Module


def trailing_padding(insn: MemInsn) -> int:
    """Padding elements a LOAD writes after its last data element."""
    if not (insn.y_size and insn.x_size):
        return 0
    cols = insn.x_pad0 + insn.x_size + insn.x_pad1
    return insn.y_pad1 * cols + insn.x_pad1


def load_cycles(unit: Unit, insn: MemInsn) -> int:
    """Start a LOAD on ``unit`` (booking its DRAM rows) and return its duration."""
    timing = unit.ctx.cfg.timing
    w = timing.sram_write_cycles
    now = unit.env.now
    t0 = now + timing.insn_overhead
    data = insn.y_size * insn.x_size
    padded = (insn.y_pad0 + insn.y_size + insn.y_pad1) * (insn.x_pad0 + insn.x_size + insn.x_pad1)
    end = t0 + padded * w
    if data:
        streamed = max(unit.book_rows(insn, t0, write=False), t0 + timing.dram_latency + data * w)
        end = max(end, streamed + trailing_padding(insn) * w)
    return end - now


class LoadUnit(Unit):
    """Runs LOAD INP / LOAD WGT; talks to compute through l2c (push) and c2l (pop)."""

    name = "load"
    module = Module.LOAD

    def execute(self, index: int, insn: Insn) -> int:
        assert isinstance(insn, MemInsn)  # fetch dispatches only LOAD INP/WGT here (module_of)
        return load_cycles(self, insn)
