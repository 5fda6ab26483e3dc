"""``vdla pool``: the device pool on dask.distributed (see docs/pool.md).

    vdla pool up                                   a pool on 127.0.0.1, one worker per core
    vdla pool scheduler [--host H --certs DIR --node N]
    vdla pool worker ADDR --device vdla-cycle=2 --device vdla-rtl@default --device cpu
    vdla pool worker ADDR --board pynq-z2 [--emulate]   a board worker (vdla fpga deploy loads it)
    vdla pool status ADDR
    vdla pool resources --device vdla-cycle=4     the same devices as a `dask worker --resources` string
    vdla pool certs DIR --node scheduler --node w1 --node me
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from vdla_hw.errors import UsageError


def add_tls_options(p: argparse.ArgumentParser) -> None:
    """``--certs DIR --node NAME``: this node's TLS files (made by ``vdla pool certs``)."""
    p.add_argument("--certs", metavar="DIR", help="the pool's TLS folder (vdla pool certs); required off loopback")
    p.add_argument("--node", metavar="NAME", help="this node's certificate name in --certs")


def add_pool_options(p: argparse.ArgumentParser) -> None:
    """``--pool ADDR`` plus the TLS options, for commands that can run on the pool."""
    p.add_argument("--pool", metavar="ADDR", help="run on the device pool whose scheduler is at ADDR "
                   "(e.g. tcp://127.0.0.1:8786; see vdla pool)")
    add_tls_options(p)


def require_pool() -> None:
    """Raise a user error naming the missing package when the pool's dependencies are not installed."""
    try:
        import cryptography  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"the device pool needs the Python package {exc.name!r}, which is not installed",
                         hint="pip install 'vdla[pool]'") from None


def _security(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from vdla.runtime.pool.security import security_from

    return security_from(args.certs, args.node)


def pool_executor(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The :class:`~vdla.runtime.pool.executor.PoolExecutor` of ``--pool ADDR [--certs DIR --node NAME]``."""
    require_pool()
    from vdla.runtime.pool.executor import connect

    return connect(args.pool, args.certs, args.node)


def register(subparsers: argparse._SubParsersAction) -> None:
    pool = subparsers.add_parser("pool", help="the device pool: run jobs on shared workers (dask.distributed)",
                                 description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = pool.add_subparsers(dest="pool_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser("up", help="a local pool on 127.0.0.1 (one worker per core) until Ctrl-C")
    p.add_argument("--workers", type=int, default=0, help="worker processes (default: one per core)")
    p.add_argument("--port", type=int, default=8786, help="scheduler port (default: 8786; 0 = any free)")
    p.add_argument("--device", action="append", default=[], metavar="KIND[=N]",
                   help="devices of every worker (default: cpu, vdla-fsim, vdla-cycle); vdla-rtl[@CONFIG] too")
    p.add_argument("--dashboard", metavar="HOST:PORT", help="serve the Dask dashboard (needs bokeh)")
    p.set_defaults(func=cmd_up)

    p = sub.add_parser("scheduler", help="run a pool scheduler (stock Dask) until Ctrl-C")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1; any other "
                   "needs --certs/--node)")
    p.add_argument("--port", type=int, default=8786, help="port (default: 8786)")
    p.add_argument("--dashboard", metavar="HOST:PORT", help="serve the Dask dashboard (needs bokeh)")
    add_tls_options(p)
    p.set_defaults(func=cmd_scheduler)

    p = sub.add_parser("worker", help="run a pool worker offering devices until Ctrl-C")
    p.add_argument("address", help="the scheduler, e.g. tcp://127.0.0.1:8786 or tls://10.0.0.1:8786")
    p.add_argument("--device", action="append", default=[], metavar="KIND[@CONFIG][=N]",
                   help="a device this worker offers, N jobs at a time (repeatable; default: cpu, vdla-fsim, "
                        "vdla-cycle): cpu, vdla-fsim, vdla-cycle, vdla-rtl[@CONFIG] (boards: --board)")
    p.add_argument("--board", help="a board worker: owns this FPGA board and offers it once vdla fpga deploy has "
                   "loaded and checked a bitstream (no --device then)")
    p.add_argument("--emulate", action="store_true", help="with --board: the board is the Verilated RTL of each "
                   "deployed bitstream's config (no hardware needed)")
    p.add_argument("--port", help="with --board ulx3s: the board's USB serial port (e.g. /dev/ttyUSB0), or 'sim' for "
                   "the simulated SoC")
    p.add_argument("--store", metavar="DIR", help="with --board: where deployed bitstreams are kept "
                   "(default: $VDLA_BOARD_DIR or ~/.vdla/boards, /NAME)")
    p.add_argument("--nthreads", type=int, default=0, help="jobs at once (default: the largest N, else cores)")
    p.add_argument("--name", help="worker name (default: Dask's)")
    p.add_argument("--host", help="interface to listen on (default: 127.0.0.1 for a loopback scheduler)")
    add_tls_options(p)
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("status", help="workers, their device kinds, queues and recent throughput")
    p.add_argument("address", help="the scheduler address")
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    add_tls_options(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("resources", help="check devices and print them as a Dask --resources string "
                       "(for workers started by dask-jobqueue / dask-kubernetes)")
    p.add_argument("--device", action="append", default=[], metavar="KIND[@CONFIG][=N]",
                   help="a device (repeatable; default: cpu, vdla-fsim, vdla-cycle), as for vdla pool worker")
    p.add_argument("--slots", type=int, default=1, help="N of devices given without =N (default: 1)")
    p.set_defaults(func=cmd_resources)

    p = sub.add_parser("certs", help="make a CA and per-node TLS certificates for a pool")
    p.add_argument("folder", help="folder for ca.pem, ca-key.pem and NODE.pem/NODE-key.pem (the CA is reused)")
    p.add_argument("--node", action="append", required=True, help="a node name (repeatable)")
    p.add_argument("--host", action="append", default=[], help="a host name/IP to put in the certificates")
    p.set_defaults(func=cmd_certs)


def _devices(specs: list[str], default_slots: int):  # type: ignore[no-untyped-def]
    from vdla.runtime.pool.kinds import parse_device

    return [parse_device(s, default_slots) for s in (specs or ["cpu", "vdla-fsim", "vdla-cycle"])]


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cmd_up(args: argparse.Namespace) -> int:
    require_pool()
    from vdla.runtime.pool.node import check_devices, local_cluster

    devices = _devices(args.device, 1)
    check_devices(devices, _progress)
    # Worker processes inherit an ignored SIGINT, so Ctrl-C stops the pool through this process
    # (which closes them) instead of interrupting each of them mid-flight.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        cluster = local_cluster(args.workers or None, devices, port=args.port, dashboard=args.dashboard)
    finally:
        signal.signal(signal.SIGINT, previous)
    with cluster:
        print(f"pool up: scheduler {cluster.scheduler_address}, {len(cluster.workers)} workers offering "
              f"{', '.join(d.kind for d in devices)}; Ctrl-C to stop", flush=True)
        print(f"use it with: vdla sim PROG.vdlaprog --backend cycle --pool {cluster.scheduler_address}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("pool down", flush=True)
    return 0


def cmd_scheduler(args: argparse.Namespace) -> int:
    require_pool()
    from vdla.runtime.pool.node import run_scheduler

    run_scheduler(args.host, args.port, _security(args), args.dashboard,
                  on_ready=lambda addr: print(f"scheduler at {addr}", flush=True))
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    require_pool()
    if args.board:
        return _board_worker(args)
    if args.emulate or args.store or args.port:
        raise UsageError("--emulate, --port and --store are for board workers", hint="add --board B")
    from vdla.runtime.pool.node import check_devices, run_worker

    cores = os.cpu_count() or 1
    devices = _devices(args.device, args.nthreads or cores)
    nthreads = args.nthreads or max([d.slots for d in devices] + [1])
    check_devices(devices, _progress)
    run_worker(args.address, devices, nthreads=nthreads, name=args.name, host=args.host, security=_security(args),
               on_ready=lambda addr: print(f"worker at {addr} offering {', '.join(d.kind for d in devices)}",
                                           flush=True))
    return 0


def _board_worker(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vdla.runtime.pool.board import BoardSpec, BoardWorker, default_store, install
    from vdla.runtime.pool.bundle import board_key
    from vdla.runtime.pool.node import run_worker
    from vdla_hw.fpga.boards import BOARDS

    if args.device:
        raise UsageError("a board worker offers only its board", hint="start another worker for --device ...")
    if board_key(args.board) not in {board_key(b) for b in BOARDS}:
        raise UsageError(f"unknown board {args.board!r}; boards: {', '.join(BOARDS)}")
    serial = next(b for n, b in BOARDS.items() if board_key(n) == board_key(args.board)).serial
    if serial and args.port is None:
        raise UsageError(f"the {args.board} is driven over its USB serial port", hint="add --port /dev/ttyUSB0 (or "
                         "--port sim for the simulated SoC)")
    if args.port is not None and not serial:
        raise UsageError(f"--port is for boards driven over a serial port; {args.board} is not one",
                         hint="drop --port")
    if args.port is not None and args.emulate:
        raise UsageError("--emulate is the emulated Zynq board; the simulated ULX3S is --port sim",
                         hint="drop --emulate")
    spec = BoardSpec(board_key(args.board), args.emulate, Path(args.store).resolve() if args.store
                     else default_store(args.board, args.name), args.port)
    spec.save()
    worker = BoardWorker(spec, args.name)
    install(worker)
    worker.recheck(_progress)

    def ready(addr: str) -> None:
        what = f"{'emulated ' if spec.emulate else ''}board {spec.board}" + (f" on {spec.port}" if spec.port else "")
        offer = (f"offering {worker.kind}" if worker.kind
                 else "offering nothing until vdla fpga deploy loads a bitstream")
        print(f"worker at {addr} for {what}, store {spec.store}, {offer}", flush=True)

    # One thread: the board runs one program (or one deploy) at a time.
    run_worker(args.address, [], nthreads=1, name=args.name, host=args.host, security=_security(args),
               on_ready=ready, dynamic=worker.resources)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    require_pool()
    import json

    from vdla.runtime.pool.executor import PoolExecutor
    from vdla.runtime.pool.status import format_status, pool_status

    with PoolExecutor(args.address, security=_security(args)) as ex:
        status = pool_status(ex.client)
    if args.json:
        print(json.dumps(status, indent=1))
    else:
        print(format_status(status))
    return 0


def cmd_resources(args: argparse.Namespace) -> int:
    require_pool()
    from vdla.runtime.pool.node import check_devices, resources

    devices = _devices(args.device, args.slots)
    check_devices(devices, _progress)
    print(" ".join(f"{k}={v:g}" for k, v in sorted(resources(devices).items())))
    return 0


def cmd_certs(args: argparse.Namespace) -> int:
    require_pool()
    from vdla.runtime.pool.security import make_certs

    for path in make_certs(args.folder, args.node, args.host):
        print(path)
    print(f"give each node ca.pem and its NAME.pem/NAME-key.pem; keep {args.folder}/ca-key.pem off the nodes")
    return 0
