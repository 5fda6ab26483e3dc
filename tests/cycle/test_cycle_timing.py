"""Exact cycle counts of small programs, worked out by hand.

Every test pins the timing parameters (``TIMING`` below) so the arithmetic in
the docstrings stays valid when the presets change.  The rules (docs/rtl.md,
"Instruction timing"), with these parameters:

* 64-bit bus (a beat is 8 bytes), 64-byte bursts, DRAM latency 10: a burst
  requested in cycle t has its first beat in t + 10 at the earliest, then one
  beat per cycle; read data comes back in request order.
* Queues: an entry pushed in cycle t can be popped from t + 2 (queue_latency).
* Fetch starts in cycle 0; its engine takes chunk 0 (four instructions, one
  64-byte burst) in cycle 1 and requests it in cycle 3, so the beats arrive in
  13..20; chunk 1 is taken in 3 and requested in 5.  An instruction (two beats)
  leaves the stream with its second beat -- 14, 16, 18, 20 for chunk 0 --,
  enters fetch's buffer and is dispatched 2 cycles later (16, 18, 20, 22), one
  per cycle at most, and is visible in its command queue 2 cycles after that.
* A unit takes an instruction (cycle a) when it is visible and the unit is free,
  starts it in a + 1 (or when its tokens are visible), is done E cycles after the
  start, pushes its tokens the cycle after, and is free the cycle after that.
  A timeline slice runs from the start to the cycle after done; the cycle count is
  FINISH's done cycle + 1.
* GEMM: E = n + 4 + 1.  LOAD: the engine takes row 0 in s + 1 and requests its
  first burst in s + 3 (the next row's burst two cycles after the previous row's
  last one); an element at least as wide as the bus is written in the cycle of its
  last beat, a narrower one the cycle after its beat (one per cycle); E = last write
  + 1 - s.  STORE (16-byte elements): element k reaches the write engine in
  s + 4 + k, its two beats go out the next two cycles (the burst was requested in
  s + 2), the write response comes 10 cycles after the last beat and the STORE is
  done the cycle after: E = 5 + 2 x tiles + 10 for one row.
"""

from __future__ import annotations

import numpy as np
import pytest

from vdla.simulator.cycle import run_cycle
from vdla.simulator.errors import DeadlockError, ProtocolError, SimTimeoutError
from vdla.simulator.cycle.machine import Watchdog
from vdla.simulator.fsim import run_fsim
from vdla_hw.config import load_config
from vdla_hw.isa import DepFlags, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop

TIMING = {
    "dram_latency": 10,
    "dram_burst_bytes": 64,
    "gemm_pipeline_depth": 4,
    "alu_pipeline_depth": 3,
    "alu_ii": 2,
    "sram_write_cycles": 1,
    "insn_overhead": 3,
    "queue_latency": 2,
    "dma_start_cycles": 3,
    "dma_max_bursts": 8,
    "dma_narrow_rows": 4,
    "axi_r_slice": 0,  # no read slice (tiny has one: its beats come a cycle later)
}
CFG = load_config("default").replace(timing=TIMING)


def _dram(cfg=CFG, uops: list[Uop] | None = None) -> np.ndarray:
    """4 KiB of random bytes with the micro-ops (if any) at byte 0."""
    image = np.random.default_rng(7).integers(0, 256, size=4096, dtype=np.uint8)
    if uops:
        words = cfg.isa.encode_uops(uops).view(np.uint8)
        image[: words.size] = words
    return image


def _gemm(uop_end: int, iter_out: int, iter_in: int, deps: DepFlags = DepFlags()) -> GemmInsn:
    return GemmInsn(False, 0, uop_end, iter_out, iter_in, 1, 0, 1, 0, 0, 0, deps)


def _run(insns, dram, cfg=CFG):
    # The hand-timed programs read SRAM they never load (its contents do not change timing).
    result = run_cycle(cfg, insns, dram, timeline=True, zeroed_sram=True)
    reference = run_fsim(cfg, insns, dram, zeroed_sram=True)
    assert np.array_equal(result.dram, reference.dram)
    assert result.counters == reference.counters
    return result


def test_one_load():
    """LOAD INP 2x4 tiles (row stride 6, one zero column on the left) push l2c; FINISH pop l2c.

    fetch: 2 insns = 32 B, beats 13..16: LOAD dispatched 16 (visible 18), FINISH 18 (visible 20).
    load: takes the LOAD in 18, starts in 19.  Row 0 = bytes [0, 64): one burst requested in 22,
      beats 32..39.  Row 1 = element 6 = bytes [96, 160): bursts [96, 128) and [128, 160) requested
      in 24 and 25, beats 40..43 and 44..47 (behind row 0).  16-byte tiles are two beats each, so
      row 0's tiles are written in 33, 35, 37, 39 (the padding column in 20), row 1's in 41..47:
      the last write in 47, E = 47 + 1 - 19 = 29, done in 48, push l2c in 49 (visible 51).
      Busy 1 + 11 writes + 1 + 1 = 14; waiting for DRAM 29 - 11 = 18; waiting for work 18.
    compute: takes FINISH in 20, pops the token in 51, done in 52: 53 cycles; token wait 51 - 21.
    """
    push, pop = DepFlags(push_next=True), DepFlags(pop_prev=True)
    load = MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 2, 4, 6, x_pad0=1, deps=push)
    r = _run([load, FinishInsn(pop)], _dram())
    s = r.stats
    assert s.cycles == 53
    assert [(x.name, x.start, x.end) for x in r.timeline.of_unit("load", "insn")] == [("LOAD.INP#0", 19, 49)]
    load_u = s.units["load"]
    assert (load_u.busy, load_u.wait_dram, load_u.wait_queue_empty) == (14, 18, 18)
    assert s.units["compute"].wait_token == 51 - 21
    assert s.dram_bytes_read == 32 + 2 * 64 and s.dram_bytes_written == 0


def test_padding_and_narrow_elements_cost_sram_writes():
    """On ``tiny`` (4-byte INP tiles on an 8-byte bus) the engine unpacks a beat one element per cycle.

    LOAD INP 1x8 tiles with 2 padding rows below (3 x 8 = 24 elements), started in 19 (as above):
    32 B = 4 beats requested in 22, from 32 on; each beat's two elements come out in the two
    cycles after it is taken, so the 8 data elements are written in 33..40, then the 16 padding
    elements in 41..56: done in 57, the slice ends in 58.  Without the padding rows: done in 41.
    """
    cfg = load_config("tiny").replace(timing=TIMING)
    push, pop = DepFlags(push_next=True), DepFlags(pop_prev=True)
    spans = []
    for pad_below in (2, 0):
        load = MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1, 8, 8, y_pad1=pad_below, deps=push)
        r = _run([load, FinishInsn(pop)], _dram(cfg), cfg)
        spans.append([(x.start, x.end) for x in r.timeline.of_unit("load", "insn")])
    assert spans == [[(19, 58)], [(19, 42)]]


def test_one_gemm():
    """LOAD UOP (2 micro-ops), GEMM uop[0,2) over a 3x2 loop, FINISH -- all on compute.

    fetch: 3 insns = 48 B, beats 13..18; visible in 18, 20, 22.
    LOAD UOP: takes it in 18, starts 19; 8 B = one beat requested in 22, taken in 32; its two
      4-byte micro-ops are written in 33 and 34: done 35, push cycle 36, free in 37.
    GEMM: takes it in 37, starts 38; 3 x 2 x 2 = 12 iterations: E = 12 + 4 + 1 = 17, done 55,
      free in 57.  FINISH: takes it in 57, starts 58, done 59: 60 cycles, GEMM utilization 12/60.
    """
    uops = [Uop(0, 0, 0), Uop(1, 1, 1)]
    insns = [MemInsn(Opcode.LOAD, MemType.UOP, 0, 0, 1, 2, 2), _gemm(2, 3, 2), FinishInsn()]
    r = _run(insns, _dram(uops=uops))
    s = r.stats
    assert s.cycles == 60
    assert [(x.name, x.start, x.end) for x in r.timeline.of_unit("compute", "insn")] == [
        ("LOAD.UOP#0", 19, 36),
        ("GEMM#1", 38, 56),
        ("FINISH#2", 58, 60),
    ]
    assert s.macs == 12 * CFG.macs_per_cycle
    assert s.gemm_utilization == pytest.approx(12 / 60)
    assert s.compute_bound_cycles == 12


def test_load_gemm_store_chain():
    """LOAD UOP; LOAD INP; LOAD WGT push l2c; GEMM pop l2c push c2s; STORE pop c2s push s2c;
    FINISH pop s2c.  Data: INP tile at byte 64, WGT tile (256 B, 4 bursts) at 256, OUT at 512.

    fetch: chunk 0 = insns 0..3, visible in 18 (C), 20 (L), 22 (L), 24 (C); chunk 1 (insns 4..5,
      4 beats) requested in 5, its data behind chunk 0's in 21..24: visible in 26 (S), 28 (C).
    compute LOAD UOP: starts 19, one beat requested in 22, taken in 32, written 33: done 34.
    load LOAD INP: starts 21, 2 beats requested in 24, in 34..35: done 36, free in 38.
      LOAD WGT: takes it in 38, starts 39, 4 bursts requested from 42, 32 beats in 52..83: done 84,
      push l2c in 85 (visible 87).  DRAM waits 13 + 43.
    compute GEMM: takes it in 36, pops the token in 87 (waited 87 - 37): E = 6, done 93, push c2s
      in 94 (visible 96).
    store: takes the STORE in 26, pops in 96 (waited 96 - 27); 2 write beats in 101..102, the
      response in 112: done 113, push s2c in 114 (visible 116).
    compute FINISH: takes it in 95, pops in 116 (waited 116 - 96), done 117: 118 cycles.
    """
    uops = [Uop(0, 0, 0)]
    insns = [
        MemInsn(Opcode.LOAD, MemType.UOP, 0, 0, 1, 1, 1),
        MemInsn(Opcode.LOAD, MemType.INP, 0, 4, 1, 1, 1),
        MemInsn(Opcode.LOAD, MemType.WGT, 0, 1, 1, 1, 1, deps=DepFlags(push_next=True)),
        _gemm(1, 1, 1, DepFlags(pop_prev=True, push_next=True)),
        MemInsn(Opcode.STORE, MemType.OUT, 0, 32, 1, 1, 1, deps=DepFlags(pop_prev=True, push_prev=True)),
        FinishInsn(DepFlags(pop_next=True)),
    ]
    r = _run(insns, _dram(uops=uops))
    s = r.stats
    assert s.cycles == 118
    spans = {x.name: (x.start, x.end) for x in r.timeline.slices if x.category == "insn"}
    assert spans == {
        "LOAD.UOP#0": (19, 35),
        "LOAD.INP#1": (21, 37),
        "LOAD.WGT#2": (39, 85),
        "GEMM#3": (87, 94),
        "STORE.OUT#4": (96, 114),
        "FINISH#5": (116, 118),
    }
    assert s.units["compute"].wait_token == (87 - 37) + (116 - 96)
    assert s.units["compute"].wait_dram == 15 - 2
    assert s.units["store"].wait_token == 96 - 27
    assert s.units["load"].wait_dram == 13 + 43
    assert s.units["store"].wait_dram == 10
    assert r.tokens_left == {"l2c": 0, "c2l": 0, "c2s": 0, "s2c": 0}
    assert s.dram_bytes_written == 16


def _backpressure_program(gemm_iters: int):
    uops = [Uop(0, 0, 0)]
    push = DepFlags(push_next=True)
    pop = DepFlags(pop_prev=True)
    insns = [
        MemInsn(Opcode.LOAD, MemType.UOP, 0, 0, 1, 1, 1),
        _gemm(1, gemm_iters, 1),
        MemInsn(Opcode.LOAD, MemType.INP, 0, 8, 1, 1, 1, deps=push),
        MemInsn(Opcode.LOAD, MemType.INP, 1, 8, 1, 1, 1, deps=push),
        _gemm(1, 1, 1, pop),
        _gemm(1, 1, 1, pop),
        FinishInsn(),
    ]
    return insns, _dram(uops=uops)


def test_backpressure_dep_queue_depth_one():
    """Load pushes two l2c tokens while compute is busy with a 40-iteration GEMM.

    fetch: chunk 0 = insns 0..3 visible in 18 (C), 20 (C), 22 (L), 24 (L); chunk 1 = insns 4..6
      (6 beats in 21..26) visible in 26, 28, 30.
    compute: LOAD UOP done 34 (as in test_one_gemm), free 36; GEMM with 40 iterations starts 37,
      E = 45, done 82, free 84.
    load: LOAD INP#2 starts 23, 2 beats requested in 26, in 36..37: done 38, push l2c in 39
      (visible 41), free 40.  LOAD INP#3 starts 41, beats 54..55, done 56, push in 57: with depth 1
      the FIFO still holds #2's token until compute pops it in 85 (its slot is free from 86), so
      load stalls 57 -> 86.
    compute: GEMM#4 takes it in 84, pops in 85, done 91, free 93; GEMM#5 pops #3's token in 94,
      done 100, free 102; FINISH done 104: 105 cycles.  With depth 2 the push in 57 succeeds and
      the total is the same 105: only load's stall differs.
    """
    insns, dram = _backpressure_program(40)
    shallow = _run(insns, dram, CFG.replace(dep_queue_depth=1))
    deep = _run(insns, dram, CFG.replace(dep_queue_depth=2))
    assert shallow.stats.cycles == deep.stats.cycles == 105
    assert shallow.stats.units["load"].wait_queue_full == 86 - 57
    assert deep.stats.units["load"].wait_queue_full == 0
    fulls = [(x.name, x.start, x.end) for x in shallow.timeline.of_unit("load", "wait")]
    assert fulls == [("full l2c", 57, 86)]


def test_backpressure_command_queue_depth_one():
    """The same program with one-entry command queues: fetch stalls behind compute.

    A unit takes the head entry when it takes the instruction (cycle a); the slot is free for
    fetch's next push from a + 1.
    fetch: #0 dispatched 16 (compute takes it in 18); #1 wants 18, its slot is free from 19
      (visible 21); #2 dispatched 20 (load takes it in 22); #3 wants 22, slot free from 23; #4
      wants 24 but compute takes #1 only when it is free again, in 36: dispatched 37; #5 wants 38,
      compute takes #4 in 84: dispatched 85; #6 wants 86, compute takes #5 in 93: dispatched 94
      (visible 96).  Stalled 1 + 1 + 13 + 47 + 8 = 70 cycles.
    load and compute run exactly as with deep queues; FINISH done 104: 105 cycles.
    """
    insns, dram = _backpressure_program(40)
    r = _run(insns, dram, CFG.replace(cmd_queue_depth=1))
    assert r.stats.cycles == 105
    assert r.stats.units["fetch"].wait_queue_full == 1 + 1 + 13 + 47 + 8
    fulls = [(x.name, x.start, x.end) for x in r.timeline.of_unit("fetch", "wait") if x.name.startswith("full")]
    assert fulls == [
        ("full cmd_compute", 18, 19),
        ("full cmd_load", 22, 23),
        ("full cmd_compute", 24, 37),
        ("full cmd_compute", 38, 85),
        ("full cmd_compute", 86, 94),
    ]


def test_deadlock_names_blocked_instruction_and_queues():
    """GEMM pops an l2c token no LOAD ever pushes: every unit ends up blocked."""
    insns = [_gemm(0, 1, 1, DepFlags(pop_prev=True)), FinishInsn()]
    with pytest.raises(DeadlockError) as info:
        run_cycle(CFG, insns, _dram())
    err = info.value
    assert "instruction 0" in err.blocked["compute"] and "l2c" in err.blocked["compute"]
    assert err.blocked["load"] == "its command queue is empty"
    assert err.queues["l2c"]["tokens_from"] == []
    assert err.queues["cmd_compute"]["instructions"] == [1]


def test_deadlock_on_full_queue():
    """Load pushes two tokens into a depth-1 l2c; compute waits for store, store for compute."""
    push = DepFlags(push_next=True)
    insns = [
        MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1, 1, 1, deps=push),
        MemInsn(Opcode.LOAD, MemType.INP, 1, 0, 1, 1, 1, deps=push),
        _gemm(0, 1, 1, DepFlags(pop_next=True)),
        MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 1, 1, 1, deps=DepFlags(pop_prev=True, push_prev=True)),
        FinishInsn(DepFlags(pop_next=True)),
    ]
    with pytest.raises(DeadlockError) as info:
        run_cycle(CFG.replace(dep_queue_depth=1), insns, _dram())
    err = info.value
    assert "instruction 1" in err.blocked["load"] and "room to push" in err.blocked["load"]
    assert "instruction 2" in err.blocked["compute"] and "s2c" in err.blocked["compute"]
    assert "instruction 3" in err.blocked["store"] and "c2s" in err.blocked["store"]
    assert err.queues["l2c"]["tokens_from"] == [0]
    assert "l2c=1/1 (from [0])" in str(err)


def test_finish_must_be_ordered_after_stores():
    """A STORE nobody waits for would race with the end of the run: rejected, as by fsim."""
    insns = [
        _gemm(0, 1, 1, DepFlags(push_next=True)),
        MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 1, 1, 1, deps=DepFlags(pop_prev=True)),
        FinishInsn(),
    ]
    with pytest.raises(ProtocolError, match="store module's instructions \\[1\\]"):
        run_cycle(CFG, insns, _dram(), zeroed_sram=True)
    with pytest.raises(ProtocolError, match="store module's instructions \\[1\\]"):
        run_fsim(CFG, insns, _dram(), zeroed_sram=True)


@pytest.mark.parametrize(
    "limit, text",
    [(Watchdog(max_cycles=30), "simulated cycles"), (Watchdog(max_seconds=1e-9), "wall-clock time")],
)
def test_watchdog(limit, text, monkeypatch):
    """A long GEMM exceeds a small cycle budget; a tiny time budget trips the wall-clock check."""
    import vdla.simulator.cycle.machine as machine

    monkeypatch.setattr(machine, "_CHUNK_CYCLES", 1)
    uops = [Uop(0, 0, 0)]
    insns = [MemInsn(Opcode.LOAD, MemType.UOP, 0, 0, 1, 1, 1), _gemm(1, 100, 1), FinishInsn()]
    with pytest.raises(SimTimeoutError, match=text):
        run_cycle(CFG, insns, _dram(uops=uops), watchdog=limit)
