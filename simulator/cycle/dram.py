"""The DRAM channel shared by fetch, load, compute and store.

Units move DRAM data in instructions of one or more contiguous rows; a row is
split into AXI bursts at ``dram_burst_bytes`` boundaries.  A unit's DMA issues
all bursts of an instruction back to back with several in flight (as the RTL's
``vdla_dma_rd``/``vdla_dma_wr`` do), so an instruction pays the DRAM latency
once: read data can start ``dram_latency`` cycles after the instruction's DRAM
phase begins; write data goes out at once and the instruction completes
``dram_latency`` cycles after its last beat (the write response).  Each beat is
one aligned bus word, one cycle on the shared data bus.

Arbitration is a reservation calendar: when a unit starts an instruction it
books every burst of it, in order, each in the earliest idle stretch of the bus
long enough for it.  Bookings are first-come first-served at instruction
granularity, and a later request fills idle cycles an earlier one left (e.g.
its latency), at burst granularity, the way interleaved AXI masters share a
channel.  A booking costs no SimPy event: the unit waits one computed timeout
for the whole instruction, and an uncontended booking is O(1).

Reads and writes share the one data bus, as they share a DRAM's bandwidth (the
roofline counts both).  AXI itself has separate read and write channels, so a
fabric that overlaps them (e.g. an AXI RAM model) can run store-heavy phases
faster than this model.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

import simpy

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
    wait_cycles: int = 0
    """Cycles between bursts' requests and their first data beats (latency + arbitration)."""


@dataclass(frozen=True)
class Booking:
    """One booked instruction: the cycle it completes and how much of the time since its
    first request was waiting (latency + arbitration) rather than moving data beats."""

    end: int
    wait: int


def row_beats(byte_addr: int, nbytes: int, bus_bytes: int) -> int:
    """Bus words a row touches (bursts split at bus-aligned boundaries, so they share no beat)."""
    return (byte_addr + nbytes - 1) // bus_bytes - byte_addr // bus_bytes + 1


def block_beats(addr: int, row_bytes: int, rows: int, stride: int, bus_bytes: int) -> int:
    """Bus words touched by all rows of a 2D block (rows of ``row_bytes`` every ``stride`` bytes)."""
    if stride % bus_bytes == 0:  # every row has the same alignment
        return rows * row_beats(addr, row_bytes, bus_bytes)
    return sum(row_beats(addr + r * stride, row_bytes, bus_bytes) for r in range(rows))


class Dram:
    """Latency, bandwidth and arbitration of the single DRAM channel."""

    def __init__(self, env: simpy.Environment, cfg: HwConfig, requesters: Iterable[str]) -> None:
        self.env = env
        self.bus_bytes = cfg.bus_bytes
        self.burst_bytes = cfg.timing.dram_burst_bytes
        self.latency = cfg.timing.dram_latency
        self.ports = {name: PortCounters() for name in requesters}
        self.busy_cycles = 0
        # Booked bus intervals [start, end), disjoint and sorted; ends are sorted too.
        self._starts: list[int] = []
        self._ends: list[int] = []

    def book(
        self, requester: str, first_request: int, addr: int, row_bytes: int, rows: int, stride: int, write: bool
    ) -> Booking:
        """Book ``rows`` rows of ``row_bytes`` bytes at byte ``addr + r * stride``, all requested at
        ``first_request``; returns when the last one completes."""
        self._forget_before(self.env.now)
        port = self.ports[requester]
        beats = block_beats(addr, row_bytes, rows, stride, self.bus_bytes)
        earliest = first_request if write else first_request + self.latency
        if not self._ends or self._ends[-1] <= earliest:
            # Nothing booked from ``earliest`` on: the whole instruction streams uninterrupted.
            t = earliest + beats
            if self._ends and self._ends[-1] == earliest:
                self._ends[-1] = t
            else:
                self._starts.append(earliest)
                self._ends.append(t)
        else:
            t = earliest
            for r in range(rows):
                for burst in burst_beats(addr + r * stride, row_bytes, self.bus_bytes, self.burst_bytes):
                    t = self._reserve(t, burst) + burst
        end = t + self.latency if write else t
        wait = end - first_request - beats
        port.beats += beats
        port.wait_cycles += wait
        self.busy_cycles += beats
        if write:
            port.bytes_written += rows * row_bytes
        else:
            port.bytes_read += rows * row_bytes
        return Booking(end, wait)

    def _reserve(self, earliest: int, beats: int) -> int:
        """Book ``beats`` cycles in the first idle stretch starting at or after ``earliest``."""
        starts, ends = self._starts, self._ends
        start = earliest
        i = bisect_right(ends, start)
        while i < len(starts) and starts[i] < start + beats:
            start = ends[i]
            i += 1
        end = start + beats
        # Merge with touching neighbours so the calendar stays short.
        if i > 0 and ends[i - 1] == start:
            if i < len(starts) and starts[i] == end:
                ends[i - 1] = ends[i]
                del starts[i], ends[i]
            else:
                ends[i - 1] = end
        elif i < len(starts) and starts[i] == end:
            starts[i] = start
        else:
            starts.insert(i, start)
            ends.insert(i, end)
        return start

    def _forget_before(self, now: int) -> None:
        # Nothing can be booked in the past: drop intervals that ended already.
        k = bisect_right(self._ends, now)
        if k:
            del self._starts[:k], self._ends[:k]

    @property
    def bytes_read(self) -> int:
        return sum(p.bytes_read for p in self.ports.values())

    @property
    def bytes_written(self) -> int:
        return sum(p.bytes_written for p in self.ports.values())
