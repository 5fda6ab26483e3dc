"""Small workloads shared by the auto-tuner tests."""

from __future__ import annotations

import pytest

from vdla.compiler.autotune.executor import LocalExecutor
from vdla.compiler.autotune.task import Task, make_task
from vdla_hw.config import load_config

SMALL_CONV = {"n": 1, "ic_outer": 1, "h": 8, "w": 8, "ic_block": 16, "oc_outer": 2, "kh": 3, "kw": 3, "oc_block": 16,
              "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1}
SMALL_VDLA_CONV = {"n": 1, "ic": 32, "h": 8, "w": 8, "oc": 32, "kh": 3, "kw": 3, "stride": 1, "pad": 1}


@pytest.fixture()
def small_conv() -> dict[str, int]:
    return dict(SMALL_CONV)


@pytest.fixture()
def small_vdla_conv() -> dict[str, int]:
    return dict(SMALL_VDLA_CONV)


@pytest.fixture()
def cpu_task() -> Task:
    return make_task("conv2d_nchwc", SMALL_CONV)


@pytest.fixture()
def vdla_task() -> Task:
    return make_task("vdla_conv2d", SMALL_VDLA_CONV)


@pytest.fixture(scope="session")
def hw_config() -> dict:
    return load_config("default").to_dict()


@pytest.fixture(scope="module")
def executor():
    with LocalExecutor(workers=2) as ex:
        yield ex
