"""The DMA engines: one 2D block of DRAM rows as AXI bursts, timed as the RTL's
``vdla_dma_rd`` / ``vdla_dma_wr`` and the row issuers in front of them.

A block is ``rows`` rows of ``row_bytes`` bytes, row r at byte ``addr + r * stride``.
The row issuer hands the engine one command per row; the engine accepts a command
``dma_start_cycles - 2`` cycles after the executor starts (then as soon as it has
requested every burst of the previous row), requests one burst per cycle from the
next cycle on, and is free again the cycle after its row's last request.  A read
request passes the read arbiter's register (one more cycle) before it is on the
bus, a write request does not.  Two limits hold requests back: at most
``dma_max_bursts`` read bursts in flight (requested, last beat not yet returned),
or write bursts awaiting their response; and, for elements narrower than the bus,
at most ``dma_narrow_rows`` row commands between the engine's command and the row's
first beat (reads) or first element (writes).

Read data comes from the shared read channel (:meth:`vdla.simulator.cycle.dram.Dram.read_burst`);
the engine reports when each row's first and last beats arrive.  Writes are paced
by the elements the store module feeds the engine (see :func:`write_rows`); a burst's
response comes ``dram_latency`` cycles after its last beat.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from vdla.simulator.cycle.dram import (DRAIN, END, HOLD, ONE_BEAT, REQUEST, START, Burst, Dram, Owner, burst_beats,
                                      release)
from vdla_hw.config import HwConfig


@dataclass(frozen=True)
class StreamPlan:
    """Where each row's data lies in a block whose bursts stream back to back."""

    hold: int
    """Read-channel cycles of the whole block."""
    row_first: tuple[int, ...]
    """Offset of each row's first cycle from the block's first."""
    row_end: tuple[int, ...]
    """Offset of the cycle after each row's data from the block's first cycle."""
    last_request: tuple[int, int]
    """(a, b): the last burst is requested in cycle max(first request + a, first data cycle + b)."""
    min_row_hold: int
    """The fewest read-channel cycles of a row."""


@dataclass(frozen=True)
class RowGeometry:
    """How a block's rows split into bursts, and how long each burst holds the read channel."""

    bursts: tuple[tuple[int, ...], ...]
    """Beats of each burst, per row."""
    lanes: tuple[int, ...]
    """Element lane of each row's first element in its first beat (0 for elements >= the bus)."""
    holds: tuple[tuple[int, ...], ...]
    """Read-channel cycles of each burst, per row: its beats, or for elements narrower than the
    bus its elements -- the engine takes a beat only when the previous one's elements are all
    out, one per cycle, and read data returns in request order, so meanwhile nobody's data moves."""
    drains: tuple[tuple[int, ...], ...]
    """Each burst's ``DRAIN`` (:func:`vdla.simulator.cycle.dram.release`), per row: for narrow
    elements the elements of its last beat but one (:data:`ONE_BEAT` for a burst of one beat), else 0."""
    beats: int
    """Bus beats of the whole block."""
    narrow: bool
    """Its elements are narrower than the bus."""
    plan: StreamPlan | None
    """How a read of the block streams once its first burst is served, if it never waits for a
    request then (see :func:`_stream_plan`); None otherwise."""


def geometry(cfg: HwConfig, addr: int, row_bytes: int, rows: int, stride: int, elem_bytes: int,
             cols: int = 1, col_stride: int = 0) -> RowGeometry:
    """Bursts, first lanes, channel holding times and read plan of the rows of a block.

    With ``cols`` > 1 the block is a gathering LOAD's: ``rows x cols`` commands of ``row_bytes``
    (one element) each, command ``(r, c)`` at byte ``addr + r * stride + c * col_stride``, in
    row-major order, as the tile loader issues them."""
    t = cfg.timing
    burst = t.dram_burst_bytes
    # Only the offsets within a burst-aligned block matter, so programs reuse few shapes.
    return _geometry(cfg.bus_bytes, burst, t.read_latency, t.dma_max_bursts, t.dma_narrow_rows,
                     addr % burst, row_bytes, rows, stride % burst, elem_bytes, t.dram_beat_cycles, t.dram_burst_cycles,
                     cols, col_stride % burst)


@lru_cache(maxsize=4096)
def _geometry(bus: int, burst: int, latency: int, max_bursts: int, max_rows: int,
              addr: int, row_bytes: int, rows: int, stride: int, elem_bytes: int,
              beat_cycles: int = 1, burst_cycles: int = 0, cols: int = 1, col_stride: int = 0) -> RowGeometry:
    narrow = elem_bytes < bus
    per_beat = bus // elem_bytes if narrow else 1

    def row(a: int) -> tuple[tuple[int, ...], int, tuple[int, ...], tuple[int, ...]]:
        beats = tuple(burst_beats(a, row_bytes, bus, burst))
        if not narrow:
            if beat_cycles == 1 and burst_cycles == 0:
                return beats, 0, beats, (0,) * len(beats)
            # A slower DRAM: its beats, not the bus, set the pace, plus its per-burst cost.
            return beats, 0, tuple(b * beat_cycles + burst_cycles for b in beats), (0,) * len(beats)
        lane = (a % bus) // elem_bytes
        left, first, holds, drains = row_bytes // elem_bytes, lane, [], []
        for b in beats:
            elems = min(left, b * per_beat - first)
            holds.append(max(elems, b * beat_cycles) + burst_cycles)
            # The last beat's elements come out of the beat register after it left the channel
            # (a memory slower than the bus paces the beats instead: no drain is modelled there).
            if beat_cycles != 1 or burst_cycles != 0:
                drains.append(0)
            else:
                drains.append(ONE_BEAT if b == 1 else elems - (b - 1) * per_beat + first - 1)
            left -= elems
            first = 0
        return beats, lane, tuple(holds), tuple(drains)

    if cols > 1:  # a gathering LOAD: one command per element
        shapes = [row(addr + r * stride + c * col_stride) for r in range(rows) for c in range(cols)]
    else:
        shapes = [row(addr)] * rows if stride == 0 else [row(addr + r * stride) for r in range(rows)]
    holds = tuple(s[2] for s in shapes)
    drains = tuple(s[3] for s in shapes)
    return RowGeometry(
        tuple(s[0] for s in shapes), tuple(s[1] for s in shapes), holds, drains, sum(sum(s[0]) for s in shapes),
        narrow, _stream_plan(holds, drains, narrow, latency, max_bursts, max_rows),
    )


def _stream_plan(
    row_holds: tuple[tuple[int, ...], ...], row_drains: tuple[tuple[int, ...], ...], narrow: bool, latency: int,
    max_bursts: int, max_rows: int
) -> StreamPlan | None:
    """The plan of a block whose data, once its first burst is served, never waits for a request.

    That holds when every burst holds the channel at least as long as the engine takes to
    request the next one (one cycle, two at a row's start), when ``dma_max_bursts - 1``
    consecutive bursts hold it longer than ``dram_latency`` (so the in-flight limit never
    starves it), and, for narrow elements, likewise for ``dma_narrow_rows`` rows.  None otherwise.
    """
    holds = [h for row in row_holds for h in row]
    prefix = [0]
    for h in holds:
        prefix.append(prefix[-1] + h)
    # Offset of the cycle each burst's last beat has left the channel (``release``).
    freed = [prefix[k] + 1 if d == ONE_BEAT else prefix[k + 1] - d
             for k, d in enumerate(d for row in row_drains for d in row)]
    row_first, row_end, k = [], [], 0
    for row in row_holds:
        row_first.append(prefix[k])
        if k and holds[k - 1] < 2:
            return None
        if any(h < 1 for h in row[:-1]):
            return None
        k += len(row)
        row_end.append(prefix[k])
    if any(prefix[k] - freed[k - max_bursts] < latency + 1 for k in range(max_bursts, len(holds))):
        return None
    if narrow and any(row_first[r] - row_first[r - max_rows] < latency + 3 for r in range(max_rows, len(row_first))):
        return None
    # The requests as the engine paces them (a, from the first request) or as the in-flight
    # limits push them (b, from the first data cycle), as in ``_engine``.
    a, b, k = -2, -(1 << 60), 0
    for r, row in enumerate(row_holds):
        a, b = a + 2, b + 2
        if narrow and r >= max_rows:
            b = max(b, row_first[r - max_rows] + 3)
        for j in range(len(row)):
            if j:
                a, b = a + 1, b + 1
            if k >= max_bursts:
                b = max(b, freed[k - max_bursts] + 1)
            k += 1
    min_row = min(end - first for first, end in zip(row_first, row_end))
    return StreamPlan(prefix[-1], tuple(row_first), tuple(row_end), (a, b), min_row)


class ReadRows(Owner):
    """The booked data of a block, per row.

    Booked as one streaming segment (``base`` + the plan's offsets) or as bursts (``heads`` /
    ``tails``, each row's first and last); a segment becomes bursts when another engine's
    request lands inside it.  Cycles move when another engine's earlier request is served
    in front of them (then ``dirty`` is set, see :mod:`vdla.simulator.cycle.dram`).
    """

    __slots__ = ("heads", "tails", "timing", "base", "plan", "cfg", "start", "geo", "writer", "stalls_booked",
                 "head_holds", "pending")

    def __init__(self, cfg: HwConfig, start: int, geo: RowGeometry, client: int | None = None) -> None:
        # Owner's fields set here, not through super().__init__: one of these is built per LOAD.
        self.dirty = self.paced = False
        self.client = client
        self.cfg, self.start, self.geo = cfg, start, geo
        self.heads: list[Burst] = []
        self.tails: list[Burst] = []
        self.timing: Callable[[], tuple[int, int]] | None = None
        """The executor's (cycles, DRAM wait) as the rows' current cycles give them (set by its user)."""
        self.base = 0
        self.plan: StreamPlan | None = None
        self.writer: Writer | None = None
        """The tile writer that paces a block of elements at least as wide as the bus, if it ever lags."""
        self.stalls_booked = False
        """The bursts' holding times include the writer's stalls (booked behind everything else)."""
        self.head_holds: dict[int, tuple[int, int]] = {}
        """(row, holding time without the writer's stall) of each row's first burst, by ``id``,
        when the stalls are booked."""
        self.pending: tuple[int, int] | None = None
        """(row, holding time without the stall) of the row's first burst being booked now."""

    def adopt(self, burst: Burst) -> None:
        if self.pending is not None:
            self.head_holds[id(burst)] = self.pending
            self.pending = None

    def hold_from(self, burst: Burst, start: int) -> int:
        """A row's first burst holds the channel until the writer takes its first element, so
        its holding time shrinks (or grows) when its data moves to ``start``."""
        row = self.head_holds.get(id(burst))
        if row is None:
            return burst[HOLD]
        r, hold = row
        writer = self.writer
        assert writer is not None  # head_holds is filled only for a paced block
        ready = writer.ready if r == 0 else self.tails[r - 1][END] + writer.trail + writer.gap
        return hold + ready - (start + writer.lead) if ready > start + writer.lead else hold

    def expand(self, tail: int) -> list[Burst]:
        """The segment's bursts, exactly as :func:`_bursts` would have booked them with data
        from ``tail`` on; the rows are read from them from now on."""
        self.plan = None
        return _bursts(self.cfg, self.start, self.geo, self, tail, self.cfg.timing.read_latency, [])

    def spans(self) -> tuple[int, Sequence[int], Sequence[int]]:
        """(base, firsts, ends): row r's data holds the channel from ``base + firsts[r]`` to
        ``base + ends[r] - 1``."""
        if self.plan is not None:
            return self.base, self.plan.row_first, self.plan.row_end
        return 0, [b[START] for b in self.heads], [b[END] for b in self.tails]

    def first(self, row: int) -> int:
        """Cycle of the row's first beat."""
        if self.plan is not None:
            return self.base + self.plan.row_first[row]
        return self.heads[row][START]

    def last(self, row: int) -> int:
        """Last cycle the row holds the read channel: its last beat, or for narrow elements the
        cycle its last element comes out of the engine's beat register."""
        if self.plan is not None:
            return self.base + self.plan.row_end[row] - 1
        return self.tails[row][END] - 1


@dataclass(frozen=True)
class Writer:
    """The tile writer behind a padded read, which can hold the read channel.

    The writer walks the padded block one element per ``w`` cycles and takes a data element
    only when it gets there.  The engine holds the data meanwhile: an element at least as wide
    as the bus keeps its last beat on the read channel; for narrower elements the beat
    register stays full, so the row's next beat is not taken.  After padding the channel
    therefore waits for the writer, and so does every burst queued behind.
    """

    ready: int
    """The cycle the writer can take the block's first data element."""
    gap: int
    """Cycles from a row's last data element to the writer being ready for the next row's first."""
    lead: int
    """Cycles from a row's first beat on the channel to its first element being ready for the
    writer: ``beats - 1`` for elements at least as wide as the bus (the element is complete
    with its last beat), 1 for narrower ones (the beat register is loaded first)."""
    trail: int
    """Cycle of a row's last element relative to the end of the row's hold on the channel: -1
    for wide elements (written with the last beat), 0 for narrow ones (its hold ends as the
    beat register's last element comes out)."""


def read_rows(cfg: HwConfig, dram: Dram, start: int, geo: RowGeometry, writer: Writer | None = None,
              client: int | None = None) -> ReadRows:
    """Request the rows of ``geo`` from an engine (the read arbiter's port ``client``) whose
    executor started in cycle ``start``.

    A block requested after every burst booked so far -- nearly every one -- is appended
    without a call per burst, and as one segment when its geometry has a plan (and no
    ``writer`` stalls it: then its bursts are booked one by one, holding the channel while the
    writer lags).
    """
    out = ReadRows(cfg, start, geo, client)
    out.writer = writer
    queue, requests = dram.queue, dram.requests
    if len(queue) > _KEEP:
        dram.drop_done()
    first_request = start + cfg.timing.dma_start_cycles
    if requests and requests[-1] >= first_request:
        # Requested before bursts already booked (or in the same cycle: the arbiter's round-robin
        # decides): each burst is placed among them; a writer's stalls are booked as each row's
        # first burst lands (``hold_from``).
        out.stalls_booked = out.paced = writer is not None
        _engine(cfg, start, geo, out, lambda request, hold, after, window, drain: dram.read_burst(
            request, hold, out, after, window, drain))
        return out
    tail = dram.tail_end()
    plan = geo.plan
    window = cfg.timing.dma_max_bursts
    if plan is not None and len(queue) > 0:
        # The j-th burst is requested no earlier than first_request + j; the burst ``window``
        # places before it in the queue must have ended by then (the arbiter's route FIFO).
        deadline = first_request + window - min(window, len(queue))
        for b in queue[-window:]:
            drain = b[DRAIN]  # release(b), inlined: this runs for every LOAD
            if (b[START] + 1 if drain == ONE_BEAT else b[END] - drain) >= deadline:
                plan = None
                break
            deadline += 1
    if plan is None or writer is not None:
        out.stalls_booked = out.paced = writer is not None
        bursts = _bursts(cfg, start, geo, out, tail, dram.latency, queue)
        queue.extend(bursts)
        requests.extend(b[REQUEST] for b in bursts)
        return out
    first = first_request + dram.latency
    if tail > first:
        first = tail
    a, b = plan.last_request
    key = first_request + a if first_request + a > first + b else first + b  # the segment's last request
    drain = geo.drains[-1][-1]  # the segment's channel frees with its last burst's last beat
    if drain == ONE_BEAT:
        drain = geo.holds[-1][-1] - 1
    queue.append([key, first, first + plan.hold, plan.hold, out, None, 0, None, drain, out.expand])
    requests.append(key)
    out.base, out.plan = first, plan
    return out


_KEEP = 64
"""Booked bursts kept before forgetting those whose data is over (they only cost searching)."""


def _bursts(cfg: HwConfig, start: int, geo: RowGeometry, out: ReadRows, tail: int, latency: int,
            dram_tail: list[Burst]) -> list[Burst]:
    """The bursts of a block booked behind everything else (data from ``tail`` on), in order:
    :func:`_engine`'s pacing with the booking inlined (this runs for every such block)."""
    t = cfg.timing
    max_bursts, max_rows, narrow = t.dma_max_bursts, t.dma_narrow_rows, geo.narrow
    heads, tails = out.heads, out.tails
    command = start + t.dma_start_cycles - 2
    bursts: list[Burst] = []
    after = window = None
    writer = out.writer if out.stalls_booked else None
    ready = writer.ready if writer is not None else 0
    routed = dram_tail[-max_bursts:]  # the read arbiter's route FIFO spans every engine's bursts
    for r, holds in enumerate(geo.holds):
        if narrow and r >= max_rows and heads[r - max_rows][START] + 1 > command:
            command = heads[r - max_rows][START] + 1
        grant = command
        drains = geo.drains[r]
        for j, hold in enumerate(holds):
            grant += 1
            n = len(bursts)
            if n >= max_bursts:
                window = bursts[n - max_bursts]
            # The engine's own pacing from its previous request (what ``earliest_request`` keeps
            # when the burst is re-placed): not the wait for the route FIFO, which re-placing redoes.
            gap = grant + 1 - after[REQUEST] if after else 0
            if len(routed) >= max_bursts:
                freed = release(routed[-max_bursts])
                if freed > grant:
                    grant = freed
            request = grant + 1
            first = request + latency if request + latency > tail else tail
            base_hold = hold
            if writer is not None and len(heads) == r and ready > first + writer.lead:
                hold += ready - (first + writer.lead)  # the row's first element waits for the writer
            # The next burst is this engine's: it waits for these elements to be out (END).
            tail = first + hold
            after = [request, first, tail, hold, out, after, gap, window, drains[j]]
            bursts.append(after)
            routed.append(after)
            if len(heads) == r:
                heads.append(after)
                if writer is not None:
                    out.head_holds[id(after)] = (r, base_hold)
        tails.append(after)
        command = grant + 1
        if writer is not None:
            ready = tail + writer.trail + writer.gap
    return bursts


def _engine(
    cfg: HwConfig, start: int, geo: RowGeometry, out: ReadRows,
    book: Callable[[int, int, Burst | None, Burst | None, int], Burst],
) -> None:
    """The engine's requests: ``book(request, hold, previous burst, window burst, drain)`` each burst.

    A row's command is taken ``dma_start_cycles - 2`` after the start, then the cycle after
    the previous row's last request (and, for narrow elements, the cycle after row
    ``r - dma_narrow_rows``'s first beat); bursts are granted one per cycle from the next,
    and a grant also waits for the data of the burst ``dma_max_bursts`` earlier to end.
    """
    t = cfg.timing
    max_bursts, max_rows, narrow = t.dma_max_bursts, t.dma_narrow_rows, geo.narrow
    heads, tails = out.heads, out.tails
    command = start + t.dma_start_cycles - 2
    grant = command  # the arbiter's grant of the engine's last request (on the bus a cycle later)
    bursts: list[Burst] = []
    after = window = None
    for r, holds in enumerate(geo.holds):
        if narrow and r >= max_rows and heads[r - max_rows][START] + 1 > command:
            command = heads[r - max_rows][START] + 1
        grant = command
        drains = geo.drains[r]
        for j, hold in enumerate(holds):
            grant += 1
            n = len(bursts)
            if n >= max_bursts:
                window = bursts[n - max_bursts]
                freed = release(window)
                if freed > grant:
                    grant = freed
            if out.paced and len(heads) == r:
                out.pending = (r, hold)
            after = book(grant + 1, hold, after, window, drains[j])
            grant = after[REQUEST] - 1  # later when the route FIFO was full
            bursts.append(after)
            if len(heads) == r:
                heads.append(after)
        tails.append(after)
        command = grant + 1


def write_rows(cfg: HwConfig, start: int, first_element: int, geo: RowGeometry, row_elems: int, elem_bytes: int,
               row_reads: int = 0, share: Callable[[int, int], int] | None = None) -> int:
    """The cycle after the last write response of a block arrives (the engine is idle then).

    Elements reach the engine one per cycle from ``first_element`` on.  Elements at
    least as wide as the bus go out as consecutive beats.  Narrower ones are packed:
    the engine takes one element per cycle and sends a beat the cycle after its last
    element, taking no element meanwhile, so a beat of m elements costs m + 1 cycles.
    A burst's first beat also waits until the burst's length, queued when it was
    requested, is visible (``queue_latency``).  ``row_reads`` extra SRAM reads precede each
    row's elements (a STORE's bias), so row ``r``'s first element comes no earlier than
    ``first_element + r * row_elems + (r + 1) * row_reads``.

    A DRAM slower than the bus (``dram_beat_cycles`` > 1 or ``dram_burst_cycles`` > 0) is one
    memory for reads and writes: ``share(cycle, hold)`` books each write burst's time in it
    (on the read channel's queue), so the reads behind it wait.
    """
    t = cfg.timing
    latency, max_bursts, max_rows, ql = t.dram_latency, t.dma_max_bursts, t.dma_narrow_rows, t.queue_latency
    narrow = elem_bytes < cfg.bus_bytes
    per_beat = cfg.bus_bytes // elem_bytes if narrow else 1
    command = start + t.dma_start_cycles - 2
    responses: list[int] = []
    row_first_element: list[int] = []
    ready = first_element  # narrow: the next element's cycle; wide: the last beat's (or first_element)
    beat_cycles, burst_cycles = t.dram_beat_cycles, t.dram_burst_cycles
    slow = beat_cycles > 1 or burst_cycles > 0
    dram_free = 0
    for r, bursts in enumerate(geo.bursts):
        if narrow and r >= max_rows and row_first_element[r - max_rows] + 1 > command:
            command = row_first_element[r - max_rows] + 1
        if row_reads:
            ready = max(ready, first_element + r * row_elems + (r + 1) * row_reads)
        row_first_element.append(ready)
        request = command
        lane, left = geo.lanes[r], row_elems
        for beats in bursts:
            request += 1
            n = len(responses)
            if n >= max_bursts and responses[n - max_bursts] + 1 > request:
                request = responses[n - max_bursts] + 1
            length_known = request + ql
            if narrow:
                elems = min(left, beats * per_beat - lane)
                in_first = min(elems, per_beat - lane)
                first_out = max(ready + in_first, length_known)
                last_out = first_out + (elems - in_first) + (beats - 1)
                ready = last_out + 1
                left -= elems
                lane = 0
            else:
                first_out = max(ready + 1, length_known)
                last_out = ready = first_out + beats - 1
            if slow:
                # A DRAM slower than the bus takes the beats at its own pace, one burst after the
                # other, and holds the engine back meanwhile.
                begin = max(first_out, dram_free)
                last_out = max(last_out, begin + beats * beat_cycles - 1) + burst_cycles
                if share is not None:
                    # One memory for both directions: the burst waits for its turn behind the
                    # reads booked before it, and the engine with it.
                    booked = share(begin, last_out + 1 - begin)
                    last_out += booked - begin
                dram_free = last_out + 1
                ready = last_out + 1 if narrow else last_out
            responses.append(last_out + latency)
        command = request + 1
    return responses[-1] + 1 if responses else start + 1
