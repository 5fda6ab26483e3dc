"""The fetch unit: instructions DRAM -> the three command queues, in program order.

Timed as the RTL's ``vdla_fetch``: fetch starts in cycle 0 and reads the program in
chunks of ``dram_burst_bytes / 16`` instructions (at least one) through its own DMA
engine (:func:`vdla.simulator.cycle.dma.read_rows`) into a buffer of two chunks.  A
chunk is requested once the buffer has room for all of it -- at once for the first
two, then the cycle after the dispatch that frees the room -- so fetch streams two
chunks ahead of dispatch.  Instructions come out of the DMA stream one every
``fetch_cycles_per_insn`` cycles as their beats arrive, enter the buffer (visible
``queue_latency`` later) and are dispatched in program order, one per cycle, into
the command queue of the module that runs them -- blocking while that queue is
full, which stops everything behind it.

The process computes dispatch cycles ahead of the simulation clock; it waits (as a
SimPy event) only when a command queue's slot has not been freed by its unit yet.
"""

from __future__ import annotations

from vdla.simulator.cycle.dma import geometry
from vdla.simulator.cycle.dram import END, READ_CLIENTS, REQUEST, START, Owner
from vdla.simulator.cycle.stats import UnitCounters
from vdla.simulator.cycle.unit import Blocked, Context, Process
from vdla.simulator.tokens import describe
from vdla_hw.isa import INSN_BYTES


class FetchUnit:
    """Streams the program from DRAM address ``insn_addr`` into the command queues."""

    name = "fetch"

    def __init__(self, ctx: Context, insn_addr: int = 0) -> None:
        if insn_addr % INSN_BYTES:
            raise ValueError(f"instruction address {insn_addr:#x} is not {INSN_BYTES}-byte aligned")
        self.ctx = ctx
        self.insn_addr = insn_addr
        self.counters = UnitCounters()
        self.modules = [ops.module for ops in ctx.ops]
        self.blocked: tuple[Blocked, int | None, str | None] = (Blocked.EMPTY, None, None)
        self.blocked_at = 0
        """The cycle the unit last blocked (for the deadlock report)."""
        self.arrivals: list[int] = []
        """The cycle each instruction comes out of the DMA stream into fetch's buffer."""
        self.engine_free = 0
        self.owner = Owner(READ_CLIENTS.index(self.name))
        """What fetch's bursts belong to: the read arbiter's fetch port."""
        """The first cycle fetch's DMA engine can take the next chunk."""
        cfg = ctx.cfg
        # A DRAM slower than the bus paces the stream by its beats.
        self.per_insn = max(cfg.fetch_cycles_per_insn, -(-cfg.timing.dram_beat_cycles * INSN_BYTES // cfg.bus_bytes))
        """Cycles between two instructions leaving fetch's DMA stream."""

    def run(self) -> Process:
        env, ctx, c = self.ctx.env, self.ctx, self.counters
        timing = ctx.cfg.timing
        latency = timing.queue_latency
        chunk = max(1, timing.dram_burst_bytes // INSN_BYTES)
        timeline = ctx.timeline
        cmd = ctx.queues.cmd
        modules = self.modules
        n = len(ctx.insns)
        firsts = range(0, n, chunk)
        # Chunk m is requested once instruction ``freed`` is dispatched: then the buffer has room.
        at_once: list[int] = []
        after: dict[int, list[int]] = {}
        for m, first in enumerate(firsts):
            freed = first + min(chunk, n - first) - 2 * chunk - 1
            if freed < 0:
                at_once.append(m)
            else:
                after.setdefault(freed, []).append(m)
        self.arrivals = [0] * n
        self.engine_free = timing.dma_start_cycles - 2  # the cycle fetch's DMA engine can take a chunk
        for m in at_once:
            yield from self._request(firsts[m], min(chunk, n - firsts[m]), self.engine_free)
        last = -1  # the previous dispatch cycle
        arrivals = self.arrivals
        queues = [cmd[m] for m in modules]
        for first in firsts:
            stop = min(first + chunk, n)
            for i in range(first, stop):
                want = arrivals[i] + latency
                if want <= last:
                    want = last + 1
                else:
                    c.wait_dram += want - (last + 1)
                queue = queues[i]
                when = queue.try_put(i, want)
                if when is None:
                    self.blocked_at = want
                    self.blocked = (Blocked.PUSH, i, queue.name)
                    when = yield queue.put(i, want)
                if when > want:
                    c.wait_queue_full += when - want
                    if timeline is not None:
                        timeline.add(self.name, f"full {queue.name}", want, when, "wait", {"insn": i})
                if i == first:
                    span_start = when
                last = when
                if i in after:
                    for m in after[i]:
                        yield from self._request(firsts[m], min(chunk, n - firsts[m]), max(self.engine_free, when + 1))
            c.busy += stop - first
            c.instructions += stop - first
            if timeline is not None:
                timeline.add(self.name, f"dispatch {first}..{stop - 1}", span_start, last + 1, "fetch",
                             {"first": first, "count": stop - first})
        self.blocked_at = last
        self.blocked = (Blocked.DONE, None, None)

    def _request(self, first: int, count: int, request: int) -> Process:
        """Request the chunk of ``count`` instructions from ``first`` in cycle ``request``; note when
        each instruction comes out of the DMA stream (``self.arrivals``)."""
        env, ctx = self.ctx.env, self.ctx
        cfg = ctx.cfg
        if request > env.now:
            # Book the read channel in the order of the requests (see dram.py).
            yield env.timeout(request - env.now)
        request = env.now
        narrow = INSN_BYTES < cfg.bus_bytes
        geo = geometry(cfg, self.insn_addr + first * INSN_BYTES, count * INSN_BYTES, 1, 0, INSN_BYTES)
        ctx.dram.count(self.name, count * INSN_BYTES, geo.beats, write=False)
        # The engine takes the chunk in cycle ``request`` and requests its bursts one per cycle from
        # the next; they are on the bus a cycle later (the arbiter's register), as in ``dma._engine``.
        burst = None
        for k, hold in enumerate(geo.holds[0]):
            # One request per cycle, later while the read arbiter's route FIFO is full.
            burst = ctx.dram.read_burst(request + 2 + k if burst is None else burst[REQUEST] + 1, hold, self.owner, burst)
            if k == 0:
                head = burst
        self.engine_free = burst[REQUEST]
        # The k-th instruction of the chunk leaves the DMA stream with its last beat (one per cycle
        # out of a wider beat); none before the chunk's data allows.
        extra = 1 if narrow else 0
        per_insn = self.per_insn
        arrive = head[START] + extra + per_insn - 1
        for i in range(first, first + count):
            self.arrivals[i] = arrive
            arrive += per_insn
        self.arrivals[first + count - 1] = max(self.arrivals[first + count - 1], burst[END] - 1 + extra)

    def describe_blocked(self) -> str:
        kind, index, queue = self.blocked
        if index is None:
            return f"done: all {len(self.ctx.insns)} instructions dispatched"
        depth = self.ctx.cfg.cmd_queue_depth
        insn = describe(self.ctx.insns[index])
        return f"instruction {index} ({insn}) waits for room in {queue} (full: {depth}/{depth})"
