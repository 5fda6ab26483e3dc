"""Jobs through a real pool on 127.0.0.1: placement, results, timeouts and crashes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import cloudpickle
import numpy as np
import pytest

from vdla.runtime.backends import run as run_local
from vdla.runtime.pool import JobCrashedError, JobTimeoutError, NoDeviceError, PoolExecutor
from vdla.runtime.pool.kinds import rtl_kind
from vdla.runtime.pool.tasks import submit_program
from vdla.runtime.random_programs import random_program
from vdla_hw.config import load_config

# The job functions below live in this test module, which the workers cannot import: send them by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def sleep_forever() -> None:
    time.sleep(3600)


def crash_counted(folder: str) -> None:
    with open(os.path.join(folder, f"attempt-{time.monotonic_ns()}"), "w"):
        pass
    os.abort()


def test_missing_kind_fails_fast_naming_kind_and_workers(sim_pool) -> None:
    address, _ = sim_pool
    kind = rtl_kind(load_config("default"))
    with PoolExecutor(address) as ex:
        t0 = time.monotonic()
        with pytest.raises(NoDeviceError) as err:
            ex.submit(print, "never", device_kind=kind)
        assert time.monotonic() - t0 < 30  # raised at submit, not after a wait for a worker
        msg = str(err.value)
        assert kind in msg and "w1 (vdla-cycle, vdla-fsim)" in msg and "w2 (vdla-cycle, vdla-fsim)" in msg
        with pytest.raises(NoDeviceError, match="cpu-avx2"):
            ex.submit(print, "never", device_kind="cpu-avx2")


@pytest.mark.parametrize("backend", ["fsim", "cycle"])
def test_program_through_pool_is_bit_exact(sim_pool, backend: str) -> None:
    address, _ = sim_pool
    cfg = load_config("default")
    programs = [random_program(cfg, seed) for seed in range(4)]
    with PoolExecutor(address) as ex:
        futures = [submit_program(ex, p, backend) for p in programs]
        for program, fut in zip(programs, futures):
            remote, local = fut.result(timeout=120), run_local(program, backend)
            assert np.array_equal(remote.dram, local.dram)
            assert remote.cycles == local.cycles and dict(remote.counters) == dict(local.counters)


def test_vdla_sim_pool_cli_matches_local(sim_pool, tmp_path) -> None:
    address, p = sim_pool
    path = random_program(load_config("default"), 7).save(tmp_path / "prog.vdlaprog")
    cmd = [sys.executable, "-m", "vdla.compiler.cli.main", "sim", str(path), "--backend", "cycle", "--json"]
    local = subprocess.run(cmd, env=p.env, capture_output=True, text=True, check=True)
    remote = subprocess.run(cmd + ["--pool", address], env=p.env, capture_output=True, text=True, check=True)
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert (a["cycles"], a["counters"]) == (b["cycles"], b["counters"]) and a["cycles"] > 0
    bad = subprocess.run(cmd[:5] + ["--backend", "rtl", "--pool", address], env=p.env, capture_output=True, text=True)
    assert bad.returncode == 2 and "vdla-rtl-" in bad.stderr and "w1" in bad.stderr


def test_hung_job_is_cut_by_its_timeout_and_the_worker_goes_on(sim_pool) -> None:
    address, _ = sim_pool
    program = random_program(load_config("default"), 3)
    with PoolExecutor(address) as ex:
        hung = ex.submit(sleep_forever, device_kind="vdla-cycle", timeout_s=1.0)
        with pytest.raises(JobTimeoutError, match="timeout of 1 s"):
            hung.result(timeout=60)
        after = [submit_program(ex, program, "cycle") for _ in range(2)]
        for fut in after:
            assert np.array_equal(fut.result(timeout=60).dram, run_local(program, "cycle").dram)


def test_crashing_job_is_retried_a_bounded_number_of_times(sim_pool, tmp_path) -> None:
    address, _ = sim_pool
    with PoolExecutor(address, retries=2) as ex:
        with pytest.raises(JobCrashedError, match="SIGABRT"):
            ex.submit(crash_counted, str(tmp_path), device_kind="vdla-fsim").result(timeout=120)
    assert len(list(tmp_path.glob("attempt-*"))) == 3


def timed_stay(seconds: float) -> tuple[float, float, str]:
    """Stay ``seconds``; return the wall-clock interval and the worker (the job process's parent)."""
    start = time.time()
    time.sleep(seconds)
    return start, time.time(), str(os.getppid())


def rendezvous(folder: str, me: str, other: str) -> str:
    """Finish only once the ``other`` job has started too: proves the two ran at the same time."""
    open(os.path.join(folder, me), "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(folder, other)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{other} never ran beside {me}")
        time.sleep(0.02)
    return str(os.getppid())


def test_exclusive_jobs_own_the_host_while_others_pack_onto_cores(sim_pool, tmp_path) -> None:
    address, _ = sim_pool
    with PoolExecutor(address) as ex:
        packed = [ex.submit(rendezvous, str(tmp_path), a, b, device_kind="vdla-fsim") for a, b in (("a", "b"), ("b", "a"))]
        assert len({f.result(timeout=90) for f in packed}) == 2  # two workers of one host, at the same time
        solo = [ex.submit(timed_stay, 0.5, device_kind="vdla-fsim", exclusive=True) for _ in range(2)]
        (s1, e1, w1), (s2, e2, w2) = sorted(f.result(timeout=90) for f in solo)
        assert w1 != w2 and e1 <= s2  # on two workers, yet one after the other: the host is held


def test_status_lists_workers_kinds_and_jobs(sim_pool) -> None:
    address, p = sim_pool
    out = subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "pool", "status", address, "--json"],
                         env=p.env, capture_output=True, text=True, check=True)
    status = json.loads(out.stdout)
    assert status["scheduler"] == address
    assert {w["name"]: w["kinds"] for w in status["workers"]} == {
        "w1": {"vdla-cycle": 1, "vdla-fsim": 1}, "w2": {"vdla-cycle": 1, "vdla-fsim": 1}}
    assert sum(w["jobs_total"] for w in status["workers"]) > 0  # the earlier tests' jobs were counted


def test_a_second_worker_with_a_taken_name_is_a_user_error(sim_pool) -> None:
    address, p = sim_pool
    out = subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "pool", "worker", address, "--name", "w1",
                          "--device", "vdla-fsim=1"], env=p.env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "already has a worker named 'w1'" in out.stderr


def cycles_of(program) -> int:  # type: ignore[no-untyped-def]
    """A tuning measurement: the candidate's cycle count on the cycle model."""
    return int(run_local(program, "cycle").cycles)


def test_a_tuning_sweep_on_two_workers_picks_the_in_process_best(sim_pool) -> None:
    from vdla.runtime.workloads import GemmTiling, tiled_gemm_program

    address, _ = sim_pool
    cfg = load_config("default")
    tilings = [GemmTiling(tm, tn, tk) for tm in (2, 4) for tn in (1, 2) for tk in (1, 2)]
    candidates = [tiled_gemm_program(cfg, 4 * cfg.batch, 2 * cfg.block_in, 2 * cfg.block_out, virtual_threads=vt,
                                     tiling=t)[0] for t in tilings for vt in (1, 2)]
    local = [cycles_of(p) for p in candidates]
    with PoolExecutor(address) as ex:
        remote = [f.result(timeout=120) for f in [ex.submit(cycles_of, p, device_kind="vdla-cycle")
                                                  for p in candidates]]
    assert remote == local and len(set(local)) > 1
    assert remote.index(min(remote)) == local.index(min(local))
