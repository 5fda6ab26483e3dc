"""The functional simulator: a decoupled access-execute machine without time.

Fetch dispatches instructions in program order into three bounded command
queues (load, compute, store); each module runs its own instructions in order,
popping dependency tokens before an instruction and pushing them after it.  The
modules are interleaved round-robin, one instruction each per round, so a
correctly synchronized program produces the same memory image it would on the
hardware; a program whose modules can all no longer move raises
:class:`DeadlockError` with the full queue state instead of hanging.

Tokens carry vector clocks (how many instructions of each module are known to
have retired), so FINISH can check that every LOAD and STORE is ordered before it
by a chain of tokens -- a program that merely happened to finish them first in
this schedule, but whose DRAM result would race with ``done`` on the hardware,
is rejected.  An unordered trailing load cannot change the result, but it may
never run before FINISH here while the hardware runs it -- so a fault in it would
go unseen -- and the cycle model rejects it too.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import Insn, Module

from vdla.simulator.checks import check_program
from vdla.simulator.window import Window
from vdla.simulator.counters import Counters
from vdla.simulator.errors import DeadlockError, ProtocolError, SimTimeoutError
from vdla.simulator.semantics import execute
from vdla.simulator.state import MachineState
from vdla.simulator.tokens import DEP_QUEUES, TokenOps, describe, waiting_for

DEFAULT_MAX_STEPS = 50_000_000
"""Default watchdog: the most instructions one run may execute."""

_MODULES = (Module.LOAD, Module.COMPUTE, Module.STORE)


@dataclass(frozen=True)
class FsimResult:
    """The outcome of a functional run: the final DRAM image and the work counters.

    ``tokens_left`` is the number of tokens still in each dependency queue when
    FINISH retired (non-zero means some push was never consumed).
    """

    dram: np.ndarray
    counters: dict[str, int]
    tokens_left: dict[str, int]


def run_fsim(
    cfg: HwConfig,
    insns: Iterable[Insn],
    dram: np.ndarray,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    zeroed_sram: bool = False,
    window: Window | None = None,
) -> FsimResult:
    """Run a program bit-exactly on a copy of ``dram`` and return the final image and counters.

    Raises :class:`~vdla.simulator.errors.ProtocolError` for an illegal program,
    :class:`~vdla.simulator.errors.MemoryAccessError` for an out-of-range access,
    :class:`~vdla.simulator.errors.UninitializedReadError` for a read of SRAM no instruction wrote
    (unless ``zeroed_sram``, which treats SRAM as starting at zero),
    :class:`~vdla.simulator.errors.DeadlockError` when no module can progress before FINISH,
    and :class:`~vdla.simulator.errors.SimTimeoutError` after ``max_steps`` instructions.
    ``window`` is the DRAM byte range ``[base, limit)`` DMA may touch (default: all of ``dram``);
    a LOAD/STORE outside raises :class:`~vdla.simulator.errors.MemoryAccessError`, as the hardware faults.
    """
    program = tuple(insns)
    ops = check_program(cfg, program)
    machine = _Machine(cfg, program, ops, MachineState(cfg, dram, zeroed_sram=zeroed_sram, window=window), max_steps)
    machine.run()
    left = {q: len(tokens) for q, tokens in zip(DEP_QUEUES, machine.queues)}
    return FsimResult(machine.state.dram, machine.counters.as_dict(), left)


class _Machine:
    """Round-robin scheduler of fetch and the three modules over shared queues."""

    def __init__(self, cfg: HwConfig, insns: Sequence[Insn], ops: list[TokenOps], state: MachineState, max_steps: int) -> None:
        self.cfg = cfg
        self.insns = insns
        self.state = state
        self.max_steps = max_steps
        self.counters = Counters()
        qid = {q: k for k, q in enumerate(DEP_QUEUES)}
        # Per instruction: its module and the queue ids it pops/pushes, resolved once.
        self.module = [int(o.module) for o in ops]
        self.pops = [tuple(qid[q] for q in o.pops) for o in ops]
        self.pushes = [tuple(qid[q] for q in o.pushes) for o in ops]
        self.ops = ops
        self.program = [[i for i, m in enumerate(self.module) if m == mod] for mod in range(3)]
        # Each token is the pushing module's vector clock: retired instruction counts per module.
        self.queues: list[deque[tuple[int, int, int]]] = [deque() for _ in DEP_QUEUES]
        self.clock = [[0, 0, 0] for _ in range(3)]
        self.fetched = 0
        self.dispatched = [0, 0, 0]
        self.pos = [0, 0, 0]  # index into self.program[m] of the instruction module m holds
        self.popped = [False, False, False]  # executed, waiting for room to push
        self.steps = 0

    def _cmd_occupancy(self, m: int) -> int:
        # A module takes the head command as soon as it is idle, so the queue holds the
        # dispatched commands beyond the one it is working on.
        return max(0, self.dispatched[m] - self.pos[m] - 1)

    def run(self) -> None:
        depth = self.cfg.dep_queue_depth
        cmd_depth = self.cfg.cmd_queue_depth
        n = len(self.insns)
        queues = self.queues
        module, program, all_pops, all_pushes = self.module, self.program, self.pops, self.pushes
        dispatched, pos, popped, clocks = self.dispatched, self.pos, self.popped, self.clock
        finish = n - 1  # check_program: FINISH is the last instruction and the only one
        while True:
            progress = False
            while self.fetched < n:
                m = module[self.fetched]
                if dispatched[m] - pos[m] - 1 >= cmd_depth:  # _cmd_occupancy(m) >= cmd_depth
                    break
                dispatched[m] += 1
                self.fetched += 1
                progress = True
            for m in range(3):
                if pos[m] >= dispatched[m]:
                    continue
                i = program[m][pos[m]]
                clock = clocks[m]
                if not popped[m]:
                    pops = all_pops[i]
                    if pops:
                        ready = True
                        for q in pops:
                            if not queues[q]:
                                ready = False
                                break
                        if not ready:
                            continue
                        for q in pops:
                            token = queues[q].popleft()
                            for k in range(3):
                                if token[k] > clock[k]:
                                    clock[k] = token[k]
                    self._execute(i)
                    popped[m] = True
                    progress = True
                    if i == finish:
                        self._finish(i)
                        return
                pushes = all_pushes[i]
                if pushes:
                    full = False
                    for q in pushes:
                        if len(queues[q]) >= depth:
                            full = True
                            break
                    if full:
                        continue
                    clock[m] += 1
                    token = (clock[0], clock[1], clock[2])
                    for q in pushes:
                        queues[q].append(token)
                else:
                    clock[m] += 1
                popped[m] = False
                pos[m] += 1
                progress = True
            if not progress:
                self._deadlock()

    def _execute(self, i: int) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise SimTimeoutError(
                f"watchdog: {self.max_steps} instructions executed without reaching FINISH "
                f"(now at instruction {i}: {describe(self.insns[i])}); raise max_steps if the program is that long"
            )
        self.counters.add(execute(self.state, self.insns[i], i))

    def _finish(self, i: int) -> None:
        for module in (Module.LOAD, Module.STORE):
            left = self.program[module][self.clock[Module.COMPUTE][module] :]
            if left:
                raise ProtocolError(
                    f"FINISH (instruction {i}) retired while the {module.name.lower()} module's instructions "
                    f"{left[:8]}{'...' if len(left) > 8 else ''} were not ordered before it by dependency tokens "
                    f"(first: {describe(self.insns[left[0]])}); on the hardware they would race with the end of "
                    f"the run: make FINISH pop a token the last of them pushes (e.g. STORE push_prev + FINISH pop_next)"
                )

    def _deadlock(self) -> None:
        depth = self.cfg.dep_queue_depth
        counts = {q: len(tokens) for q, tokens in zip(DEP_QUEUES, self.queues)}
        blocked: dict[str, str] = {}
        for m in _MODULES:
            name = m.name.lower()
            if self.pos[m] < self.dispatched[m]:
                i = self.program[m][self.pos[m]]
                why = waiting_for(self.ops[i], counts, depth, popped=self.popped[m])
                blocked[name] = f"instruction {i} ({describe(self.insns[i])}) waits to {why}"
            elif self.pos[m] < len(self.program[m]):
                nxt = self.program[m][self.pos[m]]
                blocked[name] = f"idle: its next instruction {nxt} has not been dispatched by fetch"
            else:
                blocked[name] = "done: all its instructions retired"
        if self.fetched < len(self.insns):
            target = Module(self.module[self.fetched]).name.lower()
            blocked["fetch"] = (
                f"instruction {self.fetched} ({describe(self.insns[self.fetched])}) waits for room in the {target} "
                f"command queue (full: {self.cfg.cmd_queue_depth}/{self.cfg.cmd_queue_depth})"
            )
        queues: dict[str, object] = {q: counts[q] for q in DEP_QUEUES}
        for m in _MODULES:
            queues[f"cmd_{m.name.lower()}"] = self._cmd_occupancy(m)
        lines = [f"deadlock: no module can make progress and FINISH (instruction {len(self.insns) - 1}) has not retired"]
        lines += [f"  {name}: {text}" for name, text in blocked.items()]
        lines.append(
            "  dependency queues: " + " ".join(f"{q}={counts[q]}/{depth}" for q in DEP_QUEUES)
            + "; command queues: "
            + " ".join(f"{m.name.lower()}={self._cmd_occupancy(m)}/{self.cfg.cmd_queue_depth}" for m in _MODULES)
        )
        lines.append(
            "  fix: every pop needs a matching push earlier in the producing module's program order, and "
            "queues must not fill with tokens nobody pops"
        )
        raise DeadlockError("\n".join(lines), blocked, queues)
