"""The auto-tuner on the device pool: real `vdla pool` processes on 127.0.0.1.

VDLA measurements are cycle-model cycles, which are deterministic, so a pool run must log exactly
the records of an in-process run of the same configs (the grid tuner proposes the same ones).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from vdla.compiler.autotune.database import Database
from vdla.compiler.autotune.executor import LocalExecutor
from vdla.compiler.autotune.measure import MeasureOptions
from vdla.compiler.autotune.session import tune_tasks
from vdla.compiler.autotune.task import Task, make_task
from vdla.runtime.pool import NoDeviceError, PoolExecutor
from vdla_hw.config import load_config

torch = pytest.importorskip("torch")

# The second conv of _Net: the VDLA task both tests tune (the first conv stays float on the CPU).
WORKLOAD = {"n": 1, "ic": 32, "h": 8, "w": 8, "oc": 32, "kh": 3, "kw": 3, "stride": 1, "pad": 1}
TRIALS, BATCH = 12, 4
POOL_TRIALS = 8  # of the in-process run's TRIALS: the grid tuner proposes configs in index order
ROOT = Path(__file__).resolve().parents[2]


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.c2 = torch.nn.Conv2d(32, 32, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.c2(torch.relu(self.c1(x))))


def _by_config(records: list) -> dict[str, tuple[str, tuple[float, ...]]]:
    return {r.config_key: (r.status, tuple(r.costs)) for r in records}


@pytest.fixture(scope="module")
def task() -> Task:
    return make_task("vdla_conv2d", WORKLOAD)


@pytest.fixture(scope="module")
def hw() -> dict:
    return load_config("default").to_dict()


@pytest.fixture(scope="module")
def reference(task: Task, hw: dict, tmp_path_factory: pytest.TempPathFactory) -> Database:
    """The in-process grid run: the records every pool run must reproduce."""
    db = Database(tmp_path_factory.mktemp("ref") / "local.jsonl")
    with LocalExecutor(workers=1) as ex:
        tune_tasks([task], db, ex, TRIALS, "grid", BATCH, hw, quiet=True)
    assert len(db.of_task(task)) == TRIALS
    return db


def test_pool_tuning_run_logs_the_records_and_best_config_of_the_in_process_run(
        sim_pool: tuple[str, object], task: Task, hw: dict, reference: Database, tmp_path: Path) -> None:
    address, _ = sim_pool
    db = Database(tmp_path / "pool.jsonl")
    with PoolExecutor(address) as ex:
        [outcome] = tune_tasks([task], db, ex, POOL_TRIALS, "grid", BATCH, hw, quiet=True)
    local = reference.of_task(task)[:POOL_TRIALS]
    assert [r.config_key for r in db.of_task(task)] == [r.config_key for r in local]
    assert _by_config(db.of_task(task)) == _by_config(local)
    best_local = min(local, key=lambda r: r.cost)
    assert outcome.best is not None and outcome.best.config_key == best_local.config_key
    assert outcome.best.cost == best_local.cost


def test_a_job_the_pool_cuts_is_logged_as_a_timeout_record_and_the_run_goes_on(
        sim_pool: tuple[str, object], task: Task, hw: dict, tmp_path: Path) -> None:
    address, _ = sim_pool
    db = Database(tmp_path / "cut.jsonl")
    with PoolExecutor(address) as ex:
        [outcome] = tune_tasks([task], db, ex, 2, "grid", 2, hw, MeasureOptions(build_timeout_s=1e-3), quiet=True)
    records = db.of_task(task)
    assert len(records) == 2 and outcome.best is None  # no config ran
    for r in records:
        assert r.status == "timeout" and r.detail.startswith("build: JobTimeoutError"), (r.status, r.detail)


def test_cpu_tuning_on_a_pool_without_cpu_workers_stops_with_the_missing_kind(
        sim_pool: tuple[str, object], tmp_path: Path) -> None:
    address, _ = sim_pool
    cpu_task = make_task("conv2d_nchwc", {"n": 1, "ic_outer": 1, "h": 8, "w": 8, "ic_block": 16, "oc_outer": 2, "kh": 3,
                                          "kw": 3, "oc_block": 16, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1})
    db = Database(tmp_path / "cpu.jsonl")
    with PoolExecutor(address) as ex, pytest.raises(NoDeviceError, match=cpu_task.device_kind) as err:
        tune_tasks([cpu_task], db, ex, 2, "grid", 2, quiet=True)
    assert "w1 (vdla-cycle, vdla-fsim)" in str(err.value)
    assert db.of_task(cpu_task) == []


def test_jobs_whose_process_dies_past_the_retries_are_error_records_and_the_run_goes_on(
        sim_pool: tuple[str, object], task: Task, hw: dict, reference: Database, tmp_path: Path) -> None:
    import psutil

    address, pool = sim_pool
    workers = [psutil.Process(n.proc.pid) for n in pool.nodes if n.ready.startswith("worker at")]  # type: ignore[attr-defined]
    stop, killed = threading.Event(), []

    def kill_job_processes() -> None:
        # SIGKILL the workers' job processes again and again: those caught mid-job crash their job.
        while not stop.wait(0.2):
            for child in (c for w in workers for c in w.children()):
                if "vdla.runtime.pool.child" in " ".join(child.cmdline()):
                    child.kill()
                    killed.append(child.pid)

    db = Database(tmp_path / "crash.jsonl")
    killer = threading.Thread(target=kill_job_processes, daemon=True)
    with PoolExecutor(address, retries=0) as ex:
        killer.start()
        try:
            tune_tasks([task], db, ex, POOL_TRIALS, "grid", BATCH, hw, quiet=True)
        finally:
            stop.set()
            killer.join()
    records = db.of_task(task)
    assert [r.config_key for r in records] == [r.config_key for r in reference.of_task(task)[:POOL_TRIALS]]
    expected = _by_config(reference.of_task(task))
    crashed = [r for r in records if r.status != "ok"]
    assert killed and crashed, "no job was caught mid-run"
    for r in crashed:
        assert r.status in ("build_error", "runtime_error") and "JobCrashedError" in r.detail, (r.status, r.detail)
    for r in records:
        if r.status == "ok":
            assert (r.status, r.costs) == expected[r.config_key]


def _export(path: Path) -> Path:
    torch.manual_seed(0)
    torch.onnx.export(_Net().eval(), torch.randn(1, 16, 8, 8), str(path), input_names=["x"], output_names=["y"],
                      opset_version=18, dynamo=False)
    return path


@pytest.mark.slow  # ~20 s: CPU timing jobs (exclusive) of the model's tasks on a pool worker offering this host's CPU
def test_llvm_tune_on_a_cpu_worker_logs_timed_records(pool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = _export(tmp_path / "net.onnx")
    sched = pool.scheduler()
    pool.worker(sched.address, "cpu1", "--device", "cpu=1")
    log = tmp_path / "cpu.jsonl"
    done = subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "tune", str(model), "--target", "llvm",
                           "--trials", "2", "--batch", "2", "--tuner", "grid", "--log", str(log), "--pool",
                           sched.address, "--quiet"], cwd=ROOT, env=pool.env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    # Both convs, and whatever element-wise kernels the graph keeps apart (the input's blocking copy).
    kinds = sorted(json.loads(key)["kind"] for key in {r["task_key"] for r in records})
    assert kinds.count("conv2d_nchwc") == 2 and set(kinds) <= {"conv2d_nchwc", "elementwise"}
    assert len(records) == 2 * len(kinds) == len({(r["task_key"], r["config_key"]) for r in records})
    assert all(r["status"] == "ok" and r["unit"] == "s" and min(r["costs"]) > 0 for r in records)


# Last in the module: it kills a worker of the shared pool (a later test would still have the other one).
def test_vdla_tune_on_the_pool_survives_a_worker_killed_mid_run(
        sim_pool: tuple[str, object], task: Task, reference: Database, tmp_path: Path) -> None:
    from distributed import Client

    model = _export(tmp_path / "net.onnx")
    address, pool = sim_pool
    workers = {n.address: n.proc.pid for n in pool.nodes if n.ready.startswith("worker at")}  # type: ignore[attr-defined]
    log = tmp_path / "tune.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "vdla.compiler.cli.main", "tune", str(model), "--target", "vdla",
                             "--trials", str(TRIALS), "--batch", str(BATCH), "--tuner", "grid", "--log", str(log),
                             "--pool", address, "--quiet"],
                            cwd=ROOT, env=pool.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # type: ignore[attr-defined]
    try:
        # Kill a worker the scheduler has given jobs, once the run is under way (records logged, more to come).
        victim, deadline = None, time.monotonic() + 300
        with Client(address, timeout=10, set_as_default=False) as client:
            while victim is None and proc.poll() is None and time.monotonic() < deadline:
                if log.exists() and log.read_text().count("\n") >= BATCH:
                    processing = client.processing()
                    victim = next((pid for addr, pid in workers.items() if processing.get(addr)), None)
                time.sleep(0.02)
        assert victim is not None, f"the run ended before a worker could be killed: {proc.communicate()}"
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "on pool " + address in out
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert all(r["task"]["kind"] == "vdla_conv2d" for r in lines)
    keys = [r["config_key"] for r in lines]
    assert len(keys) == len(set(keys)) == TRIALS  # nothing lost, nothing logged twice
    expected = _by_config(reference.of_task(task))
    for r in lines:
        if r["status"] == "ok":  # the killed worker's jobs ran again on the other one: the same cycles
            assert (r["status"], tuple(r["costs"])) == expected[r["config_key"]]
        else:  # or the pool gave up on a job after its retries: a classified error record, not a crash
            assert r["status"] in ("build_error", "runtime_error") and "WorkerLostError" in r["detail"], r
    assert set(keys) == set(expected)
