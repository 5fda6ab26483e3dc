"""Soak benchmark: the device pool under sustained load from several clients while its nodes die.

A pool of real ``vdla pool`` processes on 127.0.0.1 (a scheduler and ``--workers`` workers
offering ``vdla-fsim`` and ``vdla-cycle``) serves ``--clients`` client threads, each with its own
:class:`PoolExecutor`, submitting a mix of jobs with a bounded number in flight:

- ``sim``: a random program of the tiny preset on the functional model (its DRAM digest);
- ``tune``: a tuning measurement, the cycle count of one tiling of a GEMM on the cycle model.

While they run, a chaos thread kills a random worker with SIGKILL every ``--kill-every`` seconds
and starts a fresh one, and kills the scheduler once (restarted on the same port). Every job
records each start in a marker file, so a job that ran more than once counts as retried. At the
end every job must have exactly one outcome: a result (checked against the same work done in
this process: ``wrong`` must be 0) or an error with its reason; ``lost`` (no outcome) and
``duplicate`` (two outcomes) must be 0.

Two faults are then shown on their own: a client that disconnects with jobs in flight (its
futures end with a clear error, the other clients' jobs are untouched), and a job whose disk is
full (it writes to ``/dev/full``: the client gets ``OSError: No space left on device``, the job
fails with that reason and nothing else is lost).

Run: ``python bench/pool_soak.py [--jobs 400] [--clients 4] [--workers 3] [--seconds 600]``;
writes ``bench/results/pool_soak.json``. Loopback only; bounded in job count and time.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import random
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import cloudpickle
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from vdla.runtime.backends import run as run_local  # noqa: E402
from vdla.runtime.pool import PoolExecutor  # noqa: E402
from vdla.runtime.pool.processes import PoolProcess, PoolProcesses, PoolStartError, free_port  # noqa: E402
from vdla.runtime.random_programs import random_program  # noqa: E402
from vdla.runtime.workloads import GemmTiling, tiled_gemm_program  # noqa: E402
from vdla_hw.config import load_config  # noqa: E402
from host import host_line, host_record  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])

KINDS = ("sim", "tune")


def payload(kind: str, variant: int):  # type: ignore[no-untyped-def]
    """The program a job of ``kind`` runs: few variants, so this process can check every result."""
    if kind == "sim":
        return random_program(load_config("tiny"), variant)
    tm, tn, tk = ((4, 1, 2), (4, 2, 2), (8, 1, 2), (8, 2, 4))[variant % 4]
    program, _ = tiled_gemm_program(load_config("tiny"), 32, 32, 32, tiling=GemmTiling(tm, tn, tk))
    return program


def work(kind: str, program) -> str:  # type: ignore[no-untyped-def]
    """What a job computes: a digest of the simulated DRAM, or the measured cycle count."""
    if kind == "sim":
        return hashlib.sha256(run_local(program, "fsim").dram.tobytes()).hexdigest()[:16]
    return str(int(run_local(program, "cycle").cycles or 0))


def soak_job(job_id: str, kind: str, program, marks: str, sleep_s: float = 0.0) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """A pool job: mark the start (one file per attempt), do the work, return (id, answer)."""
    Path(marks, f"{job_id}.{os.getpid()}.{time.monotonic_ns()}").touch()
    if sleep_s:
        time.sleep(sleep_s)
    return job_id, work(kind, program)


def disk_full_job(job_id: str, marks: str) -> str:
    """A job whose output disk is full: writing its result file fails with ENOSPC."""
    Path(marks, f"{job_id}.{os.getpid()}.{time.monotonic_ns()}").touch()
    with open("/dev/full", "w") as out:
        out.write("result\n" * 1000)
        out.flush()
    return job_id


class SoakPool(PoolProcesses):
    """The soak's pool: a scheduler on one port for the whole run (a restarted one takes its clients back)
    and workers offering ``vdla-fsim`` and ``vdla-cycle`` once each."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder, env={"PYTHONPATH": str(ROOT), "VDLA_QUIET": "1"})
        self.port = free_port()

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def start_scheduler(self) -> PoolProcess:
        return self.scheduler(port=self.port)

    def start_worker(self, name: str) -> PoolProcess:
        return self.worker(self.address, name, "--device", "vdla-fsim=1", "--device", "vdla-cycle=1",
                           "--nthreads", "1")


@dataclass
class Outcome:
    job_id: str
    kind: str
    variant: int
    latency_s: float
    answer: str | None = None
    error: str | None = None


def chaos(pool: SoakPool, stop: threading.Event, every_s: float, seed: int, log: list[str]) -> None:
    """Kill a random worker every ``every_s`` seconds and start a fresh one; the scheduler once."""
    rng = random.Random(seed)
    n = 0
    scheduler_done = False
    while not stop.wait(every_s):
        n += 1
        if not scheduler_done and n == 2:
            sched = next(x for x in pool.nodes if x.name == "scheduler" and x.alive)
            sched.kill()
            pool.nodes.remove(sched)
            pool.start_scheduler()
            scheduler_done = True
            log.append(f"{time.strftime('%H:%M:%S')} scheduler killed and restarted")
            continue
        live = pool.live_workers()
        if not live:
            continue
        victim = rng.choice(live)
        victim.kill()
        fresh = pool.start_worker(f"w{len(pool.nodes)}-{n}")
        log.append(f"{time.strftime('%H:%M:%S')} killed {victim.name}, started {fresh.name}")


def client(index: int, address: str, jobs: list[tuple[str, str, int]], programs: dict, marks: Path,
           outcomes: list[Outcome], lock: threading.Lock, window: int, deadline: float, bar: tqdm) -> None:
    """One client: submit its jobs with at most ``window`` in flight; record each outcome once."""
    with PoolExecutor(address, retries=3, reconnect_s=120) as ex:
        pending: dict[cf.Future, tuple[str, str, int, float]] = {}
        todo = list(jobs)
        while todo or pending:
            while todo and len(pending) < window and time.monotonic() < deadline:
                job_id, kind, variant = todo.pop(0)
                device = "vdla-fsim" if kind == "sim" else "vdla-cycle"
                fut = ex.submit(soak_job, job_id, kind, programs[kind, variant], str(marks), device_kind=device,
                                timeout_s=120)
                pending[fut] = (job_id, kind, variant, time.monotonic())
            if time.monotonic() >= deadline:
                todo.clear()  # bounded in time: what was not submitted is not counted
            if not pending:
                break
            done, _ = cf.wait(list(pending), timeout=max(1.0, deadline + 300 - time.monotonic()),
                              return_when=cf.FIRST_COMPLETED)
            if not done:
                break  # the outcome-less jobs are reported as lost
            for fut in done:
                job_id, kind, variant, t0 = pending.pop(fut)
                out = Outcome(job_id, kind, variant, time.monotonic() - t0)
                try:
                    got_id, out.answer = fut.result()
                    if got_id != job_id:
                        out.error = f"answer of {got_id} delivered to {job_id}"
                except Exception as exc:  # noqa: BLE001 - a failed job is an outcome with its reason
                    out.error = f"{getattr(exc, 'reason', type(exc).__name__)}: {str(exc).splitlines()[0][:160]}"
                with lock:
                    outcomes.append(out)
                bar.update()


def disconnect_case(address: str, programs: dict, marks: Path) -> dict[str, object]:
    """A client closes its connection with jobs in flight; another keeps working."""
    ex = PoolExecutor(address, retries=1)
    futs = [ex.submit(soak_job, f"dc{i}", "sim", programs["sim", 0], str(marks), 2.0, device_kind="vdla-fsim")
            for i in range(3)]
    time.sleep(0.5)
    ex.close()
    errors = []
    for f in futs:
        try:
            f.result(timeout=60)
            errors.append("completed")
        except BaseException as exc:  # noqa: BLE001 - reported as what the disconnected client sees
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}")
    with PoolExecutor(address) as other:
        after = other.submit(soak_job, "dc-after", "sim", programs["sim", 0], str(marks),
                             device_kind="vdla-fsim").result(timeout=120)
    return {"disconnected_client_saw": errors, "next_client_ok": after[1] == work("sim", programs["sim", 0])}


def disk_full_case(address: str, marks: Path) -> dict[str, object]:
    with PoolExecutor(address) as ex:
        try:
            ex.submit(disk_full_job, "disk-full", str(marks), device_kind="vdla-fsim").result(timeout=120)
            return {"error": None}
        except OSError as exc:
            return {"error": f"{type(exc).__name__}: {exc}", "reason": getattr(exc, "reason", None)}


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run_soak(jobs: int, clients: int, workers: int, seconds: float, kill_every: float, folder: Path,
             seed: int = 0, window: int = 6) -> dict[str, object]:
    """Run the soak; returns the report (see the module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    marks = folder / "marks"
    marks.mkdir(exist_ok=True)
    rng = random.Random(seed)
    programs = {(k, v): payload(k, v) for k in KINDS for v in range(4)}
    expected = {key: work(key[0], p) for key, p in programs.items()}  # the peer: the same work in this process
    plan = [(f"j{i}", rng.choice(KINDS), rng.randrange(4)) for i in range(jobs)]
    pool = SoakPool(folder)
    outcomes: list[Outcome] = []
    chaos_log: list[str] = []
    lock = threading.Lock()
    try:
        pool.start_scheduler()
        for i in range(workers):
            pool.start_worker(f"w{i}")
        stop = threading.Event()
        t0 = time.monotonic()
        deadline = t0 + seconds
        bar = tqdm(total=jobs, desc="soak jobs", disable=not sys.stderr.isatty())
        killer = threading.Thread(target=chaos, args=(pool, stop, kill_every, seed, chaos_log), daemon=True)
        killer.start()
        threads = [threading.Thread(target=client, args=(c, pool.address, plan[c::clients], programs, marks, outcomes,
                                                         lock, window, deadline, bar))
                   for c in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        stop.set()
        killer.join(timeout=120)
        bar.close()
        disconnect = disconnect_case(pool.address, programs, marks)
        disk = disk_full_case(pool.address, marks)
    finally:
        pool.stop()
    by_id: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_id.setdefault(o.job_id, []).append(o)
    submitted = {o.job_id for o in outcomes} | {j for j, _, _ in plan if any(m.name.startswith(j + ".")
                                                                           for m in marks.iterdir())}
    starts: dict[str, int] = {}
    for m in marks.iterdir():
        starts[m.name.split(".")[0]] = starts.get(m.name.split(".")[0], 0) + 1
    completed = [o for o in outcomes if o.error is None]
    failed = [o for o in outcomes if o.error is not None]
    wrong = [o for o in completed if o.answer != expected[o.kind, o.variant]]
    reasons: dict[str, int] = {}
    for o in failed:
        reasons[o.error.split(":")[0]] = reasons.get(o.error.split(":")[0], 0) + 1  # type: ignore[union-attr]
    latencies = [o.latency_s for o in completed]
    return {
        "submitted": len(submitted), "completed": len(completed), "failed": len(failed), "failed_reasons": reasons,
        "retried": sum(1 for j in submitted if starts.get(j, 0) > 1),
        "lost": sum(1 for j in submitted if j not in by_id), "duplicate": sum(1 for v in by_id.values() if len(v) > 1),
        "wrong": len(wrong), "p50_latency_s": percentile(latencies, 0.5), "p99_latency_s": percentile(latencies, 0.99),
        "throughput_jobs_per_s": len(completed) / wall if wall else 0.0, "wall_s": wall,
        "kinds": {k: sum(1 for o in outcomes if o.kind == k) for k in KINDS},
        "chaos": chaos_log, "worker_kills": sum("killed w" in c for c in chaos_log),
        "scheduler_restarts": sum("scheduler" in c for c in chaos_log),
        "client_disconnect": disconnect, "disk_full": disk,
    }


def in_process_rate(n: int = 8) -> float:
    """The peer: jobs per second of the same mix run one after another in this process."""
    programs = [payload(k, v) for k in KINDS for v in range(n // 2)]
    kinds = [k for k in KINDS for _ in range(n // 2)]
    t0 = time.perf_counter()
    for k, p in zip(kinds, programs):
        work(k, p)
    return len(programs) / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=600.0, help="stop submitting after this long")
    parser.add_argument("--kill-every", type=float, default=8.0, help="seconds between worker kills")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", default=str(ROOT / "bench" / "results" / "pool_soak_work"))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "pool_soak.json"))
    args = parser.parse_args()
    print(f"{host_line()}; load average {os.getloadavg()[0]:.1f}")
    peer = in_process_rate()
    try:
        report = run_soak(args.jobs, args.clients, args.workers, args.seconds, args.kill_every, Path(args.folder),
                          args.seed)
    except PoolStartError as err:
        raise SystemExit(f"pool_soak: {err}") from None
    rows = [("submitted", report["submitted"]), ("completed", report["completed"]), ("retried", report["retried"]),
            ("failed", f"{report['failed']} {report['failed_reasons'] or ''}"), ("lost", report["lost"]),
            ("duplicate", report["duplicate"]), ("wrong answers", report["wrong"]),
            ("p50 latency s", f"{report['p50_latency_s']:.2f}"), ("p99 latency s", f"{report['p99_latency_s']:.2f}"),
            ("throughput jobs/s", f"{report['throughput_jobs_per_s']:.2f}"),
            ("in-process jobs/s (peer)", f"{peer:.2f}"),
            ("worker kills / scheduler restarts", f"{report['worker_kills']} / {report['scheduler_restarts']}"),
            ("client disconnect", report["client_disconnect"]), ("disk full", report["disk_full"])]
    for name, value in rows:
        print(f"{name:<34} {value}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"host": host_record(),
                               "args": vars(args), "in_process_jobs_per_s": peer, **report}, indent=1, default=str))
    print(f"wrote {out}")
    if report["lost"] or report["duplicate"] or report["wrong"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
