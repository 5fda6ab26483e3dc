"""TLS with mutual authentication: members with the pool's certificates work, anyone else is refused."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from distributed import Client

from vdla.runtime.backends import run as run_local
from vdla.runtime.pool import PoolExecutor, PoolUnreachableError
from vdla.runtime.pool.security import make_certs, node_security
from vdla.runtime.pool.tasks import submit_program
from vdla.runtime.random_programs import random_program
from vdla_hw.config import load_config
from vdla_hw.errors import UsageError


def tls_talk_without_certificate(address: str, ca: Path) -> bytes:
    """Open TLS to ``address`` trusting the pool's CA but showing no certificate, and read."""
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.check_hostname = False
    with socket.create_connection((host, int(port)), timeout=10) as raw, ctx.wrap_socket(raw) as conn:
        conn.sendall(b"\0" * 16)
        return conn.recv(16)


def test_tls_pool_serves_members_and_refuses_others(pool, tmp_path: Path) -> None:
    certs, other = tmp_path / "certs", tmp_path / "other"
    make_certs(certs, ["sched", "w1", "me"])
    make_certs(other, ["intruder"])  # a different CA
    sched = pool.scheduler("--certs", str(certs), "--node", "sched")
    assert sched.address.startswith("tls://127.0.0.1:")
    pool.worker(sched.address, "w1", "--device", "vdla-fsim=1", "--certs", str(certs), "--node", "w1")
    program = random_program(load_config("default"), 2)
    with PoolExecutor(sched.address, security=node_security(certs, "me")) as ex:
        assert np.array_equal(submit_program(ex, program, "fsim").result(timeout=60).dram,
                              run_local(program, "fsim").dram)
        # A worker whose certificate another CA signed never joins.
        intruder = pool.start("worker", sched.address, "--name", "evil", "--device", "vdla-fsim=1",
                              "--certs", str(other), "--node", "intruder", marker=None)
        deadline = time.monotonic() + 60
        while intruder.log.read_text().count("Waiting to connect") < 3:  # its handshakes keep failing
            assert time.monotonic() < deadline and intruder.proc.poll() is None, intruder.log.read_text()[-2000:]
            time.sleep(0.1)
        assert [w["name"] for w in ex.workers(refresh=True).values()] == ["w1"]
        assert not intruder.ready
    # A client without a certificate, or with another CA's, is refused.
    with pytest.raises(UsageError, match="TLS pool"):
        PoolExecutor(sched.address)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        tls_talk_without_certificate(sched.address, certs / "ca.pem")
    with pytest.raises(PoolUnreachableError):
        PoolExecutor(sched.address, security=node_security(other, "intruder"), connect_timeout_s=3)
    with pytest.raises(OSError):
        Client(sched.address.replace("tls://", "tcp://"), timeout=3, set_as_default=False)
    log = sched.log.read_text()
    assert "certificate" in log.lower() or "ssl" in log.lower()


def test_non_loopback_scheduler_without_tls_is_refused(pool) -> None:
    out = subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "pool", "scheduler", "--host", "0.0.0.0"],
                         env=pool.env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "not loopback" in out.stderr and "vdla pool certs" in out.stderr
