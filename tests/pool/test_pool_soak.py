"""A bounded run of bench/pool_soak.py: 4 clients, workers killed at random, the scheduler restarted once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _soak_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("pool_soak_bench", ROOT / "bench" / "pool_soak.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the bench pickles its job functions by value, by module name
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_soak_loses_and_duplicates_nothing_across_faults(tmp_path: Path) -> None:
    soak = _soak_module()
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
