"""What ``vdla pool status`` reports: workers, their device kinds, queues and recent throughput."""

from __future__ import annotations

import sys
from typing import Any

import cloudpickle
from distributed import Client

from vdla.runtime.pool.board import board_info
from vdla.runtime.pool.jobs import RECENT_S, job_counts
from vdla.runtime.pool.kinds import kinds_of


def _scheduler_queues(dask_scheduler: Any) -> dict[str, Any]:
    # Runs on the scheduler: only Dask's own state is touched, so it needs nothing of this project.
    return {
        "processing": {ws.address: len(ws.processing) for ws in dask_scheduler.workers.values()},
        "waiting_for_a_worker": len(dask_scheduler.unrunnable) + len(getattr(dask_scheduler, "queued", ())),
    }


def pool_status(client: Client) -> dict[str, Any]:
    """A JSON-ready snapshot of the pool ``client`` is connected to."""
    info = client.scheduler_info(n_workers=-1)
    # Sent by value, so the scheduler need not import this module.
    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    try:
        queues = client.run_on_scheduler(_scheduler_queues)
    finally:
        cloudpickle.unregister_pickle_by_value(module)
    counts = client.run(job_counts)
    boards = client.run(board_info, on_error="return")  # a stock Dask worker without this project: no board
    workers = []
    for addr, w in sorted(info.get("workers", {}).items()):
        resources = w.get("resources") or {}
        c = counts.get(addr, {})
        workers.append({
            "address": addr, "name": str(w.get("name", addr)), "host": w.get("host"), "nthreads": w.get("nthreads"),
            "kinds": {k: resources[k] for k in kinds_of(resources)},
            "cpu_features": sorted(k[4:] for k in resources if k.startswith("cpu-")),
            "running": queues["processing"].get(addr, 0),
            "jobs_total": c.get("jobs_total", 0), "jobs_per_s": c.get("jobs_per_s", 0.0),
            "board": boards.get(addr) if isinstance(boards.get(addr), dict) else None,
        })
    return {"scheduler": info.get("address"), "dashboard": _dashboard(client, info), "workers": workers,
            "waiting_for_a_worker": queues["waiting_for_a_worker"], "recent_window_s": RECENT_S}


def _dashboard(client: Client, info: dict[str, Any]) -> str | None:
    if "dashboard" not in info.get("services", {}):
        return None
    try:
        import bokeh  # noqa: F401 - without it the scheduler serves no dashboard pages
    except ImportError:
        return None
    return client.dashboard_link


def format_status(status: dict[str, Any]) -> str:
    """The status as a table."""
    lines = [f"scheduler {status['scheduler']}: {len(status['workers'])} workers, "
             f"{status['waiting_for_a_worker']} jobs waiting for a worker"]
    rows = [("worker", "host", "threads", "running", "jobs", f"jobs/s ({status['recent_window_s']:g} s)", "devices")]
    for w in status["workers"]:
        kinds = ", ".join(f"{k}={v:g}" for k, v in w["kinds"].items()) or "-"
        rows.append((w["name"], str(w["host"]), str(w["nthreads"]), str(w["running"]), str(w["jobs_total"]),
                     f"{w['jobs_per_s']:.2f}", kinds))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        lines.append("  ".join(c.ljust(wd) for c, wd in zip(r, widths)) + "  " + r[-1])
    for w in status["workers"]:
        if w["cpu_features"]:
            simd = [f for f in w["cpu_features"] if f.startswith(("avx", "sse4", "fma", "neon", "sve", "asimd"))]
            lines.append(f"{w['name']}: cpu features {' '.join(simd)} (+{len(w['cpu_features']) - len(simd)} more)")
    for w in status["workers"]:
        if w["board"]:
            b = w["board"]
            lines.append(f"{w['name']}: {'emulated ' if b['emulate'] else ''}board {b['board']}, "
                         + (f"bitstream of config {b['config']!r} checked" if b["kind"]
                            else "no bitstream (vdla fpga deploy loads one)"))
    dash = status["dashboard"]
    lines.append(f"dashboard: {dash}" if dash else "dashboard: not served (start the scheduler with bokeh installed "
                 "and --dashboard HOST:PORT)")
    return "\n".join(lines)
