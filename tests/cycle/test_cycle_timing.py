"""Exact cycle counts of small programs, worked out by hand.

Every test pins the timing parameters (``TIMING`` below) so the arithmetic in
the docstrings stays valid when the presets are re-calibrated against the RTL.
With the default 64-bit bus a beat moves 8 bytes.  A DRAM read issued at cycle
t (all bursts of an instruction in flight at once) delivers its first beat at
t + 10 at the earliest, then one beat per cycle on the shared bus; a write puts
its beats on the bus at once and completes 10 cycles after its last beat.
Instructions are fetched from DRAM byte 0, 16 bytes each, in 64-byte chunks
(four instructions); when a chunk arrives the next one is requested, and the
arrived one is dispatched one instruction every two cycles.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulator.cycle import run_cycle
from simulator.errors import DeadlockError, ProtocolError, SimTimeoutError
from simulator.cycle.machine import Watchdog
from simulator.fsim import run_fsim
from vdla_hw.config import load_config
from vdla_hw.isa import DepFlags, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop

TIMING = {
    "dram_latency": 10,
    "dram_burst_bytes": 64,
    "fetch_cycles_per_insn": 2,
    "gemm_pipeline_depth": 4,
    "alu_pipeline_depth": 3,
    "alu_ii": 2,
    "sram_write_cycles": 1,
    "insn_overhead": 1,
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
    result = run_cycle(cfg, insns, dram, timeline=True)
    reference = run_fsim(cfg, insns, dram)
    assert np.array_equal(result.dram, reference.dram)
    assert result.counters == reference.counters
    return result


def test_one_load():
    """LOAD INP 2x4 tiles (row stride 6, one zero column on the left) push l2c; FINISH pop l2c.

    fetch: 2 insns = 32 B: request 0, beats 10..14; LOAD dispatched at 16, FINISH at 18.
    load: t0 = 16 + 1 (overhead) = 17; both rows requested at 17: row 0 = bytes [0, 64),
      row 1 = element 6 = bytes [96, 160), two bursts across the 128 boundary; 16 beats
      stream 27..43.  The SRAM writer needs 10 elements (2 of them padding) from 17: done
      by 27; the 8 data elements need 17 + 10 + 8 = 35 at least; the beats end later, at 43,
      and no padding follows the last data element.  Push l2c at 43.
    compute: FINISH pops the token at 43, 1 cycle: total 44.
    """
    push, pop = DepFlags(push_next=True), DepFlags(pop_prev=True)
    load = MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 2, 4, 6, x_pad0=1, deps=push)
    r = _run([load, FinishInsn(pop)], _dram())
    s = r.stats
    assert s.cycles == 44
    assert [(x.name, x.start, x.end) for x in r.timeline.of_unit("load", "insn")] == [("LOAD.INP#0", 16, 43)]
    load_u = s.units["load"]
    assert (load_u.busy, load_u.wait_dram, load_u.wait_queue_empty) == (1 + 16, 10, 16)
    assert s.units["compute"].wait_token == 43 - 18
    assert s.dram_bytes_read == 32 + 2 * 64 and s.dram_bytes_written == 0


def test_padding_and_narrow_elements_cost_sram_writes():
    """On ``tiny`` (4-byte INP tiles on an 8-byte bus) the SRAM writer, not DRAM, sets the pace.

    LOAD INP 1x8 tiles with 2 padding rows below (3 x 8 = 24 elements), dispatched at 16:
    t0 = 17; 32 B = 4 beats at 27..31, but 8 data elements need 17 + 10 + 8 = 35, then the
    16 trailing padding elements: 51.  (Without the padding rows: 35.)
    """
    cfg = load_config("tiny").replace(timing=TIMING)
    push, pop = DepFlags(push_next=True), DepFlags(pop_prev=True)
    spans = []
    for pad_below in (2, 0):
        load = MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1, 8, 8, y_pad1=pad_below, deps=push)
        r = _run([load, FinishInsn(pop)], _dram(cfg), cfg)
        spans.append([(x.start, x.end) for x in r.timeline.of_unit("load", "insn")])
    assert spans == [[(16, 51)], [(16, 35)]]


def test_one_gemm():
    """LOAD UOP (2 micro-ops), GEMM uop[0,2) over a 3x2 loop, FINISH -- all on compute.

    fetch: 3 insns = 48 B, one burst: request 0, data 10..16; dispatch at 18, 20, 22.
    LOAD UOP: starts 18, overhead -> 19; 8 B at byte 0 = 1 beat at 29..30, but two micro-ops
      take two SRAM writes after the latency: 19 + 10 + 2 = 31.
    GEMM: starts 31; 1 + 4 (pipeline fill) + 3*2*2 = 12 iterations -> 17 cycles -> 48.
    FINISH: 48 + 1 = 49.  Total 49, GEMM utilization 12/49.
    """
    uops = [Uop(0, 0, 0), Uop(1, 1, 1)]
    insns = [MemInsn(Opcode.LOAD, MemType.UOP, 0, 0, 1, 2, 2), _gemm(2, 3, 2), FinishInsn()]
    r = _run(insns, _dram(uops=uops))
    s = r.stats
    assert s.cycles == 49
    assert [(x.name, x.start, x.end) for x in r.timeline.of_unit("compute", "insn")] == [
        ("LOAD.UOP#0", 18, 31),
        ("GEMM#1", 31, 48),
        ("FINISH#2", 48, 49),
    ]
    assert s.macs == 12 * CFG.macs_per_cycle
    assert s.gemm_utilization == pytest.approx(12 / 49)
    assert s.compute_bound_cycles == 12


def test_load_gemm_store_chain():
    """LOAD UOP; LOAD INP; LOAD WGT push l2c; GEMM pop l2c push c2s; STORE pop c2s push s2c;
    FINISH pop s2c.  Data: INP tile at byte 64, WGT tile at byte 256 (32 beats), OUT at 512.

    fetch: chunk 1 = insns 0..3: beats 10..18; chunk 2 (insns 4..5) requested at 18: beats
      28..32; dispatch 20 (C), 22 (L), 24 (L), 26 (C), then 34 (S), 36 (C).
    compute LOAD UOP: 20 -> 21, its beat could come at 31 but fetch holds the bus until 32:
      beat 32..33.
    load LOAD INP: 22 -> 23, 2 beats at 33..35.  LOAD WGT: 35 -> 36, 32 beats at 46..78; push.
    compute GEMM: pops l2c at 78 (waited 78 - 33); 1 + 4 (fill) + 1 iteration -> 84; push c2s.
    store: pops c2s at 84 (dispatched at 34), 1 -> 85; 2 write beats 85..87, response at 97; push.
    compute FINISH: pops s2c at 97, 1 -> 98.
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
    assert s.cycles == 98
    spans = {x.name: (x.start, x.end) for x in r.timeline.slices if x.category == "insn"}
    assert spans == {
        "LOAD.UOP#0": (20, 33),
        "LOAD.INP#1": (22, 35),
        "LOAD.WGT#2": (35, 78),
        "GEMM#3": (78, 84),
        "STORE.OUT#4": (84, 97),
        "FINISH#5": (97, 98),
    }
    assert s.units["compute"].wait_token == (78 - 33) + (97 - 84)
    assert s.units["compute"].wait_dram == 33 - 21 - 1
    assert s.units["store"].wait_token == 84 - 34
    assert s.units["load"].wait_dram == 10 + 10
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

    fetch: chunk 1 = insns 0..3, beats 10..18, dispatch 20 (C), 22 (C), 24 (L), 26 (L);
      chunk 2 = insns 4..6 (48 B) requested at 18: beats 28..34, dispatch 36, 38, 40.
    compute: LOAD UOP 20 -> 21, its beat waits for fetch's chunk: 34..35; GEMM with 40
      iterations: 35 + 1 + 4 + 40 = 80.
    load: LOAD INP#2 starts 24 -> 25, 2 beats 35..37, push l2c (empty).
      LOAD INP#3 37 -> 38, 2 beats 48..50, push l2c: with depth 1 the FIFO still holds
      #2's token, so load stalls 50 -> 80 until compute pops it.
    compute: GEMM#4 pops at 80 -> 86; GEMM#5 pops #3's token -> 92; FINISH 92 -> 93.
    With depth 2 the push at 50 succeeds and the total is the same 93: only load's stall differs.
    """
    insns, dram = _backpressure_program(40)
    shallow = _run(insns, dram, CFG.replace(dep_queue_depth=1))
    deep = _run(insns, dram, CFG.replace(dep_queue_depth=2))
    assert shallow.stats.cycles == deep.stats.cycles == 93
    assert shallow.stats.units["load"].wait_queue_full == 80 - 50
    assert deep.stats.units["load"].wait_queue_full == 0
    fulls = [(x.name, x.start, x.end) for x in shallow.timeline.of_unit("load", "wait")]
    assert fulls == [("full l2c", 50, 80)]


def test_backpressure_command_queue_depth_one():
    """The same program with one-entry command queues: fetch stalls behind compute.

    A unit takes the head command when it starts it, so a one-entry queue holds the next one.
    fetch: dispatch #0 at 20 (compute takes it), #1 at 22 (waits in cmd_compute), #2 at 24
      (load takes it), #3 at 26 (waits in cmd_load); chunk 2 arrives at 34 as before;
      #4 at 36 fits (compute took #1 at 35); #5 at 38 finds cmd_compute full until compute
      takes #4 at 80; #6 decoded at 82 waits until compute takes #5 at 86: 42 + 4 stalled.
    load and compute run exactly as with deep queues; FINISH 92 -> 93.
    """
    insns, dram = _backpressure_program(40)
    r = _run(insns, dram, CFG.replace(cmd_queue_depth=1))
    assert r.stats.cycles == 93
    assert r.stats.units["fetch"].wait_queue_full == (80 - 38) + (86 - 82)
    fulls = [(x.name, x.start, x.end) for x in r.timeline.of_unit("fetch", "wait") if x.name.startswith("full")]
    assert fulls == [("full cmd_compute", 38, 80), ("full cmd_compute", 82, 86)]


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
        run_cycle(CFG, insns, _dram())
    with pytest.raises(ProtocolError, match="store module's instructions \\[1\\]"):
        run_fsim(CFG, insns, _dram())


@pytest.mark.parametrize(
    "limit, text",
    [(Watchdog(max_cycles=30), "simulated cycles"), (Watchdog(max_seconds=1e-9), "wall-clock time")],
)
def test_watchdog(limit, text, monkeypatch):
    """A long GEMM exceeds a small cycle budget; a tiny time budget trips the wall-clock check."""
    import simulator.cycle.machine as machine

    monkeypatch.setattr(machine, "_CHUNK_CYCLES", 1)
    uops = [Uop(0, 0, 0)]
    insns = [MemInsn(Opcode.LOAD, MemType.UOP, 0, 0, 1, 1, 1), _gemm(1, 100, 1), FinishInsn()]
    with pytest.raises(SimTimeoutError, match=text):
        run_cycle(CFG, insns, _dram(uops=uops), watchdog=limit)
