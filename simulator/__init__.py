"""VDLA simulators: the bit-exact functional model (``fsim``) and, in ``vdla.simulator.cycle``, the
cycle-level model.  Both share the instruction semantics, the token protocol and the errors."""

from vdla.simulator.checks import check_insn, check_program
from vdla.simulator.counters import Counters
from vdla.simulator.errors import DeadlockError, MemoryAccessError, ProtocolError, SimTimeoutError, SimulationError
from vdla.simulator.fsim import DEFAULT_MAX_STEPS, FsimResult, run_fsim
from vdla.simulator.semantics import execute
from vdla.simulator.state import InsnEffect, MachineState
from vdla.simulator.tokens import C2L, C2S, DEP_QUEUES, L2C, S2C, TokenOps, describe, flag_queue, token_ops

__all__ = [
    "C2L", "C2S", "DEP_QUEUES", "DEFAULT_MAX_STEPS", "L2C", "S2C",
    "Counters", "DeadlockError", "FsimResult", "InsnEffect", "MachineState", "MemoryAccessError",
    "ProtocolError", "SimTimeoutError", "SimulationError", "TokenOps",
    "check_insn", "check_program", "describe", "execute", "flag_queue", "run_fsim", "token_ops",
]
