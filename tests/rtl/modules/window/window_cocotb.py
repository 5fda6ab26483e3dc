"""vdla_addr_window driven by a client model as vdla_top's clients behave, cycle by cycle.

The client holds its command in registers (address, count, its end byte and the window's
verdict on it) and loads the next one whenever it holds none or its command is taken; the host
moves the window (base and limit are registers) while a command waits, and the model's verdict
follows the window on the lines, as the client's contract (a_window_verdict) states it. In every cycle the window must offer exactly the
commands the rule admits -- ``addr >= base && end <= limit`` of the command and window on the
lines now, the end two bits wider than an address so a span past 2^32 never wraps in -- and
raise ``fault`` the cycle after one it refuses. A refused command waits for good (the machine
halts); the model then clears, as a new run does.
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
async def verdict_follows_the_rule(dut):
    rng = random.Random(24)
    eb = 1 << env_int("WINDOW_LOG_EB", 0)
    for name in ("clear", "in_valid", "addr", "count", "span_end", "in_window", "out_ready", "base", "limit", "halt"):
        getattr(dut, name).value = 0
    await start(dut)

    def pick() -> dict[str, int]:
        count = rng.randint(1, 8)
        if rng.random() < 0.05:  # a span that runs past the top of the 32-bit address space
            addr = (1 << 32) - eb * rng.randint(1, 8)
        else:
            addr = eb * rng.randint(0, 180)
        return {"valid": int(rng.random() < 0.8), "addr": addr, "count": count, "end": addr + count * eb}

    cur = {"valid": 0, "addr": 0, "count": 0, "end": 0}
    base, limit = 0, 0
    pending_cmd = pending_window = None  # what the client / host load at the coming edge
    expect_fault = waited = 0
    offered = refused = moved_while_waiting = 0
    await FallingEdge(dut.clk)
    for _ in range(CYCLES):
        if pending_cmd is not None:
            cur = pending_cmd
        if pending_window is not None:
            base, limit = pending_window
        dut.in_valid.value = cur["valid"]
        dut.addr.value = cur["addr"]
        dut.count.value = cur["count"]
        dut.span_end.value = cur["end"]
        dut.base.value, dut.limit.value = base, limit
        dut.in_window.value = int(_inside(cur["addr"], cur["end"], base, limit))
        dut.clear.value = 0
        dut.out_ready.value = int(rng.random() < 0.4)
        await Timer(1, unit="ns")

        ok = _inside(cur["addr"], cur["end"], base, limit)
        want = int(cur["valid"] and ok)
        assert int(dut.out_valid.value) == want, f"out_valid {int(dut.out_valid.value)} for {cur} in [{base:#x}, {limit:#x})"
        if cur["valid"]:
            assert int(dut.in_ready.value) == int(ok and bool(dut.out_ready.value))
        assert int(dut.fault.value) == expect_fault
        expect_fault = int(cur["valid"] and not ok)
        offered += want
        refused += int(cur["valid"] and not ok)

        taken = bool(cur["valid"] and dut.in_ready.value)
        waited = waited + 1 if cur["valid"] and not ok else 0
        pending_cmd = None
        if waited > 4:
            dut.clear.value = 1
            pending_cmd = {"valid": 0, "addr": 0, "count": 0, "end": 0}
            expect_fault = waited = 0
        elif not cur["valid"] or taken:
            pending_cmd = pick()
        pending_window = None
        if rng.random() < 0.08:
            lo = 16 * rng.randint(0, 20)
            pending_window = (lo, lo + 16 * rng.randint(4, 44))
            moved_while_waiting += int(cur["valid"] and not taken)
        await FallingEdge(dut.clk)
    assert offered > 200 and refused > 200 and moved_while_waiting > 50, (offered, refused, moved_while_waiting)
