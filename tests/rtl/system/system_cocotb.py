"""cocotb side of the system tests: one VDLA program on vdla_top, DRAM checked against fsim.

The pytest side (test_system.py) writes the program bundle and fsim's final DRAM and
names them in the environment.  Here cocotbext-axi's ``AxiRam`` is the DRAM and its
``AxiLiteMaster`` the host: it writes INSN_ADDR, INSN_COUNT and CONTROL.start like the
board driver, waits for done, reads STATUS and the cycle counter, and compares DRAM
bit for bit.  Every AXI channel gets a random pause generator (back-pressure on the
channels the RAM receives, idle cycles on the ones it drives).  A watchdog fails a run
that exceeds its cycle budget and reports what each module was working on, read from
the debug probe bound into vdla_top.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from vdla.runtime.program import Program
from vdla_hw import regmap
from vdla_hw.harness.hang import describe_machine

CLOCK_NS = 10
POLL_CYCLES = 64
PROBE_SIGNALS = ("fetch_count", "load_count", "compute_count", "store_count", "load_state", "compute_state",
                 "store_state", "cmd_load", "cmd_compute", "cmd_store", "tok_l2c", "tok_c2l", "tok_c2s", "tok_s2c")


def pauses(rng: random.Random, probability: float) -> Iterator[bool]:
    """An endless random pause pattern: bursts of stall cycles with ``probability`` overall."""
    while True:
        if rng.random() < probability:
            for _ in range(rng.randint(1, 4)):
                yield True
        else:
            yield False


def probe_state(dut) -> dict[str, int]:  # type: ignore[no-untyped-def]
    probe = dut.u_probe
    return {name: int(getattr(probe, f"dbg_{name}").value) for name in PROBE_SIGNALS}


def first_difference(program: Program, expected: np.ndarray, got: np.ndarray) -> str:
    """Which named buffers differ, and the first differing byte of each."""
    lines = []
    diff = np.flatnonzero(expected != got)
    for spec in sorted(program.buffers.values(), key=lambda s: s.offset):
        inside = diff[(diff >= spec.offset) & (diff < spec.offset + spec.nbytes)]
        if inside.size:
            k = int(inside[0])
            lines.append(f"buffer {spec.name!r} ({spec.kind}): {inside.size}/{spec.nbytes} bytes differ, first at byte "
                         f"{k - spec.offset} (expected 0x{expected[k]:02x}, got 0x{got[k]:02x})")
    return "\n".join(lines) or f"{diff.size} bytes differ outside every named buffer (first at {int(diff[0])})"


@cocotb.test()
async def run_program(dut) -> None:  # type: ignore[no-untyped-def]
    program = Program.load(os.environ["VDLA_PROGRAM"])
    expected = np.load(os.environ["VDLA_EXPECTED"])
    max_cycles = int(os.environ["VDLA_MAX_CYCLES"])
    pressure = float(os.environ.get("VDLA_PAUSE", "0.3"))
    rng = random.Random(int(os.environ.get("VDLA_SEED", "1")))
    cfg = program.config

    cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
    size = -(-program.dram.size // cfg.bus_bytes) * cfg.bus_bytes
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst_n, reset_active_level=False, size=size)
    host = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst_n, reset_active_level=False)
    if pressure > 0:
        for channel in (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                        ram.read_if.ar_channel, ram.read_if.r_channel):
            channel.set_pause_generator(pauses(rng, pressure))
    ram.write(0, program.dram.tobytes())

    dut.rst_n.value = 0
    await ClockCycles(dut.clk, 8)
    dut.rst_n.value = 1
    await RisingEdge(dut.clk)

    await host.write_dword(regmap.offset("WINDOW_BASE"), 0)
    await host.write_dword(regmap.offset("WINDOW_LIMIT"), program.dram.size)
    await host.write_dword(regmap.offset("INSN_ADDR"), program.insn_addr)
    await host.write_dword(regmap.offset("INSN_COUNT"), program.insn_count)
    await host.write_dword(regmap.offset("CONTROL"), regmap.CONTROL_START)

    waited = 0
    while not int(dut.done.value):
        if waited >= max_cycles:
            report = describe_machine(program.instructions, probe_state(dut), cfg.cmd_queue_depth, cfg.dep_queue_depth)
            raise AssertionError(f"watchdog: FINISH did not retire within {max_cycles:,} cycles\n{report}")
        await ClockCycles(dut.clk, POLL_CYCLES)
        waited += POLL_CYCLES

    status = await host.read_dword(regmap.offset("STATUS"))
    assert status & regmap.STATUS_DONE and not status & regmap.STATUS_BUSY, f"STATUS = {status:#x} after done"
    cycles = await host.read_dword(regmap.offset("CYCLES_LO")) | (await host.read_dword(regmap.offset("CYCLES_HI")) << 32)
    dut._log.info("%s on %s: %d RTL cycles", os.environ.get("VDLA_CASE", "program"), cfg.name, cycles)
    got = np.frombuffer(ram.read(0, program.dram.size), dtype=np.uint8)
    if not np.array_equal(got, expected):
        raise AssertionError("DRAM differs from fsim:\n" + first_difference(program, expected, got))
