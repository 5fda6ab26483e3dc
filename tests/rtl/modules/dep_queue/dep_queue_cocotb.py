"""Dependency tokens between two gates: pops block until the matching push, pushes block on a
full queue (exactly DEP_QUEUE_DEPTH tokens), pops precede the executor and pushes follow it."""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from cocotb_utils import env_int, start, test_config
from vdla_hw.isa import DepFlags, FinishInsn


class Side:
    """Feeds one gate its instructions and runs a fake executor with random latency."""

    def __init__(self, dut, prefix: str, flags: list[DepFlags], rng: random.Random, isa) -> None:
        self.dut, self.p, self.rng = dut, prefix, rng
        self.words = [isa.encode(FinishInsn(deps=f)) for f in flags]
        self.flags = flags
        self.starts: list[int] = []
        self.dones: list[int] = []
        self.enabled = True

    def sig(self, name: str):
        return getattr(self.dut, f"{self.p}_{name}")

    async def run(self, clock: list[int]) -> None:
        k = 0
        busy_until = None
        self.sig("cmd_valid").value = 0
        self.sig("exec_done").value = 0
        while True:
            self.sig("exec_done").value = int(busy_until is not None and clock[0] >= busy_until)
            feed = self.enabled and k < len(self.words)
            self.sig("cmd_valid").value = int(feed)
            self.sig("cmd_insn").value = self.words[k] if feed else 0
            await ReadOnly()
            if feed and int(self.sig("cmd_ready").value):
                k += 1
            if int(self.sig("exec_start").value):
                self.starts.append(clock[0])
                busy_until = clock[0] + self.rng.randint(1, 4)
            if busy_until is not None and clock[0] >= busy_until:
                self.dones.append(clock[0])
                busy_until = None
            await RisingEdge(self.dut.clk)


def quiet(dut) -> None:
    """Drop the executors' and queues' inputs a previous test may have left high: a done
    pulse while the gate is idle breaks the executor contract (a_gate_exec_done)."""
    for side in ("a", "b"):
        getattr(dut, f"{side}_exec_done").value = 0
        getattr(dut, f"{side}_cmd_valid").value = 0


async def count_cycles(dut, clock: list[int]) -> None:
    while True:
        await RisingEdge(dut.clk)
        clock[0] += 1


@cocotb.test()
async def tokens_order_the_two_streams(dut):
    cfg = test_config()
    depth = cfg.dep_queue_depth
    rng = random.Random(env_int("SEED", 3))
    n = 3 * depth
    # A produces a token per instruction and, after the first `depth`, consumes B's replies;
    # B consumes A's tokens and replies to each: a two-thread ping-pong that needs both queues.
    a_flags = [DepFlags(push_next=True, pop_next=k >= depth) for k in range(n)]
    b_flags = [DepFlags(pop_prev=True, push_prev=True) for _ in range(n)]
    clock = [0]
    quiet(dut)
    await start(dut)
    a = Side(dut, "a", a_flags, rng, cfg.isa)
    b = Side(dut, "b", b_flags, rng, cfg.isa)
    b.enabled = False
    cocotb.start_soon(count_cycles(dut, clock))
    cocotb.start_soon(a.run(clock))
    cocotb.start_soon(b.run(clock))
    # With B stalled, A runs exactly `depth` instructions: the next one waits for a reply token.
    for _ in range(40 * depth):
        await RisingEdge(dut.clk)
    assert len(a.dones) == depth, f"A retired {len(a.dones)} instructions with B stalled; expected {depth}"
    b.enabled = True
    for _ in range(200 * n):
        await RisingEdge(dut.clk)
        if len(a.dones) == n and len(b.dones) == n:
            break
    assert len(a.dones) == n and len(b.dones) == n, f"stuck: A {len(a.dones)}/{n}, B {len(b.dones)}/{n}"
    for k in range(n):
        # B's k-th instruction pops A's k-th token, pushed after A's k-th instruction completed.
        assert b.starts[k] > a.dones[k], f"B[{k}] started at {b.starts[k]} before A[{k}] completed at {a.dones[k]}"
        if k >= depth:
            assert a.starts[k] > b.dones[k - depth], f"A[{k}] started before B[{k - depth}] replied"


@cocotb.test()
async def full_queue_blocks_the_push(dut):
    cfg = test_config()
    depth = cfg.dep_queue_depth
    rng = random.Random(5)
    n = depth + 3
    clock = [0]
    quiet(dut)
    await start(dut)
    a = Side(dut, "a", [DepFlags(push_next=True)] * n, rng, cfg.isa)
    b = Side(dut, "b", [DepFlags(pop_prev=True)] * n, rng, cfg.isa)
    b.enabled = False
    cocotb.start_soon(count_cycles(dut, clock))
    cocotb.start_soon(a.run(clock))
    cocotb.start_soon(b.run(clock))
    for _ in range(40 * n):
        await RisingEdge(dut.clk)
    # `depth` tokens fill the queue; instruction depth+1 ran but cannot push, so the one after never starts.
    assert len(a.starts) == depth + 1, f"A started {len(a.starts)} instructions against a full queue of {depth}"
    b.enabled = True
    for _ in range(40 * n):
        await RisingEdge(dut.clk)
    assert len(a.dones) == n and len(b.dones) == n
