"""The pool's pieces without a cluster: device kinds, config digests, the host lock, certificates."""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cryptography import x509

from vdla.runtime.pool.jobs import host_lock
from vdla.runtime.pool.kinds import (KindError, backend_kind, kinds_of, parse_device, resources_for, satisfies,
                                worker_resources)
from vdla.runtime.pool.security import check_bind, make_certs
from vdla_hw.config import load_config
from vdla_hw.errors import UsageError


def test_config_digest_is_stable_and_tracks_the_hardware() -> None:
    cfg = load_config("default")
    assert cfg.digest == load_config("default").digest and len(cfg.digest) == 12
    assert cfg.replace(name="renamed").digest == cfg.digest
    assert cfg.replace(clock_mhz=cfg.clock_mhz + 1).digest != cfg.digest
    assert cfg.replace(timing={"dma_max_bursts": cfg.timing.dma_max_bursts + 1}).digest != cfg.digest


def test_kinds_map_to_resources_a_worker_must_all_have() -> None:
    cfg = load_config("default")
    assert resources_for("cpu-avx2+fma") == {"cpu": 1, "cpu-avx2": 1, "cpu-fma": 1}
    assert backend_kind("rtl", cfg) == f"vdla-rtl-{cfg.digest}" and backend_kind("cycle", cfg) == "vdla-cycle"
    avx2_host = worker_resources([parse_device("cpu", 1)], frozenset({"avx2", "fma", "sse4.2"}))
    assert satisfies(avx2_host, resources_for("cpu-avx2+fma"))
    assert not satisfies(avx2_host, resources_for("cpu-avx512f"))
    assert not satisfies(avx2_host, resources_for("cpu-avx512"))  # the tuner's ISA name of an AVX-512 host
    assert satisfies(worker_resources([parse_device("cpu", 1)], frozenset({"avx2", "avx512f"})),
                     resources_for("cpu-avx512"))
    rtl = parse_device("vdla-rtl@default=2", 1)
    assert (rtl.kind, rtl.slots) == (f"vdla-rtl-{cfg.digest}", 2)
    assert parse_device(rtl.kind, 1).config == cfg  # a digest is resolved through the presets
    for bad in ("gpu", "vdla-cycle=0", "vdla-rtl-123", "cpu-AVX!"):
        with pytest.raises(KindError):
            parse_device(bad, 1) if "=" in bad or bad == "gpu" else resources_for(bad)
    # a board is offered only by a board worker, after a deploy has checked its bitstream
    with pytest.raises(KindError, match="board worker") as err:
        parse_device("fpga-pynq_z2@tiny", 1)
    assert "vdla fpga deploy" in err.value.hint
    assert kinds_of({"fpga-pynq_z2-0123456789ab": 0, "vdla-cycle": 2, "cpu-avx2": 1}) == ["vdla-cycle"]


def test_exclusive_host_lock_waits_for_shared_jobs_and_blocks_new_ones(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VDLA_POOL_LOCK_DIR", str(tmp_path))
    events: list[str] = []
    shared_in = threading.Event()

    def turnstile_taken() -> bool:
        # The exclusive job holds the turnstile while it waits for the running shared job.
        fd = os.open(tmp_path / "vdla-pool-host.turnstile", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def shared(name: str, hold: float, after_exclusive_waits: bool = False) -> None:
        if after_exclusive_waits:
            shared_in.wait()  # "a" is in and has let go of the turnstile: only the exclusive job takes it now
        while after_exclusive_waits and not turnstile_taken():
            time.sleep(0.01)
        with host_lock(False):
            events.append(f"{name}+")
            shared_in.set()
            time.sleep(hold)
            events.append(f"{name}-")

    def exclusive() -> None:
        shared_in.wait()
        with host_lock(True):
            events.append("X+")
            time.sleep(0.2)
            events.append("X-")

    threads = [threading.Thread(target=shared, args=("a", 0.5)), threading.Thread(target=exclusive),
               threading.Thread(target=shared, args=("b", 0.0, True))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    # The exclusive job starts after the running shared one ends, and the later shared one waits for it.
    assert events == ["a+", "a-", "X+", "X-", "b+", "b-"]


def test_certs_are_signed_by_one_ca_and_off_loopback_needs_them(tmp_path: Path) -> None:
    files = make_certs(tmp_path, ["sched", "w1"], hosts=["10.0.0.5"])
    assert {f.name for f in files} == {"ca.pem", "sched.pem", "sched-key.pem", "w1.pem", "w1-key.pem"}
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.pem").read_bytes())
    node = x509.load_pem_x509_certificate((tmp_path / "w1.pem").read_bytes())
    node.verify_directly_issued_by(ca)
    assert (tmp_path / "w1-key.pem").stat().st_mode & 0o077 == 0
    make_certs(tmp_path, ["w2"])  # the CA is reused for later members
    x509.load_pem_x509_certificate((tmp_path / "w2.pem").read_bytes()).verify_directly_issued_by(ca)
    check_bind("127.0.0.1", None)
    with pytest.raises(UsageError, match="not loopback"):
        check_bind("0.0.0.0", None)


def test_worker_side_never_imports_the_compiler() -> None:
    code = ("import sys, vdla.runtime.pool.jobs, vdla.runtime.pool.node, vdla.runtime.pool.child, vdla.runtime.pool.status; "
            "import vdla.runtime.pool.tasks, vdla.runtime.pool.board, vdla.runtime.pool.deploy; "
            "print(sorted(m for m in sys.modules if m == 'vdla.compiler' or m.startswith('vdla.compiler.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"


def test_an_address_without_a_scheduler_is_a_clear_error() -> None:
    from vdla.runtime.pool import PoolExecutor, PoolUnreachableError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(PoolUnreachableError, match=f"no pool scheduler answers at tcp://127.0.0.1:{port}") as err:
        PoolExecutor(f"tcp://127.0.0.1:{port}", connect_timeout_s=1)
    assert "vdla pool up" in (err.value.hint or "")


def test_a_scheduler_on_a_busy_port_is_a_usage_error_naming_it() -> None:
    import socket

    from vdla.runtime.pool.node import run_scheduler
    from vdla_hw.errors import UsageError

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(UsageError, match=f"cannot listen on 127.0.0.1:{port}"):
            run_scheduler("127.0.0.1", port)
