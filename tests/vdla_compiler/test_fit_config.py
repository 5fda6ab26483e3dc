"""Every preset compiles every shipped layer (or refuses with the reason): the capacity model of
``vdla.compiler.vdla.topi.fit`` against the real lowering, fsim runs bit-exact vs NumPy."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, assume, event, given, settings, strategies as st

from vdla.compiler.vdla import CapacityError, VdlaTarget
from vdla.compiler.vdla.target import SCOPE_UOP
from vdla.compiler.cli.main import main
from vdla.compiler.vdla.topi import (RESNET18_CONVS, Conv2dKnobs, Conv2dWorkload, Requantize, check_conv2d, compile_conv2d,
                                default_knobs, fits, footprint, knob_space, requant_shift, resnet18_layer)
from vdla_hw.config import ConfigError, load_config

PRESETS = ("tiny", "default", "wide")
LAYERS = ["C1"] + list(RESNET18_CONVS)
REFUSED = {("tiny", "C1")}
"""Preset x layer pairs no tiling fits: one 7x7 stride-2 output row of C1 needs 1603 input tiles, tiny holds 512."""
# Layers that overflowed the micro-op buffer on tiny before the model counted every micro-op list,
# plus one quick layer per other preset: the rest of the matrix runs in the slow suite.
QUICK = (("tiny", "C4"), ("tiny", "C11"), ("wide", "C12"))


def _uops_loaded(compiled) -> int:  # type: ignore[no-untyped-def]
    program = compiled.module.program
    return program.buffers["uops"].nbytes // 4 if "uops" in program.buffers else 0


def _check_layer(cfg: str, layer: str) -> None:
    wl = resnet18_layer(layer)
    target = VdlaTarget.from_config(cfg)
    compiled = compile_conv2d(wl, target, epilogue=Requantize(shift=requant_shift(wl)), virtual_threads=2,
                              pad_channels=True)
    assert footprint(wl.with_padded_channels(target.config), compiled.knobs, target.config)[SCOPE_UOP] == \
        _uops_loaded(compiled)
    assert check_conv2d(compiled)[0]


@pytest.mark.parametrize("cfg,layer", QUICK)
def test_preset_runs_layer_bit_exact(cfg: str, layer: str) -> None:
    _check_layer(cfg, layer)


@pytest.mark.slow
@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("cfg", PRESETS)
def test_every_preset_runs_every_layer(cfg: str, layer: str) -> None:
    if (cfg, layer) in REFUSED:
        with pytest.raises(CapacityError, match="fits no tiling"):
            _check_layer(cfg, layer)
    else:
        _check_layer(cfg, layer)


def test_compile_op_refuses_a_layer_with_the_field_to_enlarge(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile-op", "conv2d", "--shape", "layer=1", "--target", "vdla", "--config", "tiny"]) == 2
    err = capsys.readouterr().err
    assert "fits no tiling on config 'tiny'" in err and "hint: enlarge log_inp_buff_size from 11 to 13" in err


@st.composite
def legal_configs(draw):  # type: ignore[no-untyped-def]
    """Random configs inside vdla_hw's validation rules, with data widths the compiler serves."""
    inp, wgt = draw(st.sampled_from([3, 4])), draw(st.sampled_from([3, 4]))
    acc = draw(st.sampled_from([4, 5])) if inp == wgt == 3 else 5
    fields = dict(name="random", log_inp_width=inp, log_wgt_width=wgt, log_acc_width=acc,
                  log_out_width=draw(st.integers(3, acc)), log_batch=draw(st.integers(0, 1)),
                  log_block_in=draw(st.integers(1, 4)), log_block_out=draw(st.integers(1, 4)),
                  log_uop_buff_size=draw(st.integers(7, 13)), log_inp_buff_size=draw(st.integers(8, 14)),
                  log_wgt_buff_size=draw(st.integers(8, 15)), log_acc_buff_size=draw(st.integers(8, 15)),
                  log_bus_width=draw(st.integers(5, 7)))
    try:
        return load_config("tiny").replace(**fields)
    except ConfigError:  # e.g. the ISA fields of these buffer sizes overflow an instruction
        assume(False)


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much])
@given(cfg=legal_configs(), ic=st.integers(1, 2), oc=st.integers(1, 3), h=st.integers(3, 7), w=st.integers(3, 7),
       k=st.sampled_from([1, 3]), stride=st.sampled_from([1, 2]), bias=st.booleans())
def test_random_legal_config_compiles_small_conv(cfg, ic: int, oc: int, h: int, w: int, k: int, stride: int,  # type: ignore[no-untyped-def]
                                                 bias: bool) -> None:
    """Compiles and runs bit-exact with a micro-op footprint equal to what code generation loads, or
    refuses with a CapacityError whose suggested config then fits."""
    target = VdlaTarget(cfg)
    wl = Conv2dWorkload(cfg.batch, ic * cfg.block_in, h, w, oc * cfg.block_out, k, k, stride, k // 2)
    epilogue = Requantize(shift=requant_shift(wl), relu=bias, bias=bias)
    try:
        compiled = compile_conv2d(wl, target, epilogue=epilogue)
    except CapacityError as exc:
        event("refused: no tiling fits")
        _assert_hint_fits(exc, wl, target, epilogue)
        return
    event(f"compiled with {compiled.knobs.virtual_threads} virtual thread(s)")
    assert fits(target, wl, compiled.knobs, epilogue) is None
    assert footprint(wl, compiled.knobs, cfg, epilogue)[SCOPE_UOP] == _uops_loaded(compiled)
    assert check_conv2d(compiled, seed=ic + oc + h)[0]


def _assert_hint_fits(exc: CapacityError, wl: Conv2dWorkload, target: VdlaTarget, ep: Requantize) -> None:
    changes = {f: int(v) for f, v in re.findall(r"(log_\w+_buff_size) from \d+ to (\d+)", exc.hint or "")}
    assert changes, exc.hint
    bigger = VdlaTarget(target.config.replace(**changes))
    assert default_knobs(wl, bigger, 1, ep).virtual_threads == 1


def test_impossible_layer_names_the_field_to_enlarge() -> None:
    # Searches every single-thread tiling of a 224-row layer, many needing 10^5..10^6 micro-ops: runs in seconds
    # because fit.uop_count describes the split lists instead of enumerating them (it took 25 min when it did).
    # ResNet-18's first layer (3 channels padded to tiny's BLOCK_IN): one output row of a 7x7 stride-2
    # kernel needs 7 x 229 input tiles, and no tiling splits a row.
    tiny = VdlaTarget.from_config("tiny")
    wl = resnet18_layer("C1").with_padded_channels(tiny.config)
    with pytest.raises(CapacityError, match=r"fits no tiling on config 'tiny'.* 1603 vdla\.inp tiles") as info:
        default_knobs(wl, tiny)
    assert "enlarge log_inp_buff_size from 11 to 13" in (info.value.hint or "")
    _assert_hint_fits(info.value, wl, tiny, Requantize())


@pytest.mark.parametrize("cfg,wl", [
    ("tiny", Conv2dWorkload(1, 32, 14, 14, 32, 3, 3, 1, 1)),    # 3x3: reduction loops, two channel chunks
    ("default", Conv2dWorkload(1, 64, 14, 14, 64, 1, 1, 1, 0)),  # 1x1: the first step is the whole list
    ("default", Conv2dWorkload(1, 32, 13, 13, 64, 3, 3, 2, 1)),  # stride 2, odd rows
])
def test_fast_uop_count_equals_code_generation_on_sampled_knobs(cfg: str, wl: Conv2dWorkload) -> None:
    """The micro-op count the knob search uses (lists described, only look-alikes enumerated) is what code
    generation loads, for knobs spread over the whole space (both thread axes and loop orders, split edges on)."""
    target = VdlaTarget.from_config(cfg)
    space = knob_space(wl, target, (1, 2))
    assert len(space) >= 8
    for knobs in space[:: max(1, len(space) // 8)]:
        compiled = compile_conv2d(wl, target, knobs=knobs, epilogue=Requantize(shift=requant_shift(wl)))
        assert footprint(wl, knobs, target.config)[SCOPE_UOP] == _uops_loaded(compiled), knobs


def test_knobs_that_overflow_the_micro_op_buffer_are_refused_before_lowering() -> None:
    tiny = VdlaTarget.from_config("tiny")
    wl = RESNET18_CONVS["C2"]
    knobs = Conv2dKnobs(oc_tile=2, oh_tile=2, ic_tile=1, virtual_threads=1)
    reason = fits(tiny, wl, knobs)
    # The bias on the STORE: the first chunk's GEMM split into its overwriting first step (56, one per
    # pixel of a row) and the guarded rest (504 - 56), plus the whole 504-uop GEMM of the later chunks.
    # split_prologue_load / split_drain_store add the pieces' lists: the first step in 2 output-channel
    # blocks (1 micro-op each once refolded), the last GEMM in 2 (9 each: the kernel taps); split_prologue_rest
    # the first tile's guarded rest in the same 2 blocks (8 each: the taps but the first).
    assert reason is not None and "needs 1044 vdla.uop tiles but the buffer holds 512" in reason
    assert "needs 1008 vdla.uop tiles" in (fits(tiny, wl, knobs, Requantize(split_edges=False)) or "")
    # The MOV path: GEMM 504 + 56 + bias 7 x 56 micro-ops (+ 56 for the ALU's ReLU/shift/clip without on_store)
    assert "needs 952 vdla.uop tiles" in (fits(tiny, wl, knobs, Requantize(bias_store=False)) or "")
    assert "needs 1008 vdla.uop tiles" in (fits(tiny, wl, knobs, Requantize(on_store=False)) or "")
    with pytest.raises(CapacityError, match="vdla.uop") as info:
        compile_conv2d(wl, tiny, knobs=knobs)
    assert "log_uop_buff_size to 13" in (info.value.hint or "")  # 1044 micro-ops x 4 B > 4 KB
    with pytest.raises(CapacityError, match="vdla.uop") as info:
        compile_conv2d(wl, tiny, knobs=knobs, epilogue=Requantize(split_edges=False))
    assert "log_uop_buff_size to 12" in (info.value.hint or "")


@pytest.mark.parametrize("oc,h,axis,threads", [(16, 14, "oh", 2), (48, 14, "oh", 2), (48, 7, "oc", 1),
                                               (16, 7, "oc", 1)])
def test_two_virtual_threads_with_one_or_three_oc_tiles(oc: int, h: int, axis: str, threads: int) -> None:
    """1 or 3 output-channel tiles cannot be split over 2 threads: the rows are, and with an odd
    number of rows (7, prime) the layer runs on one thread instead of failing."""
    default = VdlaTarget.from_config("default")
    wl = Conv2dWorkload(1, 32, h, 8, oc, 3, 3, 1, 1)
    compiled = compile_conv2d(wl, default, epilogue=Requantize(shift=requant_shift(wl)), virtual_threads=2)
    assert (compiled.knobs.virtual_threads, compiled.knobs.vt_axis if threads > 1 else "oc") == (threads, axis)
    assert check_conv2d(compiled)[0]


@pytest.mark.parametrize("field", ["log_inp_width", "log_wgt_width", "log_out_width"])
def test_data_widths_the_compiler_cannot_serve_are_refused_by_validation(field: str) -> None:
    with pytest.raises(ConfigError, match=f"{field} = 2 is out of range: allowed \\[3, 4\\]"):
        load_config("tiny").replace(name="narrow", **{field: 2})
