"""A board worker: a pool worker that owns one FPGA board and offers it once a bitstream is proven.

``vdla pool worker ADDR --board B [--emulate]`` joins the scheduler offering nothing. A deploy
job (:func:`deploy_job`, sent by ``vdla fpga deploy`` to this worker alone) carries a bitstream
folder as bytes; the worker

1. verifies every file against the manifest's SHA-256 and that the bitstream is for its board;
2. withdraws its current device kind, so no program lands on a board being replaced;
3. stores the folder under its store (``<store>/deployments/<manifest hash>``);
4. in a job process (so a crash in the driver or the simulation cannot take the worker down):
   opens it with :func:`vdla.runtime.fpga.open_board`, reads CONFIG_ID and BUILD_ID and compares them
   with the manifest, and runs a self-test program whose memory must equal the functional model's;
5. only then records it as current and advertises ``fpga-<board>-<config digest>``
   (:func:`vdla.runtime.pool.kinds.fpga_kind`).

A failed step leaves the board unadvertised and the deploy job raises why (``BadFileError``,
``DeviceFaultError``). Programs for the advertised kind run in the worker's job processes through
:func:`run_on_board`: the ``fpga`` backend on the current bitstream (it keeps the loaded board for
the next run). A restarted worker checks its current bitstream again before it advertises it.

``--emulate`` makes the board the Verilated RTL of the bitstream folder's config (see
``vdla.runtime.fpga``); everything else -- the store, the checks, the jobs -- is the same code.

A board driven over a serial port (``--board ulx3s --port /dev/ttyUSB0``) has no processor to
load its bitstream: step 4 loads it with openFPGALoader (:mod:`vdla_hw.fpga.program`), then opens
the port with :func:`vdla.runtime.fpga.serial_board.open_serial_board`, whose checks are the same
(identifier, CONFIG_ID, BUILD_ID, the ``gemm`` self-test bit-exact vs fsim). ``--port sim`` is the
simulated SoC of the deployed config (nothing to load; its BUILD_ID must still be the manifest's).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import cloudpickle
import numpy as np

from vdla.runtime.pool.bundle import (
    Bundle,
    board_key,
    bundle_id,
    check_board,
    check_folder,
    unpack_bundle,
)
from vdla.runtime.pool.jobs import run_job
from vdla.runtime.pool.kinds import fpga_kind
from vdla.runtime.program import Program
from vdla_hw.errors import BadFileError, DeviceFaultError, UsageError
from vdla_hw.fpga.manifest import Manifest

STORE_ENV = "VDLA_BOARD_STORE"
"""Set in a board worker's process: its job processes find the store (and the current bitstream) there."""
SELFTEST = "gemm"
"""The system program (vdla.runtime.system_programs) a deploy runs: GEMM, ALU, loads, stores and tokens."""
CHECK_TIMEOUT_S = 1800.0
"""Bound on opening + checking a bitstream (an emulated board builds its RTL the first time)."""
_CURRENT = "current.json"
_WORKER = "worker.json"


@dataclass(frozen=True)
class Deployment:
    """A bitstream a board worker checked and advertises; what ``vdla fpga deploy`` prints."""

    board: str
    kind: str
    config_name: str
    config_digest: str
    config_id: int
    build_id: int
    checks: tuple[str, ...]
    folder: str
    worker: str = ""


@dataclass(frozen=True)
class BoardSpec:
    """What a board worker was started with."""

    board: str
    emulate: bool
    store: Path
    port: str | None = None
    """The serial port of a board driven over USB (``--port``), or ``sim``."""

    def save(self) -> None:
        self.store.mkdir(parents=True, exist_ok=True)
        (self.store / _WORKER).write_text(json.dumps({"board": self.board, "emulate": self.emulate,
                                                      "port": self.port}) + "\n")

    @staticmethod
    def load(store: Path) -> BoardSpec:
        raw = json.loads((store / _WORKER).read_text())
        return BoardSpec(raw["board"], bool(raw["emulate"]), store, raw.get("port"))


def default_store(board: str, name: str | None) -> Path:
    """``$VDLA_BOARD_DIR`` (default ``~/.vdla/boards``) ``/<worker name or board>``."""
    root = Path(os.environ.get("VDLA_BOARD_DIR") or Path.home() / ".vdla" / "boards")
    return root / (name or board_key(board))


# ---- the job-process side: checking a bitstream, running programs ----------------------------------
def check_window(board: Any) -> str:
    """The design itself must refuse a DMA outside the job's buffer (the pre-check is off)."""
    from vdla.runtime.system_programs import window_probe_program
    from vdla.simulator.errors import MemoryAccessError

    try:
        board.run(window_probe_program(board.config), precheck=False)
    except MemoryAccessError as exc:
        if "outside the DRAM window" not in str(exc):
            raise
    else:
        raise DeviceFaultError("window check: a STORE past the job's buffer ran to the end instead of stopping "
                               "with a fault: the bitstream predates the DRAM address window (issue 24)",
                               hint="rebuild the folder with vdla fpga build and deploy it again")
    return "DRAM window: a STORE past the job's buffer stopped by the design (FAULT registers)"


def check_serial_bitstream(folder: str, port: str, manifest: Manifest) -> Deployment:
    """Load ``folder``'s bitstream onto the serial board on ``port`` and check it (runs in a job process)."""
    from vdla.runtime.backends.fpga import SIM_PORT, open_serial
    from vdla_hw.fpga.manifest import manifest_config
    from vdla_hw.fpga.program import program_board

    checks = []
    if port != SIM_PORT:
        loaded = program_board(manifest.board, folder)
        checks.append(f"loaded {Path(loaded.bitstream).name} with openFPGALoader")
    cfg = manifest_config(Path(folder), manifest)
    _, board = open_serial(cfg, folder, manifest.board, port)
    if board.build_id != manifest.build_id:
        raise DeviceFaultError(f"the {'simulated ' if port == SIM_PORT else ''}{manifest.board} on {port} has build "
                               f"0x{board.build_id:08x}, the deployed folder describes 0x{manifest.build_id:08x}",
                               hint="rebuild the folder from these sources (vdla fpga build) and deploy it again")
    checks += board.checks
    checks.append(check_window(board))
    key = board_key(manifest.board)
    return Deployment(key, fpga_kind(key, cfg), cfg.name, cfg.digest, board.config_id, board.build_id,
                      tuple(checks), folder)


def check_bitstream(folder: str, emulate: bool, manifest: Manifest, port: str | None = None) -> Deployment:
    """Open the bitstream in ``folder`` and prove it is what ``manifest`` says (runs in a job process)."""
    if port is not None:
        return check_serial_bitstream(folder, port, manifest)
    from vdla.runtime.backends import run as run_program
    from vdla.runtime.fpga import open_board
    from vdla.runtime.system_programs import build_case
    from vdla_hw import regmap

    try:
        board = open_board(Path(folder), emulate=True if emulate else None)
    except DeviceFaultError as exc:  # open_board reads CONFIG_ID and BUILD_ID and refuses a mismatch
        raise DeviceFaultError(
            f"CONFIG_ID/BUILD_ID check: the loaded bitstream is not the design its manifest describes (config "
            f"{manifest.config!r}, build 0x{manifest.build_id:08x}): {exc}",
            hint=f"the folder's bitstream belongs to another config or build: rebuild the folder with vdla fpga "
                 f"build --board {manifest.board} --config {manifest.config} and deploy it whole") from None
    try:
        cfg = board.config
        want_id = regmap.config_id(cfg)
        if cfg.digest != manifest.config_digest or board.config_id != want_id or board.build_id != manifest.build_id:
            raise DeviceFaultError(f"the loaded design reports {regmap.describe_config_id(board.config_id)}, build "
                                   f"0x{board.build_id:08x}; the manifest says config {manifest.config!r} "
                                   f"(CONFIG_ID 0x{want_id:08x}), build 0x{manifest.build_id:08x}",
                                   hint="the folder's files do not belong together: rebuild it with vdla fpga build")
        checks = [f"CONFIG_ID 0x{board.config_id:08x} = config {manifest.config!r} (digest {cfg.digest})",
                  f"BUILD_ID 0x{board.build_id:08x} = manifest"]
        program = build_case(cfg, SELFTEST)
        got = board.run(program).dram
        checks.append(check_window(board))
    finally:
        board.close()
    expected = run_program(program, "fsim").dram
    if not np.array_equal(got, expected):
        bad = int(np.count_nonzero(got != expected))
        raise DeviceFaultError(f"self-test failed: program {SELFTEST!r} left {bad} DRAM bytes that differ from the "
                               "functional model's", hint="the board or its bitstream is faulty; rebuild and deploy "
                               "again, or check the board")
    checks.append(f"self-test {SELFTEST!r}: {program.insn_count} instructions, DRAM bit-exact vs fsim")
    key = board_key(manifest.board)
    return Deployment(key, fpga_kind(key, cfg), cfg.name, cfg.digest, board.config_id, board.build_id,
                      tuple(checks), folder)


_WORKER_CHOOSES = ("bitstream", "emulate")
"""fpga backend options a pool job may not set: the board worker runs its checked bitstream."""


def run_on_board(program: Program, backend: str, options: dict[str, Any]) -> tuple[Any, ...]:
    """The job of an ``fpga-...`` kind: run ``program`` on this worker's current bitstream (the fpga backend)."""
    r = run_here(program, options)
    return r.backend, r.dram, dict(r.counters), r.cycles, dict(r.extra)


def run_module_on_board(module: bytes, inputs: dict[str, np.ndarray], options: dict[str, Any],
                        threads: int = 1) -> list[np.ndarray]:
    """The job of a whole module on a board worker: its CPU kernels in this (the board's) process, its VDLA
    nodes on the board's current bitstream; returns the outputs.  Sent only to a worker whose processor the
    module's kernels were compiled for (``vdla run --backend fpga --pool``)."""
    import tempfile

    from vdla.runtime.graph_executor import load

    with tempfile.TemporaryDirectory(prefix="vdla_module_") as tmp:
        path = Path(tmp) / "model.vdla"
        path.write_bytes(module)
        graph_module = load(path)
    graph_module.set_num_threads(threads)
    graph_module.set_program_runner(lambda program, backend="fpga", **opts: run_here(program, {**options, **opts}))
    return graph_module.run(inputs, backend="fpga")


def run_here(program: Program, options: dict[str, Any]) -> Any:
    """Run ``program`` on this board worker's current bitstream; the backend's run result."""
    from vdla.runtime.backends import run as run_program

    chosen = sorted(k for k in _WORKER_CHOOSES if options.get(k))
    if chosen:
        raise UsageError(f"option(s) {chosen} choose the bitstream, which on the pool is the one the board worker "
                         "checked at deploy time", hint="drop them, or run without --pool")
    store = os.environ.get(STORE_ENV)
    if not store:
        raise UsageError("this pool worker is not a board worker, yet it received an fpga job",
                         hint="start board workers with vdla pool worker ADDR --board B")
    spec = BoardSpec.load(Path(store))
    current = read_current(spec.store)
    if current is None or current.config_digest != program.config.digest:
        have = "none" if current is None else f"config {current.config_name!r}"
        raise DeviceFaultError(f"board {spec.board} holds no bitstream for config {program.config.label()} "
                               f"(it holds {have}): it was redeployed while the job waited",
                               hint="deploy a bitstream for that config with vdla fpga deploy, then run again")
    rest = {k: v for k, v in options.items() if k not in _WORKER_CHOOSES}
    if spec.port is not None:
        rest = {k: v for k, v in rest.items() if k not in ("port", "board")}
        return run_program(program, "fpga", bitstream=current.folder, board=spec.board.replace("_", "-"),
                           port=spec.port, **rest)
    return run_program(program, "fpga", bitstream=current.folder, emulate=spec.emulate, **rest)


# ---- the worker side ------------------------------------------------------------------------------
def read_current(store: Path) -> Deployment | None:
    """The bitstream this store's worker advertises, or None."""
    path = store / _CURRENT
    if not path.is_file():
        return None
    raw = json.loads(path.read_text())
    return Deployment(**{**raw, "checks": tuple(raw["checks"])})


def _in_job_process(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in one of this worker's job processes (a crash there is a JobCrashedError, not our death)."""
    status, value = cloudpickle.loads(run_job(cloudpickle.dumps((fn, args, {})), CHECK_TIMEOUT_S, False))
    if status != "ok":
        raise value
    return value


class BoardWorker:
    """The state of this process's board worker (one per process; see :func:`serve_board`)."""

    def __init__(self, spec: BoardSpec, name: str | None) -> None:
        self.spec = spec
        self.name = name or spec.board
        self.kind: str | None = None
        self.lock = threading.Lock()

    def resources(self) -> dict[str, float]:
        """The Dask resources to join with: the checked bitstream's kind, or nothing."""
        return {self.kind: 1} if self.kind else {}

    def _set_kind(self, kind: str | None, advertise: Callable[[dict[str, float]], None]) -> None:
        # Dask cannot drop a worker resource: a withdrawn kind stays at 0, which no job can use.
        old, self.kind = self.kind, kind
        changes = {k: 0.0 for k in (old,) if k and k != kind}
        if kind:
            changes[kind] = 1.0
        if changes:
            advertise(changes)

    def info(self) -> dict[str, Any]:
        from vdla.runtime.cpu_module import host_arch

        current = read_current(self.spec.store)
        # arch: the processor the worker runs on, which runs a whole module's CPU kernels when they match it.
        return {"board": self.spec.board, "emulate": self.spec.emulate, "port": self.spec.port, "name": self.name,
                "kind": self.kind, "config": current.config_name if current and self.kind else None,
                "arch": host_arch()}

    def recheck(self, progress: Callable[[str], None]) -> None:
        """At start: check the stored current bitstream again and take its kind, or forget it."""
        current = read_current(self.spec.store)
        if current is None:
            return
        progress(f"checking the deployed bitstream {current.folder} ...")
        try:
            manifest, _ = check_folder(Path(current.folder))
            checked = _in_job_process(check_bitstream, current.folder, self.spec.emulate, manifest,
                                      self.spec.port)
        except (BadFileError, DeviceFaultError) as exc:  # the board starts empty; a missing tool stops the worker
            progress(f"the deployed bitstream is not offered: {exc}")
            (self.spec.store / _CURRENT).unlink()
            return
        self.kind = checked.kind

    def deploy(self, bundle: Bundle, advertise: Callable[[dict[str, float]], None]) -> Deployment:
        """Verify, store, open and check ``bundle``; on success ``advertise`` its kind (see the module docstring)."""
        with self.lock:
            deployments = self.spec.store / "deployments"
            dest = deployments / bundle_id(bundle)
            staging = dest.with_name(dest.name + ".new")
            shutil.rmtree(staging, ignore_errors=True)
            try:  # a bad bundle is refused before the current bitstream is withdrawn
                manifest, _ = unpack_bundle(bundle, staging)
                check_board(manifest, self.spec.board, bundle.source)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            self._set_kind(None, advertise)
            (self.spec.store / _CURRENT).unlink(missing_ok=True)
            shutil.rmtree(dest, ignore_errors=True)
            staging.rename(dest)
            try:
                checked: Deployment = _in_job_process(check_bitstream, str(dest), self.spec.emulate, manifest,
                                                          self.spec.port)
            except BaseException:
                shutil.rmtree(dest, ignore_errors=True)
                raise
            for old in deployments.iterdir():  # keep only the bitstream in use
                if old != dest:
                    shutil.rmtree(old, ignore_errors=True)
            done = replace(checked, worker=self.name)
            (self.spec.store / _CURRENT).write_text(json.dumps(asdict(done), indent=1) + "\n")
            self._set_kind(done.kind, advertise)
            return done


_worker: BoardWorker | None = None


def install(worker: BoardWorker) -> None:
    """Make ``worker`` this process's board worker (what deploy jobs and :func:`board_info` see)."""
    global _worker
    _worker = worker
    os.environ[STORE_ENV] = str(worker.spec.store)  # job processes started from now on inherit it


def board_info() -> dict[str, Any] | None:
    """This worker's board (a ``client.run`` target): board, emulate, name, advertised kind.

    None when this worker is not a board worker.
    """
    return None if _worker is None else _worker.info()


def deploy_job(bundle: Bundle) -> Deployment:
    """The deploy task (sent to one board worker): see :meth:`BoardWorker.deploy`."""
    if _worker is None:
        raise UsageError("this pool worker is not a board worker",
                         hint="start one with vdla pool worker ADDR --board B")
    from distributed import get_worker
    from distributed.utils import sync

    dask_worker = get_worker()
    return _worker.deploy(bundle, lambda changes: sync(dask_worker.loop, dask_worker.set_resources, **changes))
