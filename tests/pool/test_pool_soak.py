"""A bounded run of bench/pool_soak.py: 4 clients, workers killed at random, the scheduler restarted once."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Callable

import pytest


@pytest.mark.slow
def test_soak_loses_and_duplicates_nothing_across_faults(tmp_path: Path,
                                                        bench_script: Callable[[str], ModuleType]) -> None:
    soak = bench_script("pool_soak")  # registered in sys.modules: the bench pickles its job functions by value
    report = soak.run_soak(jobs=48, clients=4, workers=2, seconds=240, kill_every=5.0, folder=tmp_path, seed=1)
    assert report["submitted"] == 48
    assert report["lost"] == 0 and report["duplicate"] == 0 and report["wrong"] == 0, report
    assert report["completed"] + report["failed"] == 48
    assert report["worker_kills"] >= 1 and report["scheduler_restarts"] == 1, report["chaos"]
    assert all(k > 0 for k in report["kinds"].values())
    # a client that disconnects mid-job gets a clear error; the next client is served
    saw = report["client_disconnect"]["disconnected_client_saw"]
    assert saw and all("closed its pool connection" in s for s in saw), saw
    assert report["client_disconnect"]["next_client_ok"] is True
    assert "No space left on device" in str(report["disk_full"]["error"])
