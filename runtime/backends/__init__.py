"""Backends run a :class:`~vdla.runtime.program.Program` and return a :class:`~vdla.runtime.result.RunResult`.

They are found by name in :data:`BACKENDS` and imported lazily, so a backend
whose tools are missing (Verilator) never breaks the others.  A
backend class provides:

- ``name``: its registry name;
- ``OPTIONS``: a tuple of :class:`BackendOption` it accepts as ``run`` keywords
  (the ``vdla sim`` command turns them into command-line flags);
- ``run(program, **options) -> RunResult``;
- optionally a classmethod ``unavailable() -> str | None`` returning why it
  cannot run on this machine (a missing tool), or None.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from vdla.runtime.program import Program
from vdla.runtime.result import RunResult
from vdla_hw.errors import UsageError

BACKENDS: dict[str, str] = {
    "fsim": "vdla.runtime.backends.fsim:FsimBackend",
    "cycle": "vdla.runtime.backends.cycle:CycleBackend",
    "rtl": "vdla.runtime.backends.rtl:RtlBackend",
    "fpga": "vdla.runtime.backends.fpga:FpgaBackend",
}
"""Backend name -> ``"module:Class"``, imported on first use."""


class BackendError(UsageError):
    """An unknown backend, one that cannot run here, or an option it does not accept."""


@dataclass(frozen=True)
class BackendOption:
    """One option of a backend: a ``run`` keyword ``dest`` and its command-line ``flag``.

    ``kind`` is ``"flag"`` (a boolean switch), ``"str"``, ``"int"`` or ``"float"``.
    """

    flag: str
    dest: str
    help: str
    kind: str = "str"
    default: Any = None
    metavar: str | None = None


WINDOW_OPTION = BackendOption(
    "--window", "window", "DRAM address window the program may touch, as byte addresses BASE:LIMIT (default: "
    "its whole DRAM image); a LOAD/STORE outside faults on every backend", "str", None, "BASE:LIMIT")


class Backend(Protocol):
    """The interface every backend implements (see the module docstring)."""

    name: ClassVar[str]
    OPTIONS: ClassVar[tuple[BackendOption, ...]]

    def run(self, program: Program, **options: Any) -> RunResult: ...


def backend_names() -> list[str]:
    """Every registered backend name, available or not."""
    return list(BACKENDS)


def backend_class(name: str) -> type:
    """Import and return the class registered as ``name``; raises :class:`BackendError` saying what is missing."""
    try:
        target = BACKENDS[name]
    except KeyError:
        raise BackendError(f"unknown backend {name!r}; available backends: {', '.join(BACKENDS)}") from None
    module_name, cls_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == module_name or module_name.startswith(exc.name + ".")):
            raise BackendError(f"backend {name!r} is not installed in this build: module {module_name} does not exist") from None
        raise BackendError(f"backend {name!r} needs the Python package {exc.name!r}, which is not installed; pip install it") from None
    try:
        return getattr(module, cls_name)
    except AttributeError:
        raise BackendError(f"backend {name!r}: {module_name} defines no class {cls_name}") from None


def get_backend(name: str) -> Backend:
    """An instance of backend ``name``, after checking that it can run on this machine."""
    cls = backend_class(name)
    unavailable = getattr(cls, "unavailable", None)
    reason = unavailable() if unavailable else None
    if reason:
        raise BackendError(f"backend {name!r} cannot run here: {reason}")
    return cls()


def check_options(backend: Backend, options: dict[str, Any]) -> None:
    """Raise :class:`BackendError` for an option ``backend`` does not declare."""
    known = {o.dest for o in backend.OPTIONS}
    unknown = sorted(set(options) - known)
    if unknown:
        raise BackendError(
            f"backend {backend.name!r} does not accept option(s) {unknown}; its options: {sorted(known) or 'none'}"
        )


def run(program: Program, backend: str = "fsim", **options: Any) -> RunResult:
    """Run ``program`` on the backend named ``backend`` with backend ``options``."""
    impl = get_backend(backend)
    check_options(impl, options)
    return impl.run(program, **options)


__all__ = ["BACKENDS", "Backend", "BackendError", "BackendOption", "RunResult", "backend_class", "backend_names",
           "check_options", "get_backend", "run"]
