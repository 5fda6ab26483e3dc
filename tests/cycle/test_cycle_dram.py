"""The DRAM read channel and the DMA engines: beats, latency, request order, re-timing."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.simulator.cycle.dma import geometry, read_rows
from vdla.simulator.cycle.dram import (END, GAP, ONE_BEAT, READ_CLIENTS, REQUEST, START, Dram, Owner, burst_beats,
                                      release)
from vdla.simulator.cycle.kernel import Environment
from vdla_hw.config import ConfigError, load_config

# 8-byte bus, 64-byte bursts, 10 cycles of latency, engines as in the RTL.
CFG = load_config("default").replace(timing={"dram_latency": 10, "dram_burst_bytes": 64})


def _dram() -> Dram:
    return Dram(Environment(), CFG, ("a", "b"))


def _span(burst: list) -> tuple[int, int]:
    return burst[START], burst[END]


def test_beats_and_bursts_follow_alignment():
    assert burst_beats(0, 64, 8, 64) == [8]
    assert burst_beats(4, 8, 8, 64) == [2]  # an unaligned word touches two bus words
    assert burst_beats(96, 64, 8, 64) == [4, 4]  # split at the 128-byte burst boundary
    assert burst_beats(0, 200, 8, 64) == [8, 8, 8, 1]
    assert burst_beats(60, 8, 8, 64) == [1, 1]  # bursts share no beat: a word on each side


def test_narrow_elements_hold_the_channel_one_cycle_each():
    """4-byte elements on an 8-byte bus: 3 elements from byte 4 are 2 beats, but the engine
    hands out one element per cycle, so the burst holds the channel 3 cycles; lane 1 first."""
    tiny = load_config("tiny")
    geo = geometry(tiny, 4, 12, 1, 0, 4)
    assert geo.narrow and geo.bursts == ((2,),) and geo.holds == ((3,),) and geo.lanes == (1,)
    wide = geometry(CFG, 0, 64, 2, 640, 16)
    assert not wide.narrow and wide.holds == wide.bursts == ((8,), (8,)) and wide.beats == 16


def test_uncontended_bursts_stream_after_the_latency():
    """Data starts 10 cycles after the request, then one beat per cycle, in request order."""
    dram = _dram()
    a = dram.read_burst(0, 8, None)
    b = dram.read_burst(1, 8, None)  # its data could start in 11 but a's runs until 18
    c = dram.read_burst(40, 2, None)  # the channel is idle again: 50
    assert (_span(a), _span(b), _span(c)) == ((10, 18), (18, 26), (50, 52))


def test_an_earlier_request_booked_later_is_served_first():
    """A's bursts are requested in 0 and 2; B's, requested in 1, is booked after both: it goes
    between them, and A's second burst moves back by B's 4 beats (A is told to re-time)."""
    dram = _dram()
    owner = Owner()
    a1 = dram.read_burst(0, 8, owner)
    a2 = dram.read_burst(2, 8, owner, a1)
    assert _span(a2) == (18, 26) and not owner.dirty
    b = dram.read_burst(1, 4, None)
    assert (_span(a1), _span(b), _span(a2)) == ((10, 18), (18, 22), (22, 30))
    assert owner.dirty
    assert dram.queue == [a1, b, a2] and dram.requests == [0, 1, 2]


def test_same_cycle_requests_follow_the_arbiters_round_robin():
    """Two engines request in the same cycle: the read arbiter serves the first client after the
    one it granted last (vdla_axi_rd_arb), whichever the model booked first."""
    fetch, inp, wgt, uop = (Owner(READ_CLIENTS.index(n)) for n in ("fetch", "inp", "wgt", "uop"))
    dram = _dram()
    w = dram.read_burst(0, 8, wgt)  # granted last before the tie: wgt
    i = dram.read_burst(3, 8, inp)
    u = dram.read_burst(3, 8, uop)  # booked after inp, but uop comes right after wgt
    assert dram.queue == [w, u, i] and (_span(u), _span(i)) == ((18, 26), (26, 34))
    assert inp.dirty and not uop.dirty
    assert (u[REQUEST], i[REQUEST]) == (3, 4)  # one grant a cycle: the loser is granted next
    # After uop, the round-robin reaches fetch before inp: a fetch burst in inp's next cycle goes
    # first even when booked after it (the re-placing path).
    dram = _dram()
    u = dram.read_burst(0, 8, uop)
    i = dram.read_burst(3, 8, inp)
    f = dram.read_burst(3, 2, fetch)
    assert dram.queue == [u, f, i] and _span(i) == (20, 28)
    # The same clients with no tie keep the request order.
    dram = _dram()
    u = dram.read_burst(0, 8, uop)
    i = dram.read_burst(3, 8, inp)
    f = dram.read_burst(4, 2, fetch)
    assert dram.queue == [u, i, f]


def test_the_route_fifo_bounds_bursts_in_flight_over_every_engine():
    """The arbiter's route FIFO holds dma_max_bursts (8) bursts: after 8 one-beat bursts of one
    engine, another engine's request waits for the first of them to deliver its beat, although
    it has nothing of its own in flight."""
    inp, wgt = Owner(READ_CLIENTS.index("inp")), Owner(READ_CLIENTS.index("wgt"))
    dram = _dram()
    a = None
    for k in range(8):
        a = dram.read_burst(k, 1, inp, a)
    first = dram.queue[0]
    assert _span(first) == (10, 11) and _span(a) == (17, 18)
    b = dram.read_burst(8, 1, wgt)
    assert b[REQUEST] == first[END] + 1 == 12 and _span(b) == (22, 23)


def test_a_narrow_bursts_last_beat_frees_the_channel_before_its_elements_are_out():
    """4-byte micro-ops on an 8-byte bus: a 4-beat burst holds the channel 8 cycles (one element
    each), but its last beat leaves the channel as the engine takes it, 2 cycles before its last
    element is out (tokens_full on default: the RTL's next fetch burst came a cycle earlier, and
    the route FIFO freed its slot a cycle earlier).  Another engine's data starts then; the same
    engine's next burst waits until its beat register is empty."""
    geo = geometry(CFG, 0, 32, 1, 0, 4)
    assert geo.narrow and geo.holds == ((8,),) and geo.drains == ((1,),)
    one = geometry(CFG, 0, 8, 1, 0, 4)  # one beat: it leaves the channel the cycle its data starts
    assert one.holds == ((2,),) and one.drains == ((ONE_BEAT,),)
    uop, fetch = Owner(READ_CLIENTS.index("uop")), Owner(READ_CLIENTS.index("fetch"))
    dram = _dram()
    u1 = dram.read_burst(0, 8, uop, None, None, 1)
    f = dram.read_burst(1, 4, fetch)
    assert _span(u1) == (10, 18) and release(u1) == 17 and _span(f) == (17, 21)
    dram = _dram()
    u1 = dram.read_burst(0, 8, uop, None, None, 1)
    u2 = dram.read_burst(1, 8, uop, u1, None, 1)
    assert _span(u2) == (18, 26)  # its own previous elements first
    # The route FIFO frees the slot with the last beat too: 8 narrow bursts in flight, then
    # another engine's request is granted the cycle after the first one's last beat.
    dram = _dram()
    a = None
    for k in range(8):
        a = dram.read_burst(k, 4, uop, a, None, 1)
    first = dram.queue[0]
    assert _span(first) == (10, 14) and release(first) == 13
    b = dram.read_burst(8, 1, fetch)
    assert b[REQUEST] == release(first) + 1 == 14


def test_a_rebooked_burst_keeps_its_engines_pacing_not_an_old_route_fifo_wait():
    """A block booked behind a full route FIFO waits for slots; when another engine's earlier
    request re-places it, the wait is redone from the new queue: a burst keeps only the engine's
    own pacing (GAP: 1 cycle between requests in a row, 2 at a new row), not the FIFO wait it had
    when booked (tokens_full on default: an ACC row requested 16 cycles late)."""
    cfg = CFG.replace(timing={"dma_max_bursts": 2})  # a route FIFO of 2
    dram = Dram(Environment(), cfg, ("a", "b"))
    read_rows(cfg, dram, 0, geometry(cfg, 0, 64, 4, 64, 64), client=READ_CLIENTS.index("acc"))
    a1, a2, a3, a4 = dram.queue
    assert [b[REQUEST] for b in dram.queue] == [3, 5, 22, 30]  # rows 3 and 4 wait for free slots
    assert [b[GAP] for b in dram.queue] == [0, 2, 2, 2]
    # A fetch burst requested in 4 goes second; rows 2..4 are re-placed behind it: row 2 waits for
    # row 1's slot (22), row 3 for the fetch burst's (22, so 2 after row 2: 24), row 4 for row 2's.
    f = dram.read_burst(4, 1, Owner(READ_CLIENTS.index("fetch")))
    assert dram.queue == [a1, f, a2, a3, a4]
    assert [b[REQUEST] for b in dram.queue] == [3, 4, 22, 24, 41]
    assert (_span(a3), _span(a4)) == ((40, 48), (51, 59))


def test_read_clients_are_the_rtls_arbiter_ports():
    """The model's client order is vdla_top's RD_* port numbering, which sets the round-robin."""
    import re
    from pathlib import Path

    import vdla_hw

    top = (Path(vdla_hw.__file__).parent / "rtl" / "vdla_top.sv").read_text()
    ports = {name.lower(): int(k) for name, k in re.findall(r"localparam int RD_(\w+) = (\d+);", top)}
    assert ports == {name: k for k, name in enumerate(READ_CLIENTS)}
    assert f"localparam int N_RD = {len(READ_CLIENTS)};" in top


def test_a_delayed_window_burst_delays_the_request_it_gates():
    """A's second burst may be requested only the cycle after its first one's data (the
    in-flight limit): requested in 29 once the first ends in 28.  B's earlier request
    delays A's first burst to 21..29, so the second one is requested in 30, data in 40."""
    dram = _dram()
    owner = Owner()
    a1 = dram.read_burst(10, 8, owner)
    a2 = dram.read_burst(a1[END] + 1, 8, owner, a1, a1)
    assert (_span(a1), _span(a2), a2[REQUEST]) == ((20, 28), (39, 47), 29)
    b = dram.read_burst(5, 6, None)
    assert (_span(b), _span(a1), _span(a2), a2[REQUEST]) == ((15, 21), (21, 29), (40, 48), 30)


def test_a_streaming_block_is_one_segment_until_a_request_lands_inside():
    """Four 64-byte INP rows started in cycle 0: the engine requests them in 3, 5, 7, 9, and
    their 8 beats each stream back to back from 13 -- booked as one segment.  A burst requested
    in 6 comes back after row 1 (request 5) and before row 2 (request 7): 29..33, and rows 2 and
    3 move back by 4 cycles (the rows are told to re-time)."""
    dram = _dram()
    rows = read_rows(CFG, dram, 0, geometry(CFG, 0, 64, 4, 128, 16))
    assert len(dram.queue) == 1 and dram.requests == [9]
    assert [(rows.first(r), rows.last(r)) for r in range(4)] == [(13, 20), (21, 28), (29, 36), (37, 44)]
    b = dram.read_burst(6, 4, None)
    assert _span(b) == (29, 33) and rows.dirty
    assert [(rows.first(r), rows.last(r)) for r in range(4)] == [(13, 20), (21, 28), (33, 40), (41, 48)]
    assert dram.requests == [3, 5, 6, 7, 9]


def test_a_slower_dram_holds_the_channel_per_beat_and_burst():
    """``dram_beat_cycles`` / ``dram_burst_cycles`` (a board's SDRAM): a burst holds the channel its
    beats times the beat cycles plus the per-burst cost; narrow elements still need a cycle each."""
    slow = CFG.replace(timing={"dram_beat_cycles": 5, "dram_burst_cycles": 2})
    wide = geometry(slow, 0, 64, 2, 640, 16)
    assert wide.bursts == ((8,), (8,)) and wide.holds == ((42,), (42,))
    tiny = load_config("tiny").replace(timing={"dram_beat_cycles": 1, "dram_burst_cycles": 3})
    assert geometry(tiny, 4, 12, 1, 0, 4).holds == ((3 + 3,),)  # 3 elements, 2 beats, + 3
    dram = Dram(Environment(), slow, ("a",))
    rows = read_rows(slow, dram, 0, wide)
    # First data after the start cycles and the latency; the two bursts back to back.
    first = slow.timing.dma_start_cycles + slow.timing.dram_latency
    assert rows.first(0) == first and rows.last(1) == first + 2 * 42 - 1


def test_neutral_dram_timing_leaves_configs_and_digests_unchanged():
    """The SDRAM fields at their neutral values are not in the config's JSON nor its digest, so the
    presets (calibrated against the RTL harness's DRAM) keep their identity; other values change it."""
    tiny = load_config("tiny")
    assert "dram_beat_cycles" not in tiny.to_dict()["timing"]
    same = tiny.replace(timing={"dram_beat_cycles": 1, "dram_burst_cycles": 0})
    assert same.digest == tiny.digest and same == tiny
    slow = tiny.replace(timing={"dram_beat_cycles": 5})
    assert slow.digest != tiny.digest and slow.to_dict()["timing"]["dram_beat_cycles"] == 5
    with pytest.raises(ConfigError, match="dram_beat_cycles"):
        tiny.replace(timing={"dram_beat_cycles": 0})


def test_the_ulx3s_boards_sdram_slows_the_model_not_the_results():
    """The board's DRAM timing (vdla_hw.fpga.boards) changes only the cycle model's timing: the same
    program leaves the same DRAM, takes more cycles (reads and the STOREs' writes share the slower
    SDRAM), and the hardware fields are the preset's."""
    from vdla.runtime.backends import run
    from vdla.runtime.system_programs import build_case
    from vdla_hw.fpga.boards import get_board

    board = get_board("ulx3s")
    tiny = load_config(board.default_config)
    soc = board.model_config(tiny)
    assert soc.timing.dram_beat_cycles > 1
    assert {k: v for k, v in soc.to_dict().items() if k != "timing"} == {k: v for k, v in tiny.to_dict().items() if k != "timing"}
    program = build_case(tiny, "random0")
    import dataclasses

    fast = run(program, "cycle")
    slow = run(dataclasses.replace(program, config=soc), "cycle")
    assert np.array_equal(fast.dram, slow.dram)
    assert slow.cycles > fast.cycles


def test_a_write_burst_waits_for_the_reads_before_it_in_a_shared_sdram():
    """A board's SDRAM serves one burst at a time whatever its direction (LiteDRAM's port converter,
    docs/fpga_ulx3s.md): a write burst requested while a read holds the memory gets it when the
    read is over, the STORE's engine (``write_rows``) waits with it, and reads requested later wait
    behind the write; with the memory idle the write starts at once."""
    from vdla.simulator.cycle.dma import write_rows

    slow = CFG.replace(timing={"dram_beat_cycles": 5, "dram_burst_cycles": 1})
    latency = slow.timing.dram_latency
    assert Dram(Environment(), slow, ("a",)).write_burst(3, 41) == 3
    busy = Dram(Environment(), slow, ("a",))
    read = busy.read_burst(0, 41, Owner())
    assert _span(read) == (latency, latency + 41)  # the read's data; the memory took it in cycle 0
    assert busy.write_burst(3, 41) == 41  # behind the read's 41 cycles
    after = busy.read_burst(4, 6, Owner())
    assert _span(after) == (latency + 82, latency + 88)  # and the next read behind the write

    # One 64-byte row (8 beats) of 16-byte elements, the first element in cycle 5: its beat goes out
    # in cycle 6, the burst holds the memory 8 * 5 + 1 cycles (to cycle 46), the response comes
    # `latency` later.  Behind a read that holds the memory until cycle 100, all of it moves by 94.
    geo = geometry(slow, 0, 64, 1, 64, 16)
    alone = write_rows(slow, 0, 5, geo, 4, 16, share=Dram(Environment(), slow, ("a",)).write_burst)
    assert alone == 46 + latency + 1
    shared = Dram(Environment(), slow, ("a",))
    shared.read_burst(0, 100, Owner())
    assert write_rows(slow, 0, 5, geo, 4, 16, share=shared.write_burst) == alone + 100 - 6
