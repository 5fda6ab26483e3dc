"""The load unit: input and weight tiles DRAM -> SRAM, with zero padding.

Timing of one LOAD (also used by compute for micro-op and accumulator loads), as
the RTL's tile loader: from the executor's start in cycle ``s`` the row issuer
hands the DMA engine one command per data row (:func:`vdla.simulator.cycle.dma.read_rows`)
while the writer walks the padded block in order, one SRAM element per
``sram_write_cycles`` from cycle ``s + 1``.  Padding elements never wait; a data
element waits for its data:

* an element at least as wide as the bus is written in the cycle of its last beat;
* narrower elements come out of a beat register one per cycle from the cycle after
  the beat (the engine holds the read channel meanwhile, see
  :class:`vdla.simulator.cycle.dma.RowGeometry`), and a row's first beat is taken only
  once the previous row's last element is out.

The executor is done the cycle after the last write.
"""

from __future__ import annotations

from functools import partial

from vdla.simulator.cycle.dma import ReadRows, Writer, geometry, read_rows
from vdla.simulator.cycle.dram import READ_CLIENTS
from vdla.simulator.cycle.unit import Unit
from vdla_hw.config import HwConfig
from vdla_hw.isa import Insn, MemInsn, MemType, Module

CLIENT_OF: dict[MemType, int] = {mt: READ_CLIENTS.index(mt.name.lower()) for mt in MemType
                                 if mt.name.lower() in READ_CLIENTS}
"""The read arbiter's port of each loaded memory type (an enum's ``name`` is a Python-level property)."""


def start_load(unit: Unit, insn: MemInsn, start: int) -> tuple[int, int, ReadRows | None]:
    """Start a LOAD on ``unit`` in cycle ``start``, booking its DRAM reads.

    Returns (executor cycles, of which waiting for DRAM, the booked rows or None).
    """
    ctx = unit.ctx
    cfg = ctx.cfg
    x, y = insn.x_size, insn.y_size
    if not (y and x):
        padded = (insn.y_pad0 + y + insn.y_pad1) * (insn.x_pad0 + x + insn.x_pad1)
        return padded * cfg.timing.sram_write_cycles + 1, 0, None
    eb = ctx.state.elem_bytes[insn.mem_type]
    # Only the offsets within a burst-aligned block matter (see geometry): few keys per program.
    burst = unit.burst_bytes
    step = insn.elem_stride
    key = (eb, insn.dram_base * eb % burst, x, y, insn.x_stride * eb % burst, step * eb % burst if step > 1 else -1)
    geo = unit.shapes.get(key)
    if geo is None:
        if step > 1:  # a gathering LOAD: y * x commands of one element (cannot pad along x)
            geo = geometry(cfg, key[1], eb, y, key[4], eb, x, key[5])
        else:
            geo = geometry(cfg, key[1], x * eb, y, key[4], eb)
        unit.shapes[key] = geo
    w = unit.write_cycles
    bus = unit.bus_bytes
    writer = None
    wide = eb >= bus
    if insn.y_pad0 or insn.x_pad0 or insn.x_pad1 or (w > eb // bus if wide else w > 1):
        cols = insn.x_pad0 + x + insn.x_pad1
        writer = Writer(start + (insn.y_pad0 * cols + insn.x_pad0 + 1) * w, (insn.x_pad1 + insn.x_pad0 + 1) * w,
                        eb // bus - 1 if wide else 1, -1 if wide else 0)
    rows = read_rows(cfg, ctx.dram, start, geo, writer, CLIENT_OF[insn.mem_type])
    ctx.dram.count(unit.name, y * x * eb, geo.beats, write=False)
    rows.timing = partial(load_timing, cfg, insn, start, rows, eb)
    return (*rows.timing(), rows)


def load_timing(cfg: HwConfig, insn: MemInsn, start: int, rows: ReadRows, elem_bytes: int) -> tuple[int, int]:
    """(executor cycles, of which waiting for DRAM) of a LOAD whose rows' data arrives as ``rows`` say."""
    w = cfg.timing.sram_write_cycles
    x, xp0, xp1 = insn.x_size, insn.x_pad0, insn.x_pad1
    cols = xp0 + x + xp1
    padded = (insn.y_pad0 + insn.y_size + insn.y_pad1) * cols
    if insn.elem_stride > 1:
        # A gathering LOAD (no x pads): each element is a DMA row of its own, written as it comes.
        x = 1
    plan = rows.plan
    if plan is not None and not (xp0 or xp1 or insn.y_pad0 or insn.y_pad1) and not rows.geo.narrow \
            and plan.min_row_hold >= x * w:
        # Streaming, unpadded, and no row's data arrives faster than the writer writes it: the
        # writer ends with the data or, if the data came early, at its own pace.
        t = max(start + padded * w, rows.base + plan.hold - 1)
        cycles = t + 1 - start
        return cycles, cycles - (padded * w + 1)
    t = start + insn.y_pad0 * cols * w  # the writer's last write so far
    base, firsts, ends = rows.spans()
    if elem_bytes < cfg.bus_bytes:
        taken = 0  # the cycle the previous row's last element came out of the beat register
        for first, end in zip(firsts, ends):
            t += xp0 * w
            ready = max(max(base + first, taken) + x, base + end)
            taken = t = max(t + x * w, ready)
            t += xp1 * w
    else:
        # The engine holds an element's last beat on the channel until the writer takes it (no
        # buffer beyond the element's other beats): once the writer lags behind the data (after
        # padding), the rest of the stream waits, an element per max(beats, w) cycles.
        # When the writer's stalls are not in the booked bursts (a block requested before others'),
        # they are added here: once the writer lags behind the data, the rest of the stream waits.
        ratio = elem_bytes // cfg.bus_bytes
        per = ratio if ratio > w else w
        booked = rows.stalls_booked
        lag = 0  # cycles the writer has held the stream back so far
        for first, end in zip(firsts, ends):
            t += xp0 * w
            ready = t + w
            arrive = base + first + lag + ratio - 1
            if ready > arrive:
                if not booked:
                    lag += ready - arrive
                arrive = ready
            t = arrive + (x - 1) * per
            if not booked:
                lag += (x - 1) * (per - ratio)
            if base + end - 1 + lag > t:
                t = base + end - 1 + lag
            t += xp1 * w
    t += insn.y_pad1 * cols * w
    cycles = t + 1 - start
    return cycles, cycles - (padded * w + 1)


class LoadUnit(Unit):
    """Runs LOAD INP / LOAD WGT; talks to compute through l2c (push) and c2l (pop)."""

    name = "load"
    module = Module.LOAD

    def execute(self, index: int, insn: Insn, start: int) -> tuple[int, int, ReadRows | None]:
        assert isinstance(insn, MemInsn)  # fetch dispatches only LOAD INP/WGT here (module_of)
        return start_load(self, insn, start)
