"""The client side of ``vdla fpga deploy``: ship a bitstream folder to the pool's board workers.

:func:`board_workers` asks every worker of the pool which board it owns
(:func:`vdla.runtime.pool.board.board_info`); :func:`load_bundle` verifies the folder here, :func:`deploy`
sends it to each board worker of the board (or the one named), waits for their checks and returns what each now
advertises. Errors name the cause: no such board worker (with the ones present), a folder without
manifest or with a file that fails its hash, a bitstream whose registers contradict its manifest.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vdla.runtime.pool.board import Deployment, board_info, deploy_job
from vdla.runtime.pool.bundle import Bundle, board_key, check_board, read_bundle
from vdla.runtime.pool.errors import NoDeviceError
from vdla_hw.errors import DeviceFaultError
from vdla_hw.fpga.manifest import read_manifest

DEPLOY_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class BoardWorkerInfo:
    """A board worker of the pool, as it reports itself."""

    address: str
    name: str
    board: str
    emulate: bool
    kind: str | None
    arch: str = "unknown"
    """The architecture of the worker's processor (``aarch64`` on an Ultra96-V2, ``x86_64`` when emulated)."""

    def describe(self) -> str:
        what = "emulated " if self.emulate else ""
        return f"{self.name} ({what}{self.board}: {self.kind or 'no bitstream'})"


def board_workers(client: Any) -> list[BoardWorkerInfo]:
    """Every board worker of the pool ``client`` is connected to."""
    # on_error="return": a worker that cannot import this project (a stock Dask worker) is no board worker
    replies = client.run(board_info, on_error="return")
    return [BoardWorkerInfo(addr, str(info["name"]), str(info["board"]), bool(info["emulate"]), info["kind"],
                            str(info.get("arch", "unknown")))
            for addr, info in sorted(replies.items()) if isinstance(info, dict)]


def pick_workers(workers: list[BoardWorkerInfo], board: str, name: str | None, address: str) -> list[BoardWorkerInfo]:
    """The board workers a deploy to ``board`` (and worker ``name``, if given) goes to; raises if none."""
    chosen = [w for w in workers if w.board == board_key(board) and (name is None or w.name == name)]
    if chosen:
        return chosen
    present = "; ".join(w.describe() for w in workers) or "none"
    which = f"board worker {name!r} of board {board!r}" if name else f"board worker of board {board!r}"
    raise NoDeviceError(f"the pool at {address} has no {which}; board workers present: {present}",
                        hint=f"start one on the board's host: vdla pool worker {address} --board {board}")


def load_bundle(folder: str | Path, board: str) -> Bundle:
    """Read and verify the bitstream folder ``folder`` for ``board`` (before anything is sent)."""
    bundle = read_bundle(folder)
    check_board(read_manifest(Path(folder)), board, str(folder))
    return bundle


def deploy(executor: Any, bundle: Bundle, board: str, *, worker: str | None = None,
           timeout_s: float = DEPLOY_TIMEOUT_S) -> list[Deployment | BaseException]:
    """Deploy ``bundle`` (see :func:`load_bundle`) to the pool's board workers of ``board``.

    Returns, per worker, its :class:`Deployment` or the error that kept it from advertising the
    bitstream (the order of :func:`pick_workers`).
    """
    targets = pick_workers(board_workers(executor.client), board, worker, executor.address)
    client = executor.client
    futures = [client.submit(deploy_job, bundle, workers=[t.address], allow_other_workers=False, pure=False,
                             key=f"vdla-deploy-{t.name}-{uuid.uuid4().hex}") for t in targets]
    out: list[Deployment | BaseException] = []
    for f in futures:
        try:
            out.append(f.result(timeout=timeout_s))
        except TimeoutError:
            f.cancel()
            out.append(DeviceFaultError(f"the deploy did not finish within {timeout_s:g} s",
                                        hint="raise --timeout (an emulated board builds its RTL the first time)"))
        except Exception as exc:  # noqa: BLE001 - the worker's reason (BadFileError ...), shown per worker
            out.append(exc)
    return out
