"""Running VDLA programs on the pool: the job a worker runs, and the client-side helpers."""

from __future__ import annotations

import concurrent.futures as cf
import re
from typing import Any, Callable

from vdla.runtime.backends import run as run_program
from vdla.runtime.pool.board import run_on_board
from vdla.runtime.pool.bundle import board_key
from vdla.runtime.pool.errors import NoDeviceError
from vdla.runtime.pool.kinds import backend_kind
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult
from vdla_hw.config import HwConfig
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
    if backend == "fpga":
        board = board_key(board) if board else fpga_board(executor, program.config)
    kind = backend_kind(backend, program.config, board)
    # A board worker runs the bitstream it checked at deploy time, not whatever the fpga backend would open.
    job = run_on_board if backend == "fpga" else run_on_backend
    remote = executor.submit(job, program, backend, dict(options), device_kind=kind, timeout_s=timeout_s)
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


def fpga_board(executor: Any, cfg: HwConfig) -> str:
    """The board of the pool loaded with ``cfg``'s bitstream, when exactly one board is."""
    kind = re.compile(rf"fpga-([a-z0-9_]+)-{cfg.digest}")
    workers = executor.workers(refresh=True)
    boards = sorted({m.group(1) for w in workers.values() for k, v in (w.get("resources") or {}).items()
                     if v > 0 and (m := kind.fullmatch(k))})
    if len(boards) == 1:
        return boards[0]
    if boards:
        raise UsageError(f"boards {', '.join(boards)} of the pool are loaded with config {cfg.label()}: "
                         "say which one to use", hint=f"pass --board, e.g. --board {boards[0]}")
    from vdla.runtime.pool.executor import describe_workers

    raise NoDeviceError(f"no board of the pool at {executor.address} is loaded with config {cfg.label()}; workers "
                        f"present: {describe_workers(workers)}",
                        hint=f"deploy a bitstream built for it: vdla fpga deploy --board B --bitstream DIR "
                             f"--pool {executor.address}")


def pool_runner(executor: Any, *, board: str | None = None,
                timeout_s: float | None = None) -> Callable[..., RunResult]:
    """A drop-in for :func:`vdla.runtime.backends.run` that runs each program on the pool (for the graph executor).

    With the ``fpga`` backend and no ``board``, the programs run on the one board of the pool loaded
    with their config (looked up once per config).
    """
    boards: dict[str, str] = {}

    def run(program: Program, backend: str = "fsim", **options: Any) -> RunResult:
        where = board
        if backend == "fpga" and where is None:
            digest = program.config.digest
            if digest not in boards:
                boards[digest] = fpga_board(executor, program.config)
            where = boards[digest]
        return submit_program(executor, program, backend, board=where, timeout_s=timeout_s, **options).result()

    return run


def whole_module_worker(workers: list[Any], config: HwConfig | None, kernels: dict[str, Any] | None,
                        board: str | None = None) -> tuple[Any | None, str]:
    """The board worker (a :class:`vdla.runtime.pool.deploy.BoardWorkerInfo`) that runs a whole module -- loaded
    with the module's config and running on the processor its CPU kernels were compiled for -- or None and
    why not (then each VDLA node's program is shipped to the board instead)."""
    if config is None:
        return None, "the module has no VDLA node"
    loaded = [w for w in workers if w.kind == f"fpga-{w.board}-{config.digest}"
              and (board is None or w.board == board_key(board))]
    if not loaded:
        return None, f"no board worker is loaded with config {config.label()}"
    arch = None if kernels is None else kernels.get("arch")
    for w in loaded:
        if arch is None or w.arch == arch:
            return w, f"its {w.arch} processor runs the CPU kernels"
    have = ", ".join(f"{w.name} ({w.arch})" for w in loaded)
    return None, (f"the module's CPU kernels are {arch} code ({kernels.get('cpu') if kernels else ''}) and the "
                  f"board workers loaded with its config run on {have}")


def run_whole_module(executor: Any, worker: Any, module: bytes, inputs: dict[str, Any], threads: int = 1,
                     timeout_s: float | None = None) -> list[Any]:
    """Run a whole module on ``worker``'s board (see :func:`vdla.runtime.pool.board.run_module_on_board`)."""
    from vdla.runtime.pool.board import run_module_on_board

    return executor.submit(run_module_on_board, module, inputs, {}, threads, device_kind=worker.kind,
                           timeout_s=timeout_s).result()
