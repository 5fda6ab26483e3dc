"""The CONFIG_ID / BUILD_ID registers of the Verilated design and the driver's config check."""

from __future__ import annotations

import pytest
from rtl_configs import configs_under_test

from vdla.runtime import run
from vdla.runtime.system_programs import build_case
from vdla_hw.config import load_config, preset_names
from vdla_hw.errors import DeviceFaultError
from vdla_hw.harness import RtlSim


@pytest.fixture(scope="module", params=configs_under_test(["tiny"]))
def tiny(request):
    return load_config(request.param)


def test_config_id_register_holds_the_digest(tiny) -> None:
    with RtlSim(tiny) as sim:
        assert f"{sim.read_reg('CONFIG_ID'):08x}" == tiny.digest[-8:]
        assert sim.read_reg("BUILD_ID") == 0  # the parameter's default: simulation stamps no build
        sim.check_config(tiny)  # the design's own config passes


def test_program_of_another_config_is_refused_naming_both(tiny) -> None:
    other = load_config(next(name for name in preset_names() if load_config(name).digest != tiny.digest))
    program = build_case(other, "gemm")
    with RtlSim(tiny) as sim, pytest.raises(DeviceFaultError) as err:
        sim.check_config(program.config)
    assert tiny.label() in str(err.value) and other.label() in str(err.value)
    assert err.value.hint and other.name in err.value.hint


def test_backend_reads_config_id_and_still_runs(tiny) -> None:
    # The rtl backend checks CONFIG_ID before loading the program; a matching design runs it.
    program = build_case(tiny, "gemm")
    assert (run(program, "rtl").dram == run(program, "fsim").dram).all()
