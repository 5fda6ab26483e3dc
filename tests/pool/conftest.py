"""Fixtures of the pool tests: real pool processes on 127.0.0.1 (``pool_harness``)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("distributed", reason="the pool needs pip install 'vdla[pool]'")

from pool_harness import Pool  # noqa: E402


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[Pool]:
    p = Pool(tmp_path)
    yield p
    p.stop()


@pytest.fixture(scope="module")
def sim_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Pool]]:
    """A scheduler and two workers, each offering vdla-fsim and vdla-cycle once (shared by a module)."""
    p = Pool(tmp_path_factory.mktemp("pool"))
    sched = p.scheduler()
    for name in ("w1", "w2"):
        p.worker(sched.address, name, "--device", "vdla-fsim=1", "--device", "vdla-cycle=1")
    yield sched.address, p
    p.stop()
