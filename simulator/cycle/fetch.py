"""The fetch unit: instructions DRAM -> the three command queues, in program order.

Fetch reads the instruction stream in chunks of one burst (``dram_burst_bytes /
16`` instructions, fewer at an unaligned start or at the end; one instruction,
in several bursts, when bursts are shorter) into a two-chunk buffer, as the
RTL's ``vdla_fetch`` does: when a chunk has arrived, the next one is requested
while this one is decoded and dispatched, one instruction every
``fetch_cycles_per_insn`` cycles, into the command queue of the module that runs
it -- blocking while that queue is full, which stops everything behind it.

When every queue has room for its share of a chunk, no dispatch of that chunk
can block, so fetch enqueues them all at once, each tagged with the cycle its
decode finishes; a unit that takes an entry early waits until that cycle (see
``Unit.run``).  Only a chunk that may meet a full queue is dispatched
instruction by instruction.  The timing is identical; the event count is not.
"""

from __future__ import annotations

from collections import Counter

from simulator.cycle.queues import CMD_QUEUE_NAMES
from simulator.cycle.stats import UnitCounters
from simulator.cycle.unit import Blocked, Context, Process
from simulator.tokens import describe
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

    def run(self) -> Process:
        env, ctx, c = self.ctx.env, self.ctx, self.counters
        timing = ctx.cfg.timing
        burst = timing.dram_burst_bytes
        decode = timing.fetch_cycles_per_insn
        timeline = ctx.timeline
        cmd = ctx.queues.cmd
        modules = self.modules
        n = len(ctx.insns)

        def request(first: int) -> tuple[int, int]:
            """Book the chunk starting at instruction ``first``: (instructions, arrival cycle)."""
            addr = self.insn_addr + first * INSN_BYTES
            # Up to the next burst boundary; at least one instruction (a burst may be shorter).
            count = min(n - first, max(1, ((addr // burst + 1) * burst - addr) // INSN_BYTES))
            return count, ctx.dram.book(self.name, env.now, addr, count * INSN_BYTES, 1, 0, write=False).end

        i = 0
        count, arrival = request(0)
        while True:
            if arrival > env.now:
                t = env.now
                yield env.timeout(arrival - t)
                c.wait_dram += env.now - t
                if timeline is not None:
                    timeline.add(self.name, "wait dram", t, env.now, "wait", {"first": i})
            nxt = i + count
            upcoming = request(nxt) if nxt < n else None  # the second chunk of the buffer
            start = env.now
            chunk = modules[i:nxt]
            share = Counter(chunk)
            if all(len(cmd[m]) + k <= cmd[m].capacity for m, k in share.items()):
                for k, module in enumerate(chunk, start=1):
                    cmd[module].try_put((i + k - 1, start + k * decode))
                c.busy += count * decode
                yield env.timeout(count * decode)
            else:
                for j, module in enumerate(chunk, start=i):
                    yield env.timeout(decode)
                    c.busy += decode
                    if not cmd[module].try_put((j, env.now)):
                        self.blocked_at = env.now
                        self.blocked = (Blocked.PUSH, j, CMD_QUEUE_NAMES[module])
                        t = env.now
                        yield cmd[module].put((j, env.now))
                        c.wait_queue_full += env.now - t
                        if timeline is not None:
                            args = {"insn": j}
                            timeline.add(self.name, f"full {CMD_QUEUE_NAMES[module]}", t, env.now, "wait", args)
            c.instructions += count
            if timeline is not None:
                args = {"first": i, "count": count}
                timeline.add(self.name, f"dispatch {i}..{nxt - 1}", start, env.now, "fetch", args)
            if upcoming is None:
                break
            i = nxt
            count, arrival = upcoming
        self.blocked_at = env.now
        self.blocked = (Blocked.DONE, None, None)

    def describe_blocked(self) -> str:
        kind, index, queue = self.blocked
        if index is None:
            return f"done: all {len(self.ctx.insns)} instructions dispatched"
        depth = self.ctx.cfg.cmd_queue_depth
        insn = describe(self.ctx.insns[index])
        return f"instruction {index} ({insn}) waits for room in {queue} (full: {depth}/{depth})"
