"""The store unit: accumulator tiles SRAM -> DRAM, narrowed to the output width.

Timing of one STORE, as the RTL's store module: from the executor's start in cycle
``s`` it reads the output buffer (the narrowed copy of the accumulators) one element
per cycle into a small element queue -- the counters load in cycle ``s + 1``, the
SRAM answers a cycle later, the requantization takes ``store_pipeline_depth`` more
cycles, and the queue adds ``queue_latency`` -- so the write engine sees element k in
cycle ``s + 2 + store_pipeline_depth + queue_latency + k`` at the earliest.  The
row issuer hands the engine one command per row, and the engine packs the elements
into bursts (:func:`vdla.simulator.cycle.dma.write_rows`).  A STORE with a bias reads
each row's bias element before the row's elements: one more read cycle per row.  The STORE is done once the
last burst's write response has arrived, so the tokens it pushes mean "the data is
in DRAM".  An empty STORE is done the cycle after it starts.
"""

from __future__ import annotations

from vdla.simulator.cycle.dma import geometry, write_rows
from vdla.simulator.cycle.unit import Unit
from vdla_hw.isa import Insn, MemInsn, Module


class StoreUnit(Unit):
    """Runs STORE OUT; talks to compute through c2s (pop) and s2c (push)."""

    name = "store"
    module = Module.STORE

    def execute(self, index: int, insn: Insn, start: int) -> tuple[int, int, None]:
        assert isinstance(insn, MemInsn)  # fetch dispatches only STOREs here (module_of)
        cfg = self.ctx.cfg
        x, y = insn.x_size, insn.y_size
        if not (x and y):
            return 1, 0, None
        eb = cfg.out_elem_bytes
        geo = geometry(cfg, insn.dram_base * eb, x * eb, y, insn.x_stride * eb, eb)
        first_element = start + 2 + cfg.timing.store_pipeline_depth + cfg.timing.queue_latency
        t = cfg.timing
        share = None
        if t.dram_beat_cycles > 1 or t.dram_burst_cycles > 0:
            share = self.ctx.dram.write_burst  # one memory for both directions
        done = write_rows(cfg, start, first_element, geo, x, eb, row_reads=int(insn.bias), share=share)
        self.ctx.dram.count(self.name, x * y * eb, geo.beats, write=True)
        cycles = done - start
        return cycles, min(cycles, cfg.timing.dram_latency), None
