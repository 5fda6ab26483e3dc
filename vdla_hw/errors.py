"""The project's user-facing error taxonomy.

Every error a user can cause — a bad file, a bad hardware config, a model or workload the tools
do not support, a faulting program, a failing device or a missing tool — is an instance of
:class:`VdlaError`, through one of the few families below. The ``vdla`` command prints such an
error as one line plus its hint and exits with status 2; any other exception is a bug in the
tools and is printed with its traceback (status 70). So a class belongs here only when a user
can fix its cause; internal invariants keep raising ordinary exceptions.

It lives in ``vdla_hw``, the bottom layer, so that the simulators, the runtime (which runs alone
on a board) and the compiler all share it. The families also derive from the built-in class their
errors were before (``ValueError``, ``RuntimeError``, ``OSError``), so ``except ValueError`` in
callers keeps working.
"""

from __future__ import annotations


class VdlaError(Exception):
    """Base of every error the user can fix. ``hint`` says how, when the message alone does not."""

    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class BadFileError(VdlaError, ValueError):
    """A file the tools were given is missing, truncated, of another format or version, fails its
    checksum, or was made for another hardware config. The message names the file and which."""


class BadConfigError(VdlaError, ValueError):
    """An invalid hardware configuration; the message names the field (or rule) and the legal range."""


class UnsupportedError(VdlaError, ValueError):
    """A model, operator, shape, data type or workload the tools cannot serve on the chosen target;
    the message names it and what is supported."""


class UsageError(VdlaError, ValueError):
    """Arguments that do not fit together: an option a backend does not take, an unknown name."""


class ProgramFaultError(VdlaError, RuntimeError):
    """A VDLA program broke the machine's rules while running: an out-of-range access, a read of
    never-written SRAM, a token protocol violation, a deadlock, a watchdog expiry. Every backend
    raises the same subclass for the same fault and names the faulting instruction."""


class DeviceFaultError(VdlaError, RuntimeError):
    """A device (the Verilated RTL, a board, a pool worker) failed or could not be reached."""


class ToolchainError(VdlaError, RuntimeError):
    """A tool the command needs (a C/C++ compiler, Verilator, yosys, nextpnr, Vivado) is missing or
    failed; the message names the tool and how to install it."""


__all__ = [
    "BadConfigError", "BadFileError", "DeviceFaultError", "ProgramFaultError", "ToolchainError",
    "UnsupportedError", "UsageError", "VdlaError",
]
