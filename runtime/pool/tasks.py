"""Running VDLA programs on the pool: the job a worker runs, and the client-side helpers."""

from __future__ import annotations

import concurrent.futures as cf
from typing import Any, Callable

from runtime.backends import run as run_program
from runtime.pool.kinds import backend_kind
from runtime.program import Program
from runtime.result import RunResult
from vdla_hw.errors import UsageError

FILE_OPTIONS = ("trace", "plot", "fst")
"""Backend options that write a file: on the pool it would land on the worker's disk, not the caller's."""


def run_on_backend(program: Program, backend: str, options: dict[str, Any]) -> tuple[Any, ...]:
    """The job: run ``program`` on ``backend`` here (on a worker offering its kind).

    Returns the result's fields without the program, which the caller has: sending the
    program's decoded instructions back would double the job's pickling cost.
    """
    r = run_program(program, backend, **options)
    return r.backend, r.dram, dict(r.counters), r.cycles, dict(r.extra)


def submit_program(executor: Any, program: Program, backend: str, *, board: str | None = None,
                   timeout_s: float | None = None, **options: Any) -> cf.Future[RunResult]:
    """Run ``program`` on ``backend`` on a pool worker that offers it (``board`` names the FPGA board)."""
    files = sorted(k for k in FILE_OPTIONS if options.get(k) is not None)
    if files:
        raise UsageError(f"option(s) {files} write files, which a pool run would leave on the worker",
                         hint="run without --pool to get the file on this machine")
    kind = backend_kind(backend, program.config, board)
    remote = executor.submit(run_on_backend, program, backend, dict(options), device_kind=kind, timeout_s=timeout_s)
    result: cf.Future[RunResult] = cf.Future()
    result.set_running_or_notify_cancel()

    def attach(done: cf.Future) -> None:
        error = done.exception()
        if error is not None:
            result.set_exception(error)
        else:
            name, dram, counters, cycles, extra = done.result()
            result.set_result(RunResult(name, program, dram, counters, cycles, extra))

    remote.add_done_callback(attach)
    return result


def pool_runner(executor: Any, *, board: str | None = None,
                timeout_s: float | None = None) -> Callable[..., RunResult]:
    """A drop-in for :func:`runtime.backends.run` that runs each program on the pool (for the graph executor)."""

    def run(program: Program, backend: str = "fsim", **options: Any) -> RunResult:
        return submit_program(executor, program, backend, board=board, timeout_s=timeout_s, **options).result()

    return run
