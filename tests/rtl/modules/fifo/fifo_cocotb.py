"""vdla_fifo under random valid/ready: order, capacity exactly DEPTH, count and ready."""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from cocotb_utils import env_int, start


@cocotb.test()
async def random_traffic_keeps_order_and_capacity(dut):
    width, depth = env_int("FIFO_WIDTH", 8), env_int("FIFO_DEPTH", 4)
    rng = random.Random(env_int("SEED", 1))
    dut.clear.value = 0
    dut.in_valid.value = 0
    dut.out_ready.value = 0
    dut.in_data.value = 0
    await start(dut)
    sent: list[int] = []
    got: list[int] = []
    held = 0  # entries the FIFO holds, from the handshakes seen so far
    waiting = None  # a push the FIFO has not accepted: valid/ready keeps it offered, unchanged
    for cycle in range(3000):
        # Phases: fill up (never pop), drain, then random traffic.
        phase = (cycle // 200) % 3
        push = waiting is not None or rng.random() < (0.9 if phase == 0 else 0.1 if phase == 1 else 0.6)
        pop = rng.random() < (0.0 if phase == 0 else 0.9 if phase == 1 else 0.6)
        data = waiting if waiting is not None else rng.getrandbits(width)
        dut.in_valid.value = int(push)
        dut.in_data.value = data
        dut.out_ready.value = int(pop)
        await ReadOnly()
        in_ready, out_valid = int(dut.in_ready.value), int(dut.out_valid.value)
        assert int(dut.count.value) == held, f"cycle {cycle}: count {int(dut.count.value)} != {held}"
        assert in_ready == int(held < depth), f"cycle {cycle}: in_ready {in_ready} with {held}/{depth} entries"
        if push and in_ready:
            sent.append(data)
            held += 1
        waiting = data if push and not in_ready else None
        if pop and out_valid:
            got.append(int(dut.out_data.value))
            held -= 1
        await RisingEdge(dut.clk)
    assert got == sent[: len(got)], "FIFO reordered or corrupted entries"
    assert len(got) > 100  # a depth-1 FIFO passes one entry every two cycles at best


@cocotb.test()
async def clear_empties(dut):
    dut.clear.value = 0
    dut.out_ready.value = 0
    dut.in_valid.value = 1
    dut.in_data.value = 1
    await start(dut)
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.in_valid.value = 0
    dut.clear.value = 1
    await RisingEdge(dut.clk)
    dut.clear.value = 0
    await RisingEdge(dut.clk)
    await ReadOnly()
    assert int(dut.count.value) == 0 and int(dut.out_valid.value) == 0
