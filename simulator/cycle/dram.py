"""The DRAM: one AXI4 port with a read data channel shared by every reader and a write
channel used by store alone.

Read data: a burst requested in cycle t delivers its first beat ``read_latency``
cycles later at the earliest and then holds the shared read data channel for its
beats (or longer, see :class:`vdla.simulator.cycle.dma.RowGeometry`).  As in the RTL
(one AXI ID, the DRAM answers in request order), bursts are served in the order
of their request cycles: a burst's data starts at the later of its request +
latency and the end of the burst requested before it.

DMA engines book whole instructions when they start, so a long load books bursts
it will request far in the future.  A burst booked later but requested earlier
(another engine's, between them) is inserted in request order and delays the
bursts behind it; their owners (:class:`Owner`) are flagged and re-time their
instruction before completing it.  That is how the RTL's round-robin arbiter lets
another engine's request in between a long load's requests.  Appending a burst,
the common case, is O(1) and costs no event.

Writes go out on their own channel (AXI has separate read and write channels, and
the RTL's DRAM model serves them independently); store is the only writer, so its
DMA engine (:mod:`vdla.simulator.cycle.dma`) times them without arbitration and this
module only counts them -- unless the memory is slower than the bus (a board's SDRAM,
``dram_beat_cycles`` > 1 or ``dram_burst_cycles`` > 0): then one command path serves both
directions, and :meth:`Dram.write_burst` books each write burst in the read channel's queue,
where it waits for the bursts booked before it and delays those after.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from heapq import heapify, heappop, heappush

from vdla.simulator.cycle.kernel import Environment
from vdla_hw.config import HwConfig


def burst_beats(byte_addr: int, nbytes: int, bus_bytes: int, burst_bytes: int) -> list[int]:
    """Data beats of each burst needed to move ``nbytes`` starting at ``byte_addr``.

    Bursts never cross a ``burst_bytes`` boundary (a power of two, so never a 4 KiB
    boundary either); a beat is one aligned bus word, so an unaligned start or end
    costs a whole beat.
    """
    beats: list[int] = []
    addr, end = byte_addr, byte_addr + nbytes
    while addr < end:
        stop = min(end, (addr // burst_bytes + 1) * burst_bytes)
        beats.append((stop - 1) // bus_bytes - addr // bus_bytes + 1)
        addr = stop
    return beats


@dataclass
class PortCounters:
    """DRAM traffic of one requester."""

    bytes_read: int = 0
    bytes_written: int = 0
    beats: int = 0


class Owner:
    """What a booked burst belongs to: ``dirty`` is set when one of its bursts was delayed.

    ``paced`` owners hold the channel for a time that depends on when their data comes
    (a tile writer that lags behind it, see :class:`vdla.simulator.cycle.dma.Writer`):
    :meth:`hold_from` gives a burst's holding time when its data starts in a given cycle.
    """

    __slots__ = ("dirty", "paced")

    def __init__(self) -> None:
        self.dirty = False
        self.paced = False

    def hold_from(self, burst: "Burst", start: int) -> int:
        """Cycles ``burst`` holds the channel when its data starts in cycle ``start``."""
        return burst[HOLD]

    def adopt(self, burst: "Burst") -> None:
        """``burst`` was just booked for this (paced) owner, before its start is known."""


# A booked read burst is a list record (cheaper than an object: a program books one per burst):
# [REQUEST, START, END, HOLD, OWNER, AFTER, GAP, WINDOW].  ``AFTER`` is the engine's previous burst
# (this one is requested at least ``GAP`` cycles after it), ``WINDOW`` the engine's burst
# ``dma_max_bursts`` earlier (this one is requested only the cycle after that one's data is over);
# both keep holding when another engine's burst delays those.  A *segment* -- a whole block
# booked at once whose bursts stream back to back -- has a ninth field, SEGMENT, a function of
# the cycle its data may start that returns its bursts; its REQUEST is that of its last burst.
REQUEST, START, END, HOLD, OWNER, AFTER, GAP, WINDOW, SEGMENT = range(9)
Burst = list


def earliest_request(burst: Burst) -> int:
    """The burst's request cycle as its engine's constraints allow now."""
    request = burst[REQUEST]
    after, window = burst[AFTER], burst[WINDOW]
    if after is not None and after[REQUEST] + burst[GAP] > request:
        request = after[REQUEST] + burst[GAP]
    if window is not None and window[END] + 1 > request:
        request = window[END] + 1
    return request


class Dram:
    """Latency, bandwidth and request order of the read channel; traffic counters of both."""

    def __init__(self, env: Environment, cfg: HwConfig, requesters: Iterable[str]) -> None:
        self.env = env
        self.latency = cfg.timing.read_latency
        self.window = cfg.timing.dma_max_bursts
        self.ports = {name: PortCounters() for name in requesters}
        self.read_beats = 0
        self.write_beats = 0
        # Bursts not yet over, in request order (their data is then in order too).
        self.queue: list[Burst] = []
        self.requests: list[int] = []
        self._done_end = 0  # end of the last burst dropped from the queue

    def tail_end(self) -> int:
        """The first cycle after the data of every burst booked so far."""
        return self.queue[-1][END] if self.queue else self._done_end

    def read_burst(
        self, request: int, hold: int, owner: Owner | None, after: Burst | None = None, window: Burst | None = None
    ) -> Burst:
        """Book a burst requested in cycle ``request`` that holds the channel ``hold`` cycles.

        ``after`` and ``window`` are the engine's bursts that bound its request (see ``Burst``).
        """
        queue, requests = self.queue, self.requests
        if queue and queue[0][END] <= self.env.now:
            self.drop_done()
        gap = request - after[REQUEST] if after is not None else 0
        paced = owner is not None and owner.paced
        if not queue or requests[-1] <= request:
            start = max(request + self.latency, self.tail_end())
            burst = [request, start, start + hold, hold, owner, after, gap, window]
            if paced:
                owner.adopt(burst)
                burst[HOLD] = hold = owner.hold_from(burst, start)
                burst[END] = start + hold
            queue.append(burst)
            requests.append(request)
            return burst
        # Requested before bursts already booked: serve it first and re-place those behind it.
        burst = [request, 0, 0, hold, owner, after, gap, window]
        if paced:
            owner.adopt(burst)
        at = bisect_right(requests, request)
        behind = queue[at:]
        del queue[at:], requests[at:]
        if any(len(b) > SEGMENT for b in behind):
            behind = self._expand(behind, self.tail_end())
            # A segment's bursts requested no later than this one keep their place.
            keep = 0
            while keep < len(behind) and behind[keep][REQUEST] <= request:
                keep += 1
            queue.extend(behind[:keep])
            requests.extend(b[REQUEST] for b in behind[:keep])
            behind = behind[keep:]
        end = self.tail_end()
        if all(b[OWNER] is behind[0][OWNER] for b in behind):
            self._replace_in_order(burst, behind, end)
            return burst
        # Among equal requests the bursts booked before go first (as appending would order them).
        pending = [(request, len(behind), burst)] + [(b[REQUEST], k, b) for k, b in enumerate(behind)]
        heapify(pending)
        while pending:
            key, k, b = heappop(pending)
            request = earliest_request(b)
            if request > key:
                heappush(pending, (request, k, b))
                continue
            b[REQUEST] = request
            start = max(request + self.latency, end)
            if start != b[START] and b is not burst and b[OWNER] is not None:
                b[OWNER].dirty = True
            b[START] = start
            owner = b[OWNER]
            if owner is not None and owner.paced:
                b[HOLD] = owner.hold_from(b, start)
            b[END] = end = start + b[HOLD]
            queue.append(b)
            requests.append(request)
        return burst

    def write_burst(self, begin: int, hold: int) -> int:
        """Book a write burst that asks for a memory shared with the reads in cycle ``begin`` and
        holds it ``hold`` cycles; returns the cycle it gets the memory: ``begin``, or later when
        bursts requested before it hold the memory then (a board's SDRAM behind one command path,
        e.g. LiteDRAM's port converter, serves one burst at a time whatever its direction).

        The read channel's queue times a burst's *data*, ``read_latency`` after the memory took
        its request; a write is placed on that timeline as a read requested in ``begin`` would be,
        and its own cycles are those minus the latency."""
        return self.read_burst(begin, hold, None)[START] - self.latency

    def _replace_in_order(self, burst: Burst, behind: list[Burst], end: int) -> None:
        """Book ``burst`` from ``end`` on, then re-place ``behind`` -- one engine's bursts, whose
        order cannot change -- after it."""
        queue, requests, latency = self.queue, self.requests, self.latency
        start = burst[REQUEST] + latency
        burst[START] = start = start if start > end else end
        owner = burst[OWNER]
        if owner is not None and owner.paced:
            burst[HOLD] = owner.hold_from(burst, start)
        burst[END] = end = start + burst[HOLD]
        queue.append(burst)
        requests.append(burst[REQUEST])
        unchanged = 0
        for k, b in enumerate(behind):
            if unchanged >= self.window:
                # Nothing the rest depends on moved (their window bursts are among these).
                queue.extend(behind[k:])
                requests.extend(b[REQUEST] for b in behind[k:])
                return
            request = earliest_request(b)
            start = request + latency
            if end > start:
                start = end
            if start != b[START] or request != b[REQUEST]:
                unchanged = 0
                b[REQUEST], b[START] = request, start
                if b[OWNER] is not None:
                    b[OWNER].dirty = True
            else:
                unchanged += 1
            owner = b[OWNER]
            if owner is not None and owner.paced:
                b[HOLD] = owner.hold_from(b, start)
            b[END] = end = start + b[HOLD]
            queue.append(b)
            requests.append(request)

    @staticmethod
    def _expand(records: list[Burst], tail: int) -> list[Burst]:
        """Replace the segments among ``records`` (data from ``tail`` on) by their bursts."""
        out: list[Burst] = []
        for record in records:
            if len(record) > SEGMENT:
                out.extend(record[SEGMENT](tail))
            else:
                out.append(record)
            tail = record[END]
        return out

    def drop_done(self) -> None:
        """Forget the bursts whose data is over (nothing can be requested in the past)."""
        queue, now = self.queue, self.env.now
        k = 0
        while k < len(queue) and queue[k][END] <= now:
            k += 1
        if k:
            self._done_end = max(self._done_end, queue[k - 1][END])
            del queue[:k], self.requests[:k]

    def count(self, requester: str, nbytes: int, beats: int, write: bool) -> None:
        """Account one instruction's traffic to ``requester``."""
        port = self.ports[requester]
        port.beats += beats
        if write:
            port.bytes_written += nbytes
            self.write_beats += beats
        else:
            port.bytes_read += nbytes
            self.read_beats += beats

    @property
    def bytes_read(self) -> int:
        return sum(p.bytes_read for p in self.ports.values())

    @property
    def bytes_written(self) -> int:
        return sum(p.bytes_written for p in self.ports.values())
