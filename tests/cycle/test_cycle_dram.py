"""The shared DRAM channel: beats, latency, and arbitration by reservation."""

from __future__ import annotations

import simpy

from simulator.cycle.dram import Dram, burst_beats, row_beats
from vdla_hw.config import load_config

# 8-byte bus, 64-byte bursts, 10 cycles of latency.
CFG = load_config("default").replace(timing={"dram_latency": 10, "dram_burst_bytes": 64})


def _dram() -> Dram:
    return Dram(simpy.Environment(), CFG, ("a", "b"))


def test_beats_and_bursts_follow_alignment():
    assert row_beats(0, 64, 8) == 8
    assert row_beats(4, 8, 8) == 2  # an unaligned word touches two bus words
    assert burst_beats(96, 64, 8, 64) == [4, 4]  # split at the 128-byte burst boundary
    assert burst_beats(0, 200, 8, 64) == [8, 8, 8, 1]
    assert sum(burst_beats(4, 300, 8, 64)) == row_beats(4, 300, 8)


def test_uncontended_read_and_write():
    """A read: latency, then one beat per cycle.  A write: beats at once, done a latency later."""
    dram = _dram()
    read = dram.book("a", 0, 0, 64, 2, 128, write=False)
    assert (read.end, read.wait) == (10 + 16, 10)
    write = dram.book("b", 100, 512, 16, 1, 16, write=True)
    assert (write.end, write.wait) == (100 + 2 + 10, 10)
    assert dram.ports["a"].bytes_read == 128 and dram.ports["b"].bytes_written == 16
    assert dram.busy_cycles == 18


def test_first_come_first_served_with_gap_filling():
    """b asks right after a: its data waits until a's stream ends.  A request whose data
    fits in an idle stretch before a's stream is booked there (filling the latency gap)."""
    dram = _dram()
    a = dram.book("a", 0, 0, 256, 1, 256, write=False)  # beats 10..42
    b = dram.book("b", 1, 1024, 64, 1, 64, write=False)  # earliest 11, bus busy until 42
    assert a.end == 42
    assert (b.end, b.wait) == (42 + 8, 50 - 1 - 8)
    # A write of 2 beats asked at 0 fits before a's data (cycles 0..2), done at 2 + 10.
    w = dram.book("b", 0, 2048, 16, 1, 16, write=True)
    assert (w.end, w.wait) == (12, 10)
    # Two 8-beat bursts asked at 0 find no 8-cycle gap before b's stream ends: 50..58, 58..66.
    c = dram.book("a", 0, 4096, 128, 1, 128, write=False)
    assert (c.end, c.wait) == (66, 66 - 16)
    # A one-beat read asked at 0 cannot use the idle cycles 2..10 (its data comes 10 cycles
    # after the request at the earliest) and the bus is booked from 10 to 66: it gets 66.
    d = dram.book("b", 0, 8192, 8, 1, 8, write=False)
    assert d.end == 67
