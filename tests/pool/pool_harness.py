"""Real pool processes on 127.0.0.1 for the pool tests: schedulers and workers started with ``vdla pool``.

A module of its own (not the conftest) so tests can import it by a name unique in the suite."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator


ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Node:
    """One ``vdla pool`` process, with the first line that said it was ready."""

    proc: subprocess.Popen
    ready: str
    log: Path
    lines: list[str] = field(default_factory=list)

    @property
    def address(self) -> str:
        return self.ready.split(" at ")[1].split()[0]

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(timeout=30)


class Pool:
    """Starts pool nodes for one test and stops them (by pid) at its end."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.nodes: list[Node] = []
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "VDLA_POOL_LOCK_DIR": str(tmp)}

    def start(self, *args: str, marker: str | None) -> Node:
        """Run ``vdla pool ARGS``; wait for a stdout line starting with ``marker`` (unless None)."""
        log = self.tmp / f"node{len(self.nodes)}.log"
        proc = subprocess.Popen([sys.executable, "-m", "vdla.compiler.cli.main", "pool", *args], cwd=ROOT, env=self.env,
                                stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
        node = Node(proc, "", log)
        self.nodes.append(node)
        got = threading.Event()

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                node.lines.append(line)
                if line.startswith(marker) and not got.is_set():
                    node.ready = line.strip()
                    got.set()

        threading.Thread(target=read, daemon=True).start()
        if marker is not None and not got.wait(START_TIMEOUT_S):
            raise AssertionError(f"`vdla pool {' '.join(args)}` did not start:\n{log.read_text()[-3000:]}")
        return node

    def scheduler(self, *args: str, port: int | None = None) -> Node:
        return self.start("scheduler", "--port", str(port or free_port()), *args, marker="scheduler at")

    def worker(self, address: str, name: str, *args: str) -> Node:
        return self.start("worker", address, "--name", name, *args, marker="worker at")

    def stop(self) -> None:
        for node in reversed(self.nodes):
            if node.proc.poll() is None:
                node.proc.send_signal(signal.SIGTERM)
        for node in self.nodes:
            try:
                node.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                node.kill()
