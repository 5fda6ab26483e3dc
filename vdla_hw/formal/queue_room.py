"""The live tasks' reduced queues, checked in simulation: the same run, cycle for cycle, at both depths.

The whole-machine liveness tasks elaborate ``vdla_top`` with command and token queues sized to
their program (:func:`~vdla_hw.formal.liveness.live_config`) instead of the config's. The formal
run itself asserts the part that makes this sound -- no reduced queue ever fills
(``a_live_room_cmd``/``a_live_room_dep`` in ``vdla_top``) -- and this module checks the consequence
on the Verilated RTL: the program runs on ``vdla_top`` at the config's depths and at the reduced
ones, under several DRAM latencies, and every cycle from the start to ``done`` shows the same
machine (the debug probe's instruction counters, gate states and queue occupancies, the AXI
handshakes, ``done``), and the run ends with the same STATUS, FAULT registers, cycle counter and
DRAM bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vdla_hw.config import HwConfig, load_config
from vdla_hw.formal.liveness import INSN_ADDR, LivenessProgram, live_config
from vdla_hw.harness import DramLatency, RtlSim, RunStatus

# Ports of vdla_top sampled every cycle besides the debug probe: the AXI handshakes and done.
TRACE_PORTS = ("m_axi_arvalid", "m_axi_arready", "m_axi_rvalid", "m_axi_rready", "m_axi_awvalid", "m_axi_awready",
               "m_axi_wvalid", "m_axi_wready", "m_axi_bvalid", "m_axi_bready", "done")
# The end state read over AXI-lite after done.
END_REGISTERS = ("STATUS", "CYCLES_LO", "CYCLES_HI", "FAULT_CAUSE", "FAULT_INSN", "FAULT_ADDR", "FAULT_ITER")
# Latencies (read, write) the check runs each program under: the fastest DRAM, the liveness tasks'
# bound L = 2, unequal directions, and the config's own.
CHECK_LATENCIES = ((1, 1), (2, 2), (1, 3), (3, 1))


@dataclass(frozen=True)
class LiveRun:
    """One run of a liveness program on the Verilated ``vdla_top``."""

    config: str
    latency: DramLatency
    trace: tuple[tuple[int, ...], ...]
    """Per cycle from the CONTROL write to done: the debug probe's values, then :data:`TRACE_PORTS`."""
    columns: tuple[str, ...]
    registers: dict[str, int]
    dram: bytes
    max_cmd: int
    """The most entries any command queue held in the run."""
    max_tokens: int
    """The most tokens any token queue held in the run."""


def run_live_program(cfg: HwConfig | str, prog: LivenessProgram, latency: DramLatency, *,
                     rtl_dir: Path | str | None = None, max_cycles: int = 10_000) -> LiveRun:
    """Run ``prog`` on ``cfg``'s ``vdla_top`` (Verilator), one cycle at a time, recording every cycle.

    Raises ``RuntimeError`` naming the config and latency when the run does not end within ``max_cycles``."""
    cfg = load_config(cfg)
    with RtlSim(cfg, latency=latency, rtl_dir=rtl_dir) as sim:
        sim.load_dram(prog.dram, size=2 * prog.dram.size)
        sim.start(INSN_ADDR, len(prog.insns), prog.window)
        ports = [sim.port(p) for p in TRACE_PORTS]
        names = tuple(sorted(sim.debug()))
        rows = []
        for _ in range(max_cycles):
            dbg = sim.debug()
            rows.append(tuple(dbg[n] for n in names) + tuple(int(sim.peek(p)) for p in ports))
            if sim.run(1) == RunStatus.DONE:
                break
        else:
            raise RuntimeError(f"{cfg.name}: the liveness program did not end within {max_cycles} cycles "
                               f"(DRAM latency {latency}); see vdla hw prove --task live_*")
        registers = {r: sim.read_reg(r) for r in END_REGISTERS}
        dram = sim.read_dram(0, prog.dram.size).tobytes()
    columns = names + TRACE_PORTS
    cmd = [columns.index(c) for c in ("cmd_load", "cmd_compute", "cmd_store")]
    tok = [columns.index(c) for c in ("tok_l2c", "tok_c2l", "tok_c2s", "tok_s2c")]
    return LiveRun(cfg.name, latency, tuple(rows), columns, registers, dram,
                   max(row[k] for row in rows for k in cmd), max(row[k] for row in rows for k in tok))


def first_difference(a: LiveRun, b: LiveRun) -> str | None:
    """Where two runs of one program differ (the first cycle and its signals, or the end state), or None."""
    if a.columns != b.columns:
        return f"the recorded signals differ: {a.columns} against {b.columns}"
    for cycle, (ra, rb) in enumerate(zip(a.trace, b.trace)):
        if ra != rb:
            diff = ", ".join(f"{c} {x} / {y}" for c, x, y in zip(a.columns, ra, rb) if x != y)
            return f"cycle {cycle} after the start: {diff} ({a.config} / {b.config})"
    if len(a.trace) != len(b.trace):
        return f"the runs end at different cycles: {len(a.trace)} ({a.config}) against {len(b.trace)} ({b.config})"
    if a.registers != b.registers:
        return f"the end registers differ: {a.registers} ({a.config}) against {b.registers} ({b.config})"
    if a.dram != b.dram:
        at = int(np.flatnonzero(np.frombuffer(a.dram, np.uint8) != np.frombuffer(b.dram, np.uint8))[0])
        return f"the DRAM differs from byte {at:#x} ({a.config} / {b.config})"
    return None


def compare_queue_depths(cfg: HwConfig | str, prog: LivenessProgram,
                         latencies: Sequence[tuple[int, int]] = CHECK_LATENCIES, *,
                         rtl_dir: Path | str | None = None) -> list[tuple[LiveRun, LiveRun]]:
    """``prog`` run at ``cfg``'s queue depths and at :func:`live_config`'s, under each latency: pairs of runs
    (full, reduced). Compare them with :func:`first_difference`."""
    cfg = load_config(cfg)
    small = live_config(cfg, prog)
    pairs = []
    for read, write in latencies:
        lat = DramLatency(read, write)
        pairs.append((run_live_program(cfg, prog, lat, rtl_dir=rtl_dir),
                      run_live_program(small, prog, lat, rtl_dir=rtl_dir)))
    return pairs
