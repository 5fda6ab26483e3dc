"""Board workers on a real loopback pool: joining empty, and every refusal before a bitstream is loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_bundle import make_folder

from vdla.runtime.pool import NoDeviceError, PoolExecutor
from vdla.runtime.pool.board import deploy_job
from vdla.runtime.pool.bundle import Bundle, read_bundle
from vdla.runtime.pool.deploy import board_workers
from vdla.runtime.pool.tasks import fpga_board
from vdla_hw.config import load_config
from vdla_hw.errors import BadFileError

CLI = [sys.executable, "-m", "vdla.compiler.cli.main"]


@pytest.fixture(scope="module")
def board_pool(tmp_path_factory: pytest.TempPathFactory):
    """A scheduler, an emulated PYNQ-Z2 board worker and a simulator worker."""
    from pool_harness import Pool

    tmp = tmp_path_factory.mktemp("boards")
    p = Pool(tmp)
    sched = p.scheduler()
    p.worker(sched.address, "b1", "--board", "pynq-z2", "--emulate", "--store", str(tmp / "store-b1"))
    p.worker(sched.address, "sim", "--device", "vdla-fsim=1")
    yield sched.address, p, tmp
    p.stop()


def vdla(p, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), env=p.env, capture_output=True, text=True, timeout=300, check=False)


def test_board_worker_joins_offering_nothing(board_pool) -> None:
    address, p, _ = board_pool
    assert "offering nothing until vdla fpga deploy" in p.nodes[1].ready
    with PoolExecutor(address) as ex:
        workers = {w["name"]: w for w in ex.workers(refresh=True).values()}
        assert not workers["b1"]["resources"]
        boards = board_workers(ex.client)
        assert [(b.name, b.board, b.emulate, b.kind) for b in boards] == [("b1", "pynq_z2", True, None)]
    status = vdla(p, "pool", "status", address)
    assert status.returncode == 0 and "b1: emulated board pynq_z2, no bitstream (vdla fpga deploy" in status.stdout
    with PoolExecutor(address) as ex:
        # nothing is loaded: a run on the fpga backend says what to do
        with pytest.raises(NoDeviceError, match="no board of the pool .* is loaded with config") as err:
            fpga_board(ex, load_config("tiny"))
        assert "vdla fpga deploy" in err.value.hint


def test_deploy_to_a_board_nobody_has_names_the_board_workers(board_pool) -> None:
    address, p, tmp = board_pool
    folder = make_folder(tmp / "zcu", board="zcu104")
    r = vdla(p, "fpga", "deploy", "--board", "zcu104", "--bitstream", str(folder), "--pool", address)
    assert r.returncode == 2, r.stderr
    assert "no board worker of board 'zcu104'" in r.stderr and "b1 (emulated pynq_z2: no bitstream)" in r.stderr
    assert "vdla pool worker" in r.stderr and "Traceback" not in r.stderr
    r = vdla(p, "fpga", "deploy", "--board", "pynq-z2", "--worker", "b9", "--bitstream", str(make_folder(
        tmp / "b9")), "--pool", address)
    assert r.returncode == 2 and "no board worker 'b9' of board 'pynq-z2'" in r.stderr


def test_bad_folders_are_refused_before_sending(board_pool) -> None:
    address, p, tmp = board_pool
    folder = make_folder(tmp / "bad")
    r = vdla(p, "fpga", "deploy", "--board", "zcu104", "--bitstream", str(folder), "--pool", address)
    assert r.returncode == 2 and "bitstream for board 'pynq-z2', not 'zcu104'" in r.stderr
    (folder / "out/vdla.hwh").write_bytes(b"changed")
    r = vdla(p, "fpga", "deploy", "--board", "pynq-z2", "--bitstream", str(folder), "--pool", address)
    assert r.returncode == 2 and "out/vdla.hwh is not the hwh file bitstream.json describes" in r.stderr
    (folder / "bitstream.json").unlink()
    r = vdla(p, "fpga", "deploy", "--board", "pynq-z2", "--bitstream", str(folder), "--pool", address)
    assert r.returncode == 2 and "has no bitstream.json" in r.stderr and "Traceback" not in r.stderr


def test_worker_checks_the_bytes_it_receives(board_pool) -> None:
    """A bundle changed after the client's check (in transit, or a client that skips it) is refused there."""
    address, _, tmp = board_pool
    bundle = read_bundle(make_folder(tmp / "transit"))
    files = {**bundle.files, "out/vdla.bit": b"\0" * 16}
    with PoolExecutor(address) as ex:
        b1 = next(b.address for b in board_workers(ex.client))
        future = ex.client.submit(deploy_job, Bundle(bundle.source, files), workers=[b1],
                                  allow_other_workers=False, pure=False)
        with pytest.raises(BadFileError, match="out/vdla.bit is not the bit file"):
            future.result(timeout=120)
        assert [b.kind for b in board_workers(ex.client)] == [None]
        assert not any((tmp / "store-b1" / "deployments").iterdir())  # nothing is kept


def test_a_pool_job_cannot_pick_the_bitstream_or_run_off_a_board_worker(monkeypatch) -> None:
    from vdla.runtime.pool.board import STORE_ENV, run_on_board
    from vdla.runtime.random_programs import random_program
    from vdla_hw.errors import UsageError

    program = random_program(load_config("tiny"), 0)
    with pytest.raises(UsageError, match=r"\['bitstream'\] choose the bitstream"):
        run_on_board(program, "fpga", {"bitstream": "elsewhere"})
    monkeypatch.delenv(STORE_ENV, raising=False)
    with pytest.raises(UsageError, match="not a board worker"):
        run_on_board(program, "fpga", {})
