"""Builder / runner measurement on worker processes, and the classification of failures."""

from __future__ import annotations

import os
import time

import pytest

from vdla.compiler.autotune.executor import JobTimeout, LocalExecutor, WorkerDied
from vdla.compiler.autotune.measure import MeasureOptions, Measurer, Status
from vdla.compiler.autotune.space import Config
from vdla.compiler.autotune.task import Task, make_task


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _die() -> None:
    os._exit(3)


def _fail() -> None:
    raise ArithmeticError("boom")


def test_cpu_configs_are_checked_and_timed(cpu_task: Task, executor: LocalExecutor) -> None:
    m = Measurer(cpu_task, executor, MeasureOptions(repeats=3))
    space = m.template.space
    configs = [m.template.default(), space.get(0)]
    results = m.measure(configs)
    assert [r.config for r in results] == configs
    for r in results:
        assert r.status == Status.OK, r.detail
        assert len(r.costs) == 3 and 0 < r.cost < 1.0
        assert "relative error" in r.detail


@pytest.mark.parametrize("kind, workload", [
    ("depthwise_conv2d_nchwc", {"n": 1, "c_outer": 2, "h": 9, "w": 12, "c_block": 16, "kh": 3, "kw": 3,
                                "stride_h": 2, "stride_w": 2, "pad_h": 1, "pad_w": 1}),
    ("dense_pack", {"m": 12, "k": 40, "n": 48, "n_block": 16}),
])
def test_depthwise_and_dense_spaces_measure_correct_programs(kind: str, workload: dict, executor: LocalExecutor
                                                             ) -> None:
    """The blocked depthwise and the packed dense (both outer orders) spaces: default and the first
    and last legal configs build, run and match NumPy."""
    m = Measurer(make_task(kind, workload), executor, MeasureOptions(repeats=1))
    space = m.template.space
    assert space.why_illegal(m.template.default()) is None
    legal = space.legal_indices()
    configs = [m.template.default(), space.get(legal[0]), space.get(legal[-1])]
    for r in m.measure(configs):
        assert r.status == Status.OK, (r.config, r.detail)


def test_vdla_configs_are_measured_in_cycles_and_invalid_ones_never_built(vdla_task: Task, hw_config: dict,
                                                                          executor: LocalExecutor) -> None:
    m = Measurer(vdla_task, executor, hw_config=hw_config)
    space = m.template.space
    bad = Config(tuple((k, 4 if k == "virtual_threads" else v) for k, v in space.get(0).values))
    results = m.measure([m.template.default(), bad])
    assert results[0].status == Status.OK and results[0].detail == "bit-exact"
    assert results[0].cost == int(results[0].cost) > 0
    assert results[1].status == Status.INVALID and results[1].build_s == 0.0


def test_executor_turns_hangs_and_dead_workers_into_errors() -> None:
    with LocalExecutor(workers=1) as ex:
        kind = ex.device_kinds[0]
        hung = ex.submit(_sleep, 30.0, device_kind=kind, timeout_s=1.0)
        with pytest.raises(JobTimeout):
            hung.result(timeout=60)
        with pytest.raises(WorkerDied):
            ex.submit(_die, device_kind=kind, timeout_s=30).result(timeout=60)
        with pytest.raises(ArithmeticError, match="boom"):
            ex.submit(_fail, device_kind=kind).result(timeout=60)
        # The slot restarts its worker after each failure.
        assert ex.submit(_sleep, 0.01, device_kind=kind, exclusive=True).result(timeout=60) == 0.01
        with pytest.raises(ValueError, match="serves devices"):
            ex.submit(_sleep, 0.0, device_kind="cpu-imaginary")


AVX2 = "llvm -mcpu=haswell -mattr=+avx,+avx2,+fma"


@pytest.mark.parametrize("target", ["llvm", AVX2])
def test_register_tiles_are_sized_for_the_compile_target(target: str, executor: LocalExecutor,
                                                        small_conv: dict) -> None:
    from vdla.compiler.autotune.task import make_task

    task = make_task("conv2d_nchwc", dict(small_conv, oc_outer=4), target)
    m = Measurer(task, executor, MeasureOptions(repeats=2))
    assert task.target.endswith("(avx2)") if target == AVX2 else True
    registers = 16 if task.target.endswith("(avx2)") or task.target.endswith("(avx)") else 32
    vectors = 16 // m.template.lanes  # the 16-channel block in vector registers
    space = m.template.space
    two_d = space.from_dict(dict(m.template.default().to_dict(), ow_block=2, oc_block=2))
    too_big = space.from_dict(dict(m.template.default().to_dict(), ow_block=8, oc_block=4))
    assert 4 * 8 * vectors > registers - 2
    results = m.measure([two_d, too_big])
    assert results[0].status == Status.OK, results[0].detail
    assert results[1].status == Status.INVALID and f"{registers} vector registers" in results[1].detail
    # Accumulators + a weight vector per channel block + a broadcast input must fit (no spilling tile).
    spills = dict(m.template.default().to_dict(), ow_block=1, oc_block=4)
    for ow in (1, 2, 4, 8):
        fits = 4 * ow * vectors + 4 * vectors + 1 <= registers
        assert (space.why_illegal(space.from_dict(dict(spills, ow_block=ow))) is None) == fits


def test_a_worker_that_cannot_start_fails_its_job_and_the_executor_still_shuts_down(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker process whose start fails (e.g. no memory to spawn) fails the job it was for with
    WorkerDied naming the cause; shutting the executor down afterwards raises nothing (it once
    tried to kill the process that never started)."""
    import multiprocessing.context

    def refuse(self: object) -> None:
        raise OSError("spawn refused for the test")

    with LocalExecutor(workers=1) as ex:
        monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", refuse)
        fut = ex.submit(os.getpid, device_kind=ex.device_kinds[0], timeout_s=30)
        with pytest.raises(WorkerDied, match="spawn refused for the test"):
            fut.result(timeout=30)
        monkeypatch.undo()
        # the next job starts a worker of its own
        assert ex.submit(os.getpid, device_kind=ex.device_kinds[0], timeout_s=60).result(timeout=60) != os.getpid()


def test_leaving_the_executor_on_an_error_does_not_wait_for_queued_jobs() -> None:
    with pytest.raises(KeyError), LocalExecutor(workers=1) as ex:
        kind = ex.device_kinds[0]
        running = ex.submit(_sleep, 20.0, device_kind=kind, timeout_s=60)
        queued = [ex.submit(_sleep, 20.0, device_kind=kind, timeout_s=60) for _ in range(3)]
        while not running.running():
            time.sleep(0.01)
        raise KeyError("the caller failed")
    assert all(f.cancelled() for f in queued)
    assert isinstance(running.exception(timeout=5), WorkerDied)  # killed, not waited for


def test_timing_starts_each_call_from_the_model_cache_state() -> None:
    import numpy as np

    from vdla.compiler.autotune.measure import CACHE_STATES, time_cpu

    calls = []
    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    before = x.copy()
    # "model": one timed call per repeat, each after the flush and the producer's rewrite of the input,
    # which leaves its values exactly as they were.
    costs = time_cpu(lambda: calls.append(float(x.sum())), repeats=5, warmup=2, flush_bytes=1 << 16, produced=[x])
    assert len(costs) == 5 and len(calls) == 2 + 5 and all(c >= 0 for c in costs)
    np.testing.assert_array_equal(x, before)
    assert len(set(calls)) == 1
    # "cold" (the measurement before issue 28) averages ~1 ms of back-to-back calls per repeat.
    calls.clear()
    assert len(time_cpu(lambda: calls.append(0.0), repeats=3, warmup=1, flush_bytes=1 << 16, cache="cold")) == 3
    assert len(calls) > 1 + 3
    with pytest.raises(ValueError, match="not one of"):
        time_cpu(lambda: None, 1, 0, 0, cache="warm")
    with pytest.raises(ValueError, match=str(CACHE_STATES[0])):
        MeasureOptions(cache="hot")
