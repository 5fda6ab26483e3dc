"""Faults of real pool processes: a worker killed with SIGKILL mid-job, a scheduler restarted."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

from vdla.runtime.backends import run as run_local
from vdla.runtime.pool import PoolExecutor
from vdla.runtime.program import Program
from vdla.runtime.random_programs import random_program
from vdla_hw.config import load_config

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def marked_cycle_run(folder: str, program: Program, seconds: float) -> np.ndarray:
    """A cycle-model run that first records which worker runs it (its job process's parent) and lingers."""
    Path(folder, f"{os.getppid()}-{time.monotonic_ns()}").touch()
    time.sleep(seconds)
    return run_local(program, "cycle").dram


def wait_for(predicate, timeout_s: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def test_worker_killed_mid_job_is_retried_elsewhere_and_no_result_is_lost(pool, tmp_path: Path) -> None:
    sched = pool.scheduler()
    workers = {pool.worker(sched.address, name, "--device", "vdla-cycle=1").proc.pid: name for name in ("w1", "w2")}
    programs = [random_program(load_config("default"), seed) for seed in range(4)]
    marks = tmp_path / "marks"
    marks.mkdir()
    with PoolExecutor(sched.address, retries=2) as ex:
        done_before = ex.submit(marked_cycle_run, str(tmp_path), programs[0], 0.0, device_kind="vdla-cycle")
        first = done_before.result(timeout=60)
        futures = [ex.submit(marked_cycle_run, str(marks), p, 1.5, device_kind="vdla-cycle") for p in programs]
        wait_for(lambda: any(marks.iterdir()))
        victim = int(next(marks.iterdir()).name.split("-")[0])
        assert victim in workers
        os.kill(victim, signal.SIGKILL)
        results = [f.result(timeout=120) for f in futures]
        assert done_before.result() is first  # finished before the kill: kept
    for program, dram in zip(programs, results):
        assert np.array_equal(dram, run_local(program, "cycle").dram)
    runners = {int(m.name.split("-")[0]) for m in marks.iterdir()}
    assert runners == set(workers)  # the killed worker's job ran again on the other one
    assert len(list(marks.iterdir())) > len(programs)


@pytest.mark.slow
def test_scheduler_restart_is_survived_by_clients_and_workers(pool, tmp_path: Path) -> None:
    sched = pool.scheduler()
    port = sched.address.rsplit(":", 1)[1]
    pool.worker(sched.address, "w1", "--device", "vdla-cycle=1")
    program = random_program(load_config("default"), 5)
    expected = run_local(program, "cycle").dram
    with PoolExecutor(sched.address, reconnect_s=90) as ex:
        before = ex.submit(marked_cycle_run, str(tmp_path), program, 0.0, device_kind="vdla-cycle").result(timeout=60)
        in_flight = ex.submit(marked_cycle_run, str(tmp_path), program, 2.0, device_kind="vdla-cycle")
        wait_for(lambda: len(list(tmp_path.iterdir())) >= 2)
        sched.kill()
        pool.scheduler(port=int(port))
        assert np.array_equal(in_flight.result(timeout=120), expected)
        after = ex.submit(marked_cycle_run, str(tmp_path), program, 0.0, device_kind="vdla-cycle")
        assert np.array_equal(after.result(timeout=60), expected)
    assert np.array_equal(before, expected)


@pytest.mark.slow  # builds the Verilated RTL of the default config on first use (minutes)
def test_rtl_worker_checks_its_rtl_at_start_and_runs_rtl_jobs_bit_exact(pool) -> None:
    from vdla.runtime.pool.kinds import rtl_kind
    from vdla.runtime.pool.tasks import submit_program
    from vdla.runtime.system_programs import build_case

    cfg = load_config("default")
    sched = pool.scheduler()
    worker = pool.worker(sched.address, "rtl1", "--device", "vdla-rtl@default=1")
    assert rtl_kind(cfg) in worker.ready
    assert f"checking {rtl_kind(cfg)}" in worker.log.read_text()
    program = build_case(cfg, "gemm_vt2")
    with PoolExecutor(sched.address) as ex:
        result = submit_program(ex, program, "rtl").result(timeout=600)
    assert result.backend == "rtl" and result.cycles
    assert np.array_equal(result.dram, run_local(program, "fsim").dram)
