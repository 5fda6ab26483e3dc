"""The store unit: accumulator tiles SRAM -> DRAM, narrowed to the output width.

Timing of one STORE, as in the RTL: after ``insn_overhead`` cycles (``t0``) the rows'
write bursts are booked on the DRAM channel while the output buffer is read one
element per ``sram_write_cycles``; write data goes out as it is read, and the
instruction completes when the last burst is acknowledged, ``dram_latency``
after its last beat.  So a STORE ends at the later of the last acknowledged beat
(bandwidth and arbitration) and ``t0 + elements * sram_write_cycles + dram_latency``
(the bound for output elements narrower than the bus).  The tokens it pushes
mean "the data is in DRAM".
"""

from __future__ import annotations

from simulator.cycle.unit import Unit
from vdla_hw.isa import Insn, MemInsn, Module


class StoreUnit(Unit):
    """Runs STORE OUT; talks to compute through c2s (pop) and s2c (push)."""

    name = "store"
    module = Module.STORE

    def execute(self, index: int, insn: Insn) -> int:
        assert isinstance(insn, MemInsn)  # fetch dispatches only STOREs here (module_of)
        timing = self.ctx.cfg.timing
        now = self.env.now
        t0 = now + timing.insn_overhead
        data = insn.y_size * insn.x_size
        if not data:
            return t0 - now
        acked = self.book_rows(insn, t0, write=True)
        return max(acked, t0 + data * timing.sram_write_cycles + timing.dram_latency) - now
