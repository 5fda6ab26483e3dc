"""Starting pool nodes: a scheduler, a worker with its devices checked, a local cluster.

These are thin wrappers over Dask's own ``Scheduler``, ``Worker`` and ``LocalCluster``: the
scheduler runs stock Dask (any Dask scheduler with the same TLS settings serves), a worker only
adds its device kinds as resources, after checking at start that it really has them (each
simulator runs a small program; the RTL is built for its config and must match the functional
model bit for bit).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import Callable

import numpy as np
from distributed import LocalCluster, Scheduler, Worker
from distributed.security import Security

from vdla.runtime.backends import get_backend
from vdla.runtime.cpu_module import host_cpu_features
from vdla.runtime.pool.kinds import DeviceSpec, backend_of, worker_resources
from vdla.runtime.pool.security import check_bind, is_loopback
from vdla.runtime.system_programs import build_case
from vdla_hw.config import load_config
from vdla_hw.errors import DeviceFaultError, UsageError

DEFAULT_PORT = 8786
REJOIN_DELAY_S = 0.5


def check_device(device: DeviceSpec) -> None:
    """Prove this machine has ``device``: run a small program on it and compare with ``fsim``."""
    if device.kind == "cpu":
        return
    backend = backend_of(device.kind)
    cfg = device.config or load_config("default")
    # A random program behind a prologue that defines the SRAM it reads: a correct device
    # matches fsim bit for bit (uninitialized SRAM would differ between RTL and the models).
    program = build_case(cfg, "random1")
    impl = get_backend(backend)  # raises, naming the missing tool, when this backend cannot run here
    expected = get_backend("fsim").run(program).dram
    got = impl.run(program).dram
    if not np.array_equal(got, expected):
        raise DeviceFaultError(f"device {device.kind} failed its start-up check: its result differs from the "
                               f"functional model on a test program (config {cfg.name!r})")


def check_devices(devices: list[DeviceSpec], progress: Callable[[str], None] = lambda _: None) -> None:
    """:func:`check_device` for each distinct device."""
    seen: set[str] = set()
    for d in devices:
        if d.kind not in seen:
            seen.add(d.kind)
            progress(f"checking {d.kind} ...")
            check_device(d)


def resources(devices: list[DeviceSpec]) -> dict[str, float]:
    """The Dask resources of a worker offering ``devices``."""
    return worker_resources(devices, host_cpu_features())


async def _serve(make: Callable[[], Scheduler | Worker], on_ready: Callable[[str], None], *,
                 rejoin: bool = False) -> None:
    """Start the node ``make()`` builds (inside the running loop, as Dask requires) and serve until a signal.

    With ``rejoin`` a node that stops on its own (a worker whose scheduler went away) is built
    again, and waits for the scheduler to come back: a restarted scheduler gets its workers back.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    while not stop.is_set():
        node = make()
        starting = asyncio.ensure_future(node.start())
        stopped = asyncio.ensure_future(stop.wait())
        # A worker waits for its scheduler while it starts: a signal must end that wait too.
        await asyncio.wait([starting, stopped], return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            starting.cancel()
            await node.close()
            return
        try:
            starting.result()
        except RuntimeError as exc:
            if "name taken" in str(exc.__cause__):
                raise UsageError(f"the pool already has a worker named {node.name!r}",
                                 hint="give this worker another --name") from None
            raise
        async with node:
            on_ready(node.address)
            finished = asyncio.ensure_future(node.finished())
            await asyncio.wait([finished, stopped], return_when=asyncio.FIRST_COMPLETED)
        if not rejoin:
            return
        await asyncio.sleep(REJOIN_DELAY_S)


def run_scheduler(host: str = "127.0.0.1", port: int = DEFAULT_PORT, security: Security | None = None,
                  dashboard: str | None = None, on_ready: Callable[[str], None] = print) -> None:
    """Run a Dask scheduler until SIGINT/SIGTERM; refuses a non-loopback host without TLS.

    Its HTTP server (the dashboard, when bokeh is installed) listens on 127.0.0.1 unless
    ``dashboard`` (HOST:PORT) says otherwise: it is plain HTTP, reach it through an SSH tunnel.
    """
    check_bind(host, security)
    if port:  # Dask reports a busy port only as "Scheduler failed to start"
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Dask's server: a restart may reuse it
            try:
                probe.bind((host, port))
            except OSError as exc:
                raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}",
                                 hint="another process holds that port: pick another --port, or stop it") from None
    protocol = "tls" if security is not None else "tcp"
    http = dashboard or "127.0.0.1:8787"
    asyncio.run(_serve(lambda: Scheduler(host=host, port=port, protocol=protocol, security=security,
                                         dashboard_address=http), on_ready))


def run_worker(scheduler: str, devices: list[DeviceSpec], *, nthreads: int, name: str | None = None,
               host: str | None = None, security: Security | None = None,
               on_ready: Callable[[str], None] = print,
               dynamic: Callable[[], dict[str, float]] = dict) -> None:
    """Run a Dask worker offering ``devices`` until SIGINT/SIGTERM (or its scheduler is gone for good).

    ``dynamic()`` adds resources that change while the worker runs (a board worker's current
    bitstream): a worker that rejoins a restarted scheduler joins with their values then.
    """
    scheduler_host = scheduler.split("://")[-1].rsplit(":", 1)[0]
    if host is None:
        host = "127.0.0.1" if is_loopback(scheduler_host) else None
    if host is not None:
        check_bind(host, security)
    elif security is None:
        raise UsageError(f"a worker of the non-loopback scheduler {scheduler} must use TLS",
                         hint="pass --certs DIR --node NAME (see vdla pool certs)")
    protocol = "tls" if security is not None else "tcp"
    res = resources(devices)
    asyncio.run(_serve(lambda: Worker(scheduler, nthreads=nthreads, resources={**res, **dynamic()}, name=name,
                                      host=host, security=security, protocol=protocol, dashboard=False,
                                      dashboard_address="127.0.0.1:0"), on_ready, rejoin=True))


def local_cluster(n_workers: int | None = None, devices: list[DeviceSpec] | None = None, port: int = 0,
                  dashboard: str | None = None) -> LocalCluster:
    """A pool on 127.0.0.1: ``n_workers`` single-threaded worker processes (default: one per core)."""
    n = n_workers or os.cpu_count() or 1
    return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1", scheduler_port=port,
                        resources=resources(devices or []), dashboard_address=dashboard or "127.0.0.1:0")
