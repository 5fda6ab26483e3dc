"""Compiled conv2d / dense vs NumPy on fsim (and a subset on cycle), knobs and capacity errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from vdla.compiler.vdla import CapacityError, VdlaTarget
from vdla.compiler.vdla.topi import (RESNET18_CONVS, Conv2dKnobs, Conv2dWorkload, Requantize, check_conv2d, check_knobs,
                                compile_conv2d, dense_workload, knob_space, requant_shift, tune_conv2d)
from vdla.compiler.vdla.topi import reference as ref

DEFAULT = VdlaTarget.from_config("default")
FAST = ("C9", "C11", "C12")


def _compile(name: str, vt: int = 2):  # type: ignore[no-untyped-def]
    wl = RESNET18_CONVS[name]
    return compile_conv2d(wl, DEFAULT, epilogue=Requantize(shift=requant_shift(wl)), virtual_threads=vt)


@pytest.mark.parametrize("name", FAST)
def test_resnet18_layer_bit_exact_on_fsim(name: str) -> None:
    assert check_conv2d(_compile(name))[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(RESNET18_CONVS) - set(FAST)))
def test_resnet18_layer_bit_exact_on_fsim_all(name: str) -> None:
    assert check_conv2d(_compile(name))[0]


@pytest.mark.parametrize("vt", [1, 2])
def test_resnet18_layer_on_cycle_model(vt: int) -> None:
    ok, result, _, _ = check_conv2d(_compile("C11", vt), backend="cycle")
    assert ok and result.cycles > 0


def test_two_virtual_threads_hide_latency_on_cycle_model() -> None:
    cycles = [check_conv2d(_compile("C12", vt), backend="cycle")[1].cycles for vt in (1, 2)]
    assert cycles[1] < cycles[0]


def test_dense_512_to_1000() -> None:
    # 1000 outputs padded to 1008 (a multiple of BLOCK_OUT); batch rows on the "height" axis.
    wl = dense_workload(4, 512, 1008)
    compiled = compile_conv2d(wl, DEFAULT, epilogue=Requantize(shift=10, relu=False))
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (4, 512)).astype(np.int8)
    w = rng.integers(-128, 128, (1008, 512)).astype(np.int8)
    b = rng.integers(-5000, 5000, 1008).astype(np.int32)
    got, _ = compiled.run_nchw(x.T[None, :, :, None], w[:, :, None, None], b)
    want = ref.dense_reference(x, w, b, 10, False)
    assert np.array_equal(got[0, :, :, 0].T, want)


def test_without_bias_and_relu() -> None:
    wl = Conv2dWorkload(1, 16, 5, 7, 32, 3, 3, 2, 1)
    assert check_conv2d(compile_conv2d(wl, DEFAULT, epilogue=Requantize(shift=5, relu=False, bias=False)))[0]


@settings(max_examples=8, deadline=None)
@given(cfg=st.sampled_from(["default", "tiny", "wide"]), ic=st.integers(1, 3), oc=st.integers(1, 3),
       h=st.integers(3, 9), w=st.integers(3, 9), k=st.sampled_from([1, 3]), stride=st.sampled_from([1, 2]),
       vt=st.sampled_from([1, 2]), seed=st.integers(0, 99))
def test_random_conv_shapes_every_preset(cfg: str, ic: int, oc: int, h: int, w: int, k: int, stride: int, vt: int,
                                         seed: int) -> None:
    target = VdlaTarget.from_config(cfg)
    c = target.config
    wl = Conv2dWorkload(c.batch, ic * c.block_in, h, w, oc * c.block_out, k, k, stride, k // 2)
    space = knob_space(wl, target, (vt,))
    # Two virtual threads need two tiles of work along the split axis; tiny shapes have one.
    assume(space)
    knobs = space[seed % len(space)]
    compiled = compile_conv2d(wl, target, knobs=knobs, epilogue=Requantize(shift=requant_shift(wl)))
    assert check_conv2d(compiled, seed=seed)[0]


def test_knob_space_is_valid_and_varied() -> None:
    space = knob_space(RESNET18_CONVS["C6"], DEFAULT)
    assert len(space) > 20
    assert {k.virtual_threads for k in space} == {1, 2} and {k.loop_order for k in space} == {"oc_oh", "oh_oc"}


def test_whole_space_search_finds_what_the_cost_model_ranks_fourth() -> None:
    # The cost model has no startup/drain term: on this layer its first pick is 12% slower than its
    # fourth. candidates=0 measures all 32 tilings and must land on the fastest (the top 4 contain it).
    wl = Conv2dWorkload(1, 32, 6, 6, 32, 3, 3, 1, 1)
    ep = Requantize(shift=requant_shift(wl))
    cycles = {n: check_conv2d(tune_conv2d(wl, DEFAULT, candidates=n, epilogue=ep), backend="cycle")[1].cycles
              for n in (1, 4, 0)}
    assert len(knob_space(wl, DEFAULT, (2,), ep)) > 4
    assert cycles[0] == cycles[4] < cycles[1]


def test_capacity_error_names_the_buffer_and_overflow() -> None:
    wl = RESNET18_CONVS["C2"]
    with pytest.raises(CapacityError, match=r"needs 3364 vdla\.inp tiles .* 1316 tiles \(21056 B\) too many"):
        check_knobs(wl, Conv2dKnobs(oc_tile=4, oh_tile=56, ic_tile=1, virtual_threads=1), DEFAULT)
    with pytest.raises(CapacityError, match=r"vdla\.acc tiles .* too many"):
        check_knobs(wl, Conv2dKnobs(oc_tile=4, oh_tile=28, ic_tile=1, virtual_threads=1), DEFAULT)


def test_unmappable_shape_raises_clear_error() -> None:
    with pytest.raises(ValueError, match="multiple of BLOCK_IN"):
        compile_conv2d(Conv2dWorkload(1, 3, 224, 224, 64, 7, 7, 2, 3), DEFAULT)


@pytest.mark.slow
@pytest.mark.parametrize("wl, knobs", [
    (Conv2dWorkload(1, 32, 6, 6, 32, 3, 3, 1, 1), Conv2dKnobs(1, 3, 1, 2, "oc", "oc_oh")),
    # one input-channel chunk: each thread's bias MOV issues right before its GEMM (inject_virtual_thread)
    (Conv2dWorkload(1, 64, 8, 8, 32, 1, 1, 1, 0), Conv2dKnobs(2, 2, 4, 2, "oh", "oc_oh")),
], ids=["3x3", "1x1"])
def test_small_compiled_conv_on_rtl(wl: Conv2dWorkload, knobs: Conv2dKnobs) -> None:
    from vdla.runtime.backends.rtl import RtlBackend

    why = RtlBackend.unavailable()
    if why is not None:
        pytest.skip(why)
    ok, result, _, _ = check_conv2d(compile_conv2d(wl, DEFAULT, knobs=knobs, epilogue=Requantize(shift=9)), backend="rtl")
    assert ok and result.cycles > 0
