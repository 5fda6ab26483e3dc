"""The per-channel multiplier of the VDLA epilogue (``Requantize.multiplier``): bit-exact vs NumPy on
fsim, the cycle model and the RTL, and the capacity model counts its resident tile and micro-ops exactly."""

from __future__ import annotations

import pytest

from vdla.compiler.vdla import VdlaTarget
from vdla.compiler.vdla.target import SCOPE_ACC, SCOPE_UOP
from vdla.compiler.vdla.topi import Conv2dKnobs, Conv2dWorkload, Requantize, check_conv2d, compile_conv2d, footprint

DEFAULT = VdlaTarget.from_config("default")


def _uops_loaded(compiled) -> int:  # type: ignore[no-untyped-def]
    program = compiled.module.program
    return program.buffers["uops"].nbytes // 4 if "uops" in program.buffers else 0


@pytest.mark.parametrize("relu,bias,vt,axis", [(True, True, 2, "oc"), (False, True, 2, "oh"), (True, False, 1, "oc"),
                                               (False, False, 2, "oc")])
def test_multiplier_bit_exact_on_fsim_and_cycle(relu: bool, bias: bool, vt: int, axis: str) -> None:
    wl = Conv2dWorkload(1, 32, 8, 8, 64, 3, 3, 1, 1)
    ep = Requantize(shift=14, relu=relu, bias=bias, multiplier=True)
    compiled = compile_conv2d(wl, DEFAULT, knobs=Conv2dKnobs(2, 4, 1, vt, axis, "oc_oh"), epilogue=ep)
    fp = footprint(wl, compiled.knobs, DEFAULT.config, ep)
    assert fp[SCOPE_UOP] == _uops_loaded(compiled)
    assert fp[SCOPE_ACC] == footprint(wl, compiled.knobs, DEFAULT.config, Requantize(bias=bias))[SCOPE_ACC] + wl.oc // 16
    for backend in ("fsim", "cycle"):
        ok, _, got, want = check_conv2d(compiled, seed=3, backend=backend)
        assert ok, backend
    assert len(set(want.ravel().tolist())) > 50  # the outputs spread over the int8 range, not all clipped


def test_default_knobs_account_for_the_multiplier_tile() -> None:
    wl = Conv2dWorkload(1, 64, 14, 14, 64, 3, 3, 1, 1)
    compiled = compile_conv2d(wl, DEFAULT, epilogue=Requantize(shift=12, multiplier=True))
    assert footprint(wl, compiled.knobs, DEFAULT.config, compiled.epilogue)[SCOPE_UOP] == _uops_loaded(compiled)
    assert check_conv2d(compiled)[0]


@pytest.mark.slow
def test_multiplier_bit_exact_on_rtl() -> None:
    from vdla.runtime.backends.rtl import RtlBackend

    why = RtlBackend.unavailable()
    if why is not None:
        pytest.skip(why)
    wl = Conv2dWorkload(1, 32, 6, 6, 32, 3, 3, 1, 1)
    knobs = Conv2dKnobs(oc_tile=1, oh_tile=3, ic_tile=1, virtual_threads=2, vt_axis="oc", loop_order="oc_oh")
    compiled = compile_conv2d(wl, DEFAULT, knobs=knobs, epilogue=Requantize(shift=15, multiplier=True))
    ok, result, _, _ = check_conv2d(compiled, backend="rtl")
    assert ok and result.cycles > 0
