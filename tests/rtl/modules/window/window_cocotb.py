"""vdla_addr_window driven by a client model as vdla_top's clients behave, cycle by cycle.

The client holds its command in registers and loads them, with ``load`` and its verdict of the
next command on ``verdict_d``, whenever it holds none or its command is taken; the host moves
the window (base and limit are registers, ``window_new`` is high the cycle after) while a
command waits. In every cycle the window must offer exactly the commands the combinational
rule admits -- ``addr >= base && end <= limit`` of the command and window on the lines now,
never in the cycle after the window moved -- and raise ``fault`` the cycle after one it
refuses.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge, Timer

from cocotb_utils import env_int, start

CYCLES = 4000


def _inside(addr: int, end: int, base: int, limit: int) -> bool:
    return addr >= base and end <= limit


@cocotb.test()
async def registered_verdict_matches_the_rule(dut):
    rng = random.Random(24)
    log_eb = env_int("WINDOW_LOG_EB", 0)
    eb = 1 << log_eb
    for name in ("clear", "in_valid", "addr", "count", "span_end", "load", "verdict_d", "out_ready",
                 "base", "limit", "window_new", "halt"):
        getattr(dut, name).value = 0
    await start(dut)

    def pick() -> tuple[int, int, int]:
        count = rng.randint(1, 8)
        if rng.random() < 0.05:  # a span that wraps past the top of the 32-bit address space
            addr = (1 << 32) - eb * rng.randint(1, 8)
        else:
            addr = eb * rng.randint(0, 180)
        return addr, count, addr + count * eb

    cur = {"valid": 0, "addr": 0, "count": 0, "end": 0}
    base, limit, window_new = 0, 0, 0
    pending_cmd = None      # the command the client loads at the coming edge
    pending_window = None   # the window the host writes at the coming edge
    expect_fault = 0
    waited = 0  # cycles the current command has been refused
    offered = refused = moved_while_waiting = 0
    await FallingEdge(dut.clk)
    for _ in range(CYCLES):
        # the registers' values after the edge just passed
        if pending_cmd is not None:
            cur = pending_cmd
        window_new = int(pending_window is not None)
        if pending_window is not None:
            base, limit = pending_window
        dut.in_valid.value = cur["valid"]
        dut.addr.value = cur["addr"]
        dut.count.value = cur["count"]
        dut.span_end.value = cur["end"]
        dut.base.value, dut.limit.value, dut.window_new.value = base, limit, window_new
        # without `load` a client's verdict_d is that of a command it may load later (the next row)
        dut.load.value = 0
        later_addr, _, later_end = pick()
        dut.verdict_d.value = int(_inside(later_addr, later_end, base, limit))
        dut.clear.value = 0
        dut.out_ready.value = int(rng.random() < 0.4)
        await Timer(1, unit="ns")

        ok = _inside(cur["addr"], cur["end"], base, limit) and not window_new
        want = int(cur["valid"] and ok)
        assert int(dut.out_valid.value) == want, (
            f"out_valid {int(dut.out_valid.value)} for {cur} in [{base:#x}, {limit:#x}) window_new {window_new}")
        if cur["valid"]:  # (ready without valid is not looked at: right after `clear` it may differ)
            assert int(dut.in_ready.value) == int(ok and bool(dut.out_ready.value))
        assert int(dut.fault.value) == expect_fault
        expect_fault = int(cur["valid"] and not ok and not window_new)
        offered += want
        refused += int(cur["valid"] and not ok)

        taken = bool(cur["valid"] and dut.in_ready.value)
        waited = waited + 1 if cur["valid"] and not ok else 0
        pending_cmd = None
        if waited > 4:  # a refused command waits for good (the machine halts): a new run clears it
            dut.clear.value = 1
            pending_cmd = {"valid": 0, "addr": 0, "count": 0, "end": 0}
            expect_fault = 0
            waited = 0
        elif not cur["valid"] or taken:
            addr, count, end = pick()
            pending_cmd = {"valid": int(rng.random() < 0.8), "addr": addr, "count": count, "end": end}
            dut.load.value = 1
            # the client judges its next command by the window on the lines now, as the window would
            dut.verdict_d.value = int(_inside(addr, end, base, limit))
        pending_window = None
        if rng.random() < 0.08:
            lo = 16 * rng.randint(0, 20)
            pending_window = (lo, lo + 16 * rng.randint(4, 44))
            moved_while_waiting += int(cur["valid"] and not taken)
        await FallingEdge(dut.clk)
    assert offered > 200 and refused > 200 and moved_while_waiting > 50, (offered, refused, moved_while_waiting)
