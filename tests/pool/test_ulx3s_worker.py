"""A ULX3S board worker on the simulated SoC (`--port sim`): deploy checks, then programs bit-exact.

The deployed folder is what ``vdla fpga build --board ulx3s --no-run`` writes; the worker's board is
the whole SoC under Verilator of the folder's config, driven through its pty by the serial driver,
and its BUILD_ID must be the folder's (both come from the same sources).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from vdla.runtime.backends import run as run_local
from vdla.runtime.pool import PoolExecutor
from vdla.runtime.pool.kinds import fpga_kind
from vdla.runtime.pool.tasks import submit_program
from vdla.runtime.random_programs import random_program
from vdla_hw.config import load_config

CLI = [sys.executable, "-m", "vdla.compiler.cli.main"]


def vdla(env: dict, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.slow  # a pool, a LiteX generation and two simulated SoCs (deploy check, job process): ~1 min
def test_ulx3s_board_worker_checks_the_deploy_then_runs_programs(tmp_path) -> None:
    from pool_harness import Pool

    p = Pool(tmp_path)
    try:
        sched = p.scheduler()
        p.worker(sched.address, "ulx1", "--board", "ulx3s", "--port", "sim", "--store", str(tmp_path / "store"))
        folder = tmp_path / "ulx3s-tiny"
        r = vdla(p.env, "fpga", "build", "--board", "ulx3s", "--config", "tiny", "-o", str(folder), "--no-run")
        assert r.returncode == 0, r.stderr
        r = vdla(p.env, "fpga", "deploy", "--board", "ulx3s", "--bitstream", str(folder), "--pool", sched.address)
        assert r.returncode == 0, r.stdout + r.stderr
        cfg = load_config("tiny")
        assert f"ulx1: offers {fpga_kind('ulx3s', cfg)}" in r.stdout
        assert "BUILD_ID" in r.stdout and "self-test 'gemm' bit-exact vs fsim" in r.stdout
        program = random_program(cfg, 5)
        with PoolExecutor(sched.address) as ex:
            remote = submit_program(ex, program, "fpga", timeout_s=600).result(timeout=900)
        assert remote.backend == "fpga" and remote.extra["simulated"]
        assert np.array_equal(remote.dram, run_local(program, "fsim").dram)
    finally:
        p.stop()
