"""cocotb side of test_axi_window.py: the AXI master of vdla_top never leaves the DRAM window.

Each case (a program bundle, a window, what must happen) runs on vdla_top with cocotbext-axi's
``AxiRam`` as DRAM and ``AxiLiteMaster`` as host, under random back-pressure. A monitor samples
the AXI master on every clock edge: every accepted AR and AW burst must lie inside
[WINDOW_BASE, WINDOW_LIMIT), and every W beat may strobe only bytes inside it. A faulty case
must end with done + STATUS.fault and the expected FAULT registers, and leave every RAM byte
outside the window as it was; a correct one must end without a fault, its DRAM equal to fsim's.
"""

from __future__ import annotations

import json
import os
import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam
from system_cocotb import CLOCK_NS, pauses

from vdla.runtime.program import Program
from vdla_hw import regmap

GUARD = 4096
"""Bytes of RAM beyond the program's image: a transfer past the window would land there."""


class BusWatch:
    """Every AXI burst and write strobe of the master, checked against the window as it happens."""

    def __init__(self, dut, bus_bytes: int, window: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
        self.dut, self.bus_bytes, self.window = dut, bus_bytes, window
        self.reads = self.writes = self.beats = 0
        self.outside: list[str] = []
        self.aw: list[int] = []  # addresses of the write bursts whose beats are still to come

    def _check(self, what: str, first: int, end: int) -> None:
        if first < self.window[0] or end > self.window[1]:
            self.outside.append(f"{what} bytes [{first:#x}, {end:#x}) outside the window "
                                f"[{self.window[0]:#x}, {self.window[1]:#x})")

    async def run(self) -> None:
        dut, bb = self.dut, self.bus_bytes
        beat_addr = None
        while True:
            await RisingEdge(dut.clk)
            if int(dut.m_axi_arvalid.value) and int(dut.m_axi_arready.value):
                addr, beats = int(dut.m_axi_araddr.value), int(dut.m_axi_arlen.value) + 1
                self.reads += 1
                self._check("AR burst", addr, addr + beats * bb)
            if int(dut.m_axi_awvalid.value) and int(dut.m_axi_awready.value):
                addr, beats = int(dut.m_axi_awaddr.value), int(dut.m_axi_awlen.value) + 1
                self.writes += 1
                self._check("AW burst", addr, addr + beats * bb)
                self.aw.append(addr)
            if int(dut.m_axi_wvalid.value) and int(dut.m_axi_wready.value):
                if beat_addr is None:
                    beat_addr = self.aw.pop(0) if self.aw else None
                strb = int(dut.m_axi_wstrb.value)
                self.beats += 1
                if beat_addr is None:
                    self.outside.append("a W beat before its AW burst")
                else:
                    for k in range(bb):
                        if strb >> k & 1:
                            self._check("W byte", beat_addr + k, beat_addr + k + 1)
                    beat_addr = None if int(dut.m_axi_wlast.value) else beat_addr + bb


async def run_case(dut, case: dict, rng: random.Random, ram: AxiRam, host: AxiLiteMaster,  # type: ignore[no-untyped-def]
                   size: int) -> None:
    program = Program.load(case["program"])
    cfg = program.config
    window = (case["base"], case["limit"])
    before = np.frombuffer(bytes(rng.getrandbits(8) for _ in range(size)), dtype=np.uint8).copy()
    before[: program.dram.size] = program.dram
    ram.write(0, before.tobytes())

    dut.rst_n.value = 0
    await ClockCycles(dut.clk, 8)
    dut.rst_n.value = 1
    await RisingEdge(dut.clk)
    watch = BusWatch(dut, cfg.bus_bytes, window)
    monitor = cocotb.start_soon(watch.run())

    await host.write_dword(regmap.offset("WINDOW_BASE"), window[0])
    await host.write_dword(regmap.offset("WINDOW_LIMIT"), window[1])
    assert await host.read_dword(regmap.offset("WINDOW_LIMIT")) == window[1]
    await host.write_dword(regmap.offset("INSN_ADDR"), program.insn_addr)
    await host.write_dword(regmap.offset("INSN_COUNT"), program.insn_count)
    await host.write_dword(regmap.offset("CONTROL"), regmap.CONTROL_START)
    waited = 0
    while not int(dut.done.value):
        assert waited < 200_000, f"{case['name']}: neither done nor a fault within 200,000 cycles"
        await ClockCycles(dut.clk, 16)
        waited += 16
    # Let the transfers in flight end (STATUS.bus_busy), still watching the bus.
    for _ in range(1000):
        status = await host.read_dword(regmap.offset("STATUS"))
        if not status & regmap.STATUS_BUS_BUSY:
            break
    assert not status & regmap.STATUS_BUS_BUSY, f"{case['name']}: DRAM traffic still in flight after the stop"
    await ClockCycles(dut.clk, 200)
    monitor.cancel()

    assert not watch.outside, f"{case['name']}: " + "; ".join(watch.outside[:5])
    if case.get("no_traffic"):  # nothing of it lies in the window: not one burst may leave
        assert watch.reads == watch.writes == 0, f"{case['name']}: {watch.reads} AR, {watch.writes} AW bursts"
    else:
        assert watch.reads > 0, f"{case['name']}: the monitor saw no read burst"
    after = np.frombuffer(ram.read(0, size), dtype=np.uint8)
    dut._log.info("%s: %d AR, %d AW bursts, %d W beats, all inside [%#x, %#x)", case["name"], watch.reads,
                  watch.writes, watch.beats, *window)
    if case["fault"] is None:
        assert not status & regmap.STATUS_FAULT, f"{case['name']}: unexpected fault, STATUS {status:#x}"
        expected = np.load(case["expected"])
        assert np.array_equal(after[: program.dram.size], expected), f"{case['name']}: DRAM differs from fsim"
        return
    assert status & regmap.STATUS_FAULT, f"{case['name']}: STATUS {status:#x} has no fault"
    got = [await host.read_dword(regmap.offset(r)) for r in ("FAULT_CAUSE", "FAULT_INSN")]
    assert got == case["fault"], f"{case['name']}: FAULT_CAUSE/INSN {got}, expected {case['fault']}"
    outside = np.ones(size, dtype=bool)
    outside[window[0]: window[1]] = False
    changed = np.flatnonzero((after != before) & outside)
    assert changed.size == 0, f"{case['name']}: {changed.size} bytes outside the window changed (first {changed[0]:#x})"


@cocotb.test()
async def window_holds(dut) -> None:  # type: ignore[no-untyped-def]
    cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
    rng = random.Random(int(os.environ.get("VDLA_SEED", "3")))
    cases = json.loads(os.environ["VDLA_WINDOW_CASES"])
    # One RAM model and one host for every case (a second model on the same bus would answer too).
    bus_bytes = Program.load(cases[0]["program"]).config.bus_bytes
    image = max(Program.load(c["program"]).dram.size for c in cases)
    size = -(-(image + GUARD) // bus_bytes) * bus_bytes
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst_n, reset_active_level=False, size=size)
    host = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst_n, reset_active_level=False)
    for channel in (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                    ram.read_if.ar_channel, ram.read_if.r_channel):
        channel.set_pause_generator(pauses(rng, 0.3))
    for case in cases:
        await run_case(dut, case, rng, ram, host, size)
