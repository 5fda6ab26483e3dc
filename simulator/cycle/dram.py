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

Requests of two engines in the same cycle are served in the arbiter's round-robin
order (``vdla_axi_rd_arb``): the first client after the one granted last, in the
order of :data:`READ_CLIENTS`.  The client granted last is the one whose burst
precedes them in the queue.  The arbiter's route FIFO (``dma_max_bursts`` deep)
bounds the bursts in flight over *all* clients: a burst is granted only once the
burst ``dma_max_bursts`` places before it in the queue has delivered its last beat
(:meth:`Dram.route_limit`); and it grants one request a cycle, so the loser of a
same-cycle request is granted a cycle later.

Writes go out on their own channel (AXI has separate read and write channels, and
the RTL's DRAM model serves them independently); store is the only writer, so its
DMA engine (:mod:`vdla.simulator.cycle.dma`) times them without arbitration and this
module only counts them -- unless the memory is slower than the bus (a board's SDRAM,
``dram_beat_cycles`` > 1 or ``dram_burst_cycles`` > 0): then one command path serves both
directions, and :meth:`Dram.write_burst` books each write burst in the read channel's queue,
where it waits for the bursts booked before it and delays those after.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
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


READ_CLIENTS = ("fetch", "inp", "wgt", "uop", "acc")
"""The read arbiter's clients in its port order (``vdla_top``'s ``RD_FETCH`` .. ``RD_ACC``; a test
reads them from the RTL): the round-robin order of requests made in the same cycle."""
_CLIENTS = len(READ_CLIENTS)


def rr_rank(client: int | None, last: int) -> int:
    """Where ``client`` comes in the read arbiter's round-robin after ``last`` was granted
    (0 first); a burst of no client (a slow DRAM's write) after every client."""
    return _CLIENTS if client is None else (client - last - 1) % _CLIENTS


class Owner:
    """What a booked burst belongs to: ``dirty`` is set when one of its bursts was delayed.

    ``paced`` owners hold the channel for a time that depends on when their data comes
    (a tile writer that lags behind it, see :class:`vdla.simulator.cycle.dma.Writer`):
    :meth:`hold_from` gives a burst's holding time when its data starts in a given cycle.
    """

    __slots__ = ("dirty", "paced", "client")

    def __init__(self, client: int | None = None) -> None:
        self.dirty = False
        self.paced = False
        self.client = client
        """The read arbiter's port of the engine (an index into :data:`READ_CLIENTS`)."""

    def hold_from(self, burst: "Burst", start: int) -> int:
        """Cycles ``burst`` holds the channel when its data starts in cycle ``start``."""
        return burst[HOLD]

    def adopt(self, burst: "Burst") -> None:
        """``burst`` was just booked for this (paced) owner, before its start is known."""


# A booked read burst is a list record (cheaper than an object: a program books one per burst):
# [REQUEST, START, END, HOLD, OWNER, AFTER, GAP, WINDOW, DRAIN].  ``AFTER`` is the engine's previous
# burst (this one is requested at least ``GAP`` cycles after it, and its data starts only once that
# one's is out of the engine), ``WINDOW`` the engine's burst ``dma_max_bursts`` earlier (this one is
# requested only the cycle after that one's last beat); both keep holding when another engine's
# burst delays those.  ``DRAIN`` is how long the burst still holds its engine after the read channel
# is free (see :func:`release`).  A *segment* -- a whole block booked at once whose bursts stream
# back to back -- has a tenth field, SEGMENT, a function of the cycle its data may start that
# returns its bursts; its REQUEST is that of its last burst.
REQUEST, START, END, HOLD, OWNER, AFTER, GAP, WINDOW, DRAIN, SEGMENT = range(10)
Burst = list

ONE_BEAT = -1
"""``DRAIN`` of a one-beat burst of narrow elements: its only beat is taken as its data starts,
so the channel is free the cycle after, however long the elements (or a writer) then take."""


def release(burst: Burst) -> int:
    """The cycle after the burst's last beat left the read channel: the next burst's data (of
    another engine) may start then, and the arbiter's route FIFO frees its slot.

    That is ``END`` but for elements narrower than the bus: the engine takes a beat into its beat
    register and sends its elements out one per cycle, taking the next beat only when they all
    are out, so its last beat leaves the channel while the beat's other elements still come out
    (``END - DRAIN``; a one-beat burst's only beat, the cycle its data starts)."""
    drain = burst[DRAIN]
    if drain == ONE_BEAT:
        return burst[START] + 1
    return burst[END] - drain


def _rank_of(burst: Burst, last: int) -> int:
    owner = burst[OWNER]
    return rr_rank(owner.client if owner is not None else None, last)


def earliest_request(burst: Burst) -> int:
    """The burst's request cycle as its engine's constraints allow now."""
    request = burst[REQUEST]
    after, window = burst[AFTER], burst[WINDOW]
    if after is not None and after[REQUEST] + burst[GAP] > request:
        request = after[REQUEST] + burst[GAP]
    if window is not None and release(window) + 1 > request:
        request = release(window) + 1
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
        self._done_client = _CLIENTS - 1  # the client of that burst (the arbiter's reset pointer)

    def tail_end(self) -> int:
        """The first cycle the read channel is free after every burst booked so far (see :func:`release`)."""
        return release(self.queue[-1]) if self.queue else self._done_end

    def read_burst(
        self, request: int, hold: int, owner: Owner | None, after: Burst | None = None, window: Burst | None = None,
        drain: int = 0,
    ) -> Burst:
        """Book a burst requested in cycle ``request`` that holds the channel ``hold`` cycles.

        ``after`` and ``window`` are the engine's bursts that bound its request, ``drain`` its
        cycles in the engine after the channel is free (see ``Burst``).
        """
        queue, requests = self.queue, self.requests
        if queue and queue[0][END] <= self.env.now:
            self.drop_done()
        gap = request - after[REQUEST] if after is not None else 0
        paced = owner is not None and owner.paced
        client = owner.client if owner is not None else None
        at = len(queue)
        if queue and requests[-1] >= request:
            at = self._place(request, client)
        if at == len(queue):
            request = self.route_limit(owner, request)
            start = max(request + self.latency, self.tail_end())
            if after is not None and after[END] > start:
                start = after[END]  # the engine's previous elements are not all out yet
            burst = [request, start, start + hold, hold, owner, after, gap, window, drain]
            if paced:
                owner.adopt(burst)
                burst[HOLD] = hold = owner.hold_from(burst, start)
                burst[END] = start + hold
            queue.append(burst)
            requests.append(request)
            return burst
        # Requested before bursts already booked: serve it first and re-place those behind it.
        burst = [request, 0, 0, hold, owner, after, gap, window, drain]
        if paced:
            owner.adopt(burst)
        last = self._granted_before(at)
        behind = queue[at:]
        del queue[at:], requests[at:]
        if any(len(b) > SEGMENT for b in behind):
            behind = self._expand(behind, self.tail_end())
            # A segment's bursts requested before this one (or in its cycle, ahead of it in the
            # round-robin) keep their place.
            keep, rank = 0, rr_rank(client, last)
            while keep < len(behind) and (behind[keep][REQUEST] < request or (
                    behind[keep][REQUEST] == request and _rank_of(behind[keep], last) < rank)):
                keep += 1
            queue.extend(behind[:keep])
            requests.extend(b[REQUEST] for b in behind[:keep])
            behind = behind[keep:]
        end = self.tail_end()
        # One engine's bursts behind, and the arbiter can grant this one when it asks: it goes first.
        # Held back (a full route FIFO), it competes with those waiting then, in round-robin order.
        if all(b[OWNER] is behind[0][OWNER] for b in behind) and self.route_limit(owner, request) == request:
            self._replace_in_order(burst, behind, end)
            return burst
        # Among equal requests the arbiter's round-robin decides (then the bursts booked before go first).
        pending = [(request, len(behind), burst)] + [(b[REQUEST], k, b) for k, b in enumerate(behind)]
        heapify(pending)
        while pending:
            key, k, b = heappop(pending)
            request = self.route_limit(b[OWNER], earliest_request(b))
            if request > key:
                # Its request moves: so may those of its engine's later bursts, which must not
                # overtake it (``earliest_request`` reads it).
                b[REQUEST] = request
                heappush(pending, (request, k, b))
                continue
            if pending and pending[0][0] == key:
                key, k, b = self._rr_pick(pending, key, k, b)
                request = key
            b[REQUEST] = request
            start = max(request + self.latency, end)
            after = b[AFTER]
            if after is not None and after[END] > start:
                start = after[END]
            if start != b[START] and b is not burst and b[OWNER] is not None:
                b[OWNER].dirty = True
            b[START] = start
            owner = b[OWNER]
            if owner is not None and owner.paced:
                b[HOLD] = owner.hold_from(b, start)
            b[END] = start + b[HOLD]
            end = release(b)
            queue.append(b)
            requests.append(request)
        return burst

    def route_limit(self, owner: Owner | None, request: int) -> int:
        """The request cycle of a burst of ``owner`` appended next to the queue that asks in cycle
        ``request``: the read arbiter grants one request a cycle, after the previous one, and
        only while its route FIFO has room, i.e. after the last beat of the burst
        ``dma_max_bursts`` places before (a burst of no client, a slow DRAM's write, is not routed)."""
        queue = self.queue
        if queue and owner is not None and owner.client is not None:
            if queue[-1][REQUEST] >= request:
                request = queue[-1][REQUEST] + 1
            window = self.window
            if len(queue) >= window and release(queue[-window]) >= request:
                request = release(queue[-window]) + 1
        return request

    def _granted_before(self, at: int) -> int:
        """The client the arbiter granted before the burst at queue position ``at``."""
        if at:
            owner = self.queue[at - 1][OWNER]
            if owner is not None and owner.client is not None:
                return owner.client
        return self._done_client

    def _place(self, request: int, client: int | None) -> int:
        """The queue position of a burst requested in cycle ``request`` by ``client``: after every
        burst requested before, and after those of the same cycle that the round-robin serves first."""
        requests, queue = self.requests, self.queue
        at, hi = bisect_left(requests, request), bisect_right(requests, request)
        if at < hi:
            last = self._granted_before(at)
            rank = rr_rank(client, last)
            while at < hi and _rank_of(queue[at], last) <= rank:
                at += 1
        return at

    def _rr_pick(self, pending: list, key: int, k: int, b: Burst) -> tuple[int, int, Burst]:
        """Of the re-placed bursts whose request can be ``key``, the one the round-robin serves
        first after the queue's last burst; the others go back to ``pending``."""
        ties = [(k, b)]
        while pending and pending[0][0] == key:
            _, k2, b2 = heappop(pending)
            request = self.route_limit(b2[OWNER], earliest_request(b2))
            if request > key:
                b2[REQUEST] = request
                heappush(pending, (request, k2, b2))
            else:
                ties.append((k2, b2))
        if len(ties) == 1:  # the others can no longer ask in this cycle
            return key, k, b
        last = self._granted_before(len(self.queue))
        ties.sort(key=lambda t: (_rank_of(t[1], last), t[0]))
        for k2, b2 in ties[1:]:
            heappush(pending, (key, k2, b2))
        return (key, *ties[0])

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
        burst[REQUEST] = self.route_limit(burst[OWNER], burst[REQUEST])
        start = burst[REQUEST] + latency
        start = start if start > end else end
        after = burst[AFTER]
        if after is not None and after[END] > start:
            start = after[END]
        burst[START] = start
        owner = burst[OWNER]
        if owner is not None and owner.paced:
            burst[HOLD] = owner.hold_from(burst, start)
        burst[END] = start + burst[HOLD]
        end = release(burst)
        queue.append(burst)
        requests.append(burst[REQUEST])
        unchanged = 0
        for k, b in enumerate(behind):
            if unchanged >= self.window:
                # Nothing the rest depends on moved (their window bursts are among these).
                queue.extend(behind[k:])
                requests.extend(b[REQUEST] for b in behind[k:])
                return
            request = self.route_limit(b[OWNER], earliest_request(b))
            start = request + latency
            if end > start:
                start = end
            after = b[AFTER]
            if after is not None and after[END] > start:
                start = after[END]
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
            b[END] = start + b[HOLD]
            end = release(b)
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
            tail = release(record)
        return out

    def drop_done(self) -> None:
        """Forget the bursts whose data is over (nothing can be requested in the past)."""
        queue, now = self.queue, self.env.now
        k = 0
        while k < len(queue) and queue[k][END] <= now:
            k += 1
        if k:
            self._done_end = max(self._done_end, release(queue[k - 1]))
            self._done_client = self._granted_before(k)
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
