"""`vdla pool` nodes as operating-system processes on this machine, which a test or a soak can kill.

:func:`vdla.runtime.pool.node.local_cluster` runs a pool inside one process; a fault-injection run needs
the opposite: a scheduler and workers each in a process of its own (started as ``vdla pool scheduler`` /
``vdla pool worker``, exactly as a user starts them), so that one can be killed with SIGKILL, restarted, or
left to fail on its own. The pool tests and ``bench/pool_soak.py`` both start their pools here.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

#: How long a node may take to print its ready line (a worker checks its devices first).
START_TIMEOUT_S = 90.0


class PoolStartError(RuntimeError):
    """A ``vdla pool`` process exited, or stayed silent, before it said it was ready."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PoolProcess:
    """One ``vdla pool`` process: its ready line (empty until it printed one), its stdout lines so far
    and its stderr log."""

    proc: subprocess.Popen
    name: str
    log: Path
    ready: str = ""
    lines: list[str] = field(default_factory=list)

    @property
    def address(self) -> str:
        """The address its ready line names (``scheduler at tcp://...`` / ``worker at tcp://...``)."""
        return self.ready.split(" at ")[1].split()[0]

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` (SIGKILL: no clean-up, as a crash) and reap the process."""
        if self.alive:
            os.kill(self.proc.pid, sig)
            self.proc.wait(timeout=30)


class PoolProcesses:
    """Starts ``vdla pool`` nodes under ``folder`` (their logs, and the pool's lock directory) and stops
    them by pid; ``env`` is added to this process's environment for every node."""

    def __init__(self, folder: Path, env: dict[str, str] | None = None,
                 start_timeout_s: float = START_TIMEOUT_S) -> None:
        self.folder = Path(folder)
        self.nodes: list[PoolProcess] = []
        self.env = {**os.environ, "VDLA_POOL_LOCK_DIR": str(self.folder), **(env or {})}
        self.start_timeout_s = start_timeout_s

    def start(self, *args: str, marker: str | None, name: str | None = None) -> PoolProcess:
        """Run ``vdla pool ARGS`` and wait for a stdout line starting with ``marker`` (not at all when None).

        Its stdout is read to the end on a thread (the pipe never fills); ``PoolStartError`` names the
        command and ends with its log when the line does not come."""
        name = name or f"node{len(self.nodes)}"
        log = self.folder / f"{name}.log"
        if log.exists():  # a restarted node keeps the log of the one before it
            log = self.folder / f"{name}.{len(self.nodes)}.log"
        proc = subprocess.Popen([sys.executable, "-m", "vdla.compiler.cli.main", "pool", *args], env=self.env,
                                stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
        node = PoolProcess(proc, name, log)
        self.nodes.append(node)
        said = threading.Event()  # the ready line came, or stdout closed without it

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                node.lines.append(line)
                if marker is not None and line.startswith(marker) and not said.is_set():
                    node.ready = line.strip()
                    said.set()
            said.set()

        threading.Thread(target=read, daemon=True).start()
        if marker is None:
            return node
        if not said.wait(self.start_timeout_s) or not node.ready:
            try:
                code = proc.wait(timeout=5)
                how = f"exited with {code}"
            except subprocess.TimeoutExpired:
                how = f"printed no {marker!r} line in {self.start_timeout_s:.0f} s"
                node.kill()
            raise PoolStartError(f"`vdla pool {' '.join(args)}` {how}; the end of its log {log}:\n"
                                 f"{log.read_text()[-3000:]}")
        return node

    def scheduler(self, *args: str, port: int | None = None, name: str = "scheduler") -> PoolProcess:
        """A scheduler on 127.0.0.1 (on ``port``, or a free one)."""
        return self.start("scheduler", "--port", str(port or free_port()), *args, marker="scheduler at", name=name)

    def worker(self, address: str, name: str, *args: str) -> PoolProcess:
        """A worker named ``name`` joined to the scheduler at ``address``; ``args`` give its devices."""
        return self.start("worker", address, "--name", name, *args, marker="worker at", name=name)

    def live_workers(self) -> list[PoolProcess]:
        return [n for n in self.nodes if n.ready.startswith("worker at") and n.alive]

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM every node (workers first), then SIGKILL whatever has not exited in ``timeout_s``."""
        for node in reversed(self.nodes):
            if node.alive:
                node.proc.send_signal(signal.SIGTERM)
        for node in self.nodes:
            try:
                node.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                node.kill()
