"""Errors raised by the VDLA simulators.

Every error names the instruction (its index in the program and a short
disassembly) and the cause, so a wrong program can be fixed from the message
alone.  All of them derive from :class:`SimulationError`, itself a
``RuntimeError`` so the CLI reports them as user errors.
"""

from __future__ import annotations

from typing import Any, Mapping
from vdla_hw.errors import ProgramFaultError


class SimulationError(ProgramFaultError):
    """Base class of every error a simulator raises for a bad program."""


class MemoryAccessError(SimulationError):
    """An SRAM or DRAM access outside its buffer (or outside the DRAM image)."""


class UninitializedReadError(SimulationError):
    """A read of an SRAM element (a micro-op, input, weight or accumulator tile) that no
    instruction has written since the run began. The hardware's SRAM starts with undefined
    contents, so such a program's result would differ between runs and backends."""


class IllegalInstructionError(SimulationError):
    """An instruction word in the fetched stream that does not decode: an unknown opcode."""


class ProtocolError(SimulationError):
    """A program that breaks the ISA's rules: an illegal dependency flag for the executing
    module, a STORE of a non-OUT memory type, a LOAD of OUT, padding on a micro-op load,
    an empty or inverted micro-op range, a program without a final FINISH, ..."""


class DeadlockError(SimulationError):
    """Every unfinished module is blocked and FINISH has not retired.

    ``blocked`` maps a module name to a description of what it waits for (its
    blocked instruction index and disassembly, or its empty command queue);
    ``queues`` maps every dependency and command queue name to its occupancy.
    """

    def __init__(self, message: str, blocked: Mapping[str, str], queues: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.blocked = dict(blocked)
        self.queues = dict(queues)


class SimTimeoutError(SimulationError):
    """A watchdog limit (executed instructions, simulated cycles) was reached."""
