"""Int8 max pooling compiled for the VDLA (an identity GEMM per window tap, an ALU MAX chain, padding
made exact by an indicator offset) vs the graph operator ``max_pool2d``'s NumPy reference, bit-exactly
on fsim and cycle; and its placement by the partitioner."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.executor import run_all
from vdla.compiler.vdla import VdlaTarget
from vdla.compiler.vdla.topi.maxpool import MaxPoolWorkload, compile_max_pool, max_pool_reference
from vdla.compiler.vdla.topi.reference import pack_data, unpack_output
from vdla_hw.errors import UnsupportedError

DEFAULT = VdlaTarget.from_config("default")
BACKENDS = ("fsim", "cycle")

POOLS = {
    "3x3_s2_p1": MaxPoolWorkload(1, 32, 9, 7, 3, 3, 2, 1),   # ResNet's max pool, odd sizes
    "2x2_s2": MaxPoolWorkload(1, 16, 8, 6, 2, 2, 2, 0),
    "3x3_s1_p1_odd": MaxPoolWorkload(1, 16, 5, 3, 3, 3, 1, 1),
    "3x3_s2_p0_odd": MaxPoolWorkload(1, 16, 7, 9, 3, 3, 2, 0),
    "3x3_s2_p1_relu6": MaxPoolWorkload(1, 16, 7, 7, 3, 3, 2, 1, lo=0, hi=6),  # a clamp folded after the max
}

#: Standalone int8 ReLU / clip: the 1x1 window with the clamp.
CLAMPS = {
    "relu": MaxPoolWorkload(1, 16, 5, 6, 1, 1, lo=0),
    "clip": MaxPoolWorkload(1, 32, 4, 4, 1, 1, lo=-20, hi=50),
}


@lru_cache(maxsize=None)
def _compiled(name: str):  # type: ignore[no-untyped-def]
    return compile_max_pool(POOLS[name], DEFAULT)


def _data(rng: np.random.Generator, wl: MaxPoolWorkload) -> np.ndarray:
    x = rng.integers(-128, 128, (wl.n, wl.c, wl.h, wl.w)).astype(np.int8)
    x[:, : wl.c // 2, 0, :] = -128  # saturation corners: a border row of -128 and one of 127
    x[:, : wl.c // 2, -1, :] = 127
    x[:, 1] = -128  # a whole channel at the minimum
    x[:, wl.c // 2:] = -rng.integers(1, 129, (wl.n, wl.c - wl.c // 2, wl.h, wl.w))  # all negative: padding must not win
    return x


@pytest.mark.parametrize("name", sorted(POOLS))
def test_max_pool_bit_exact_on_fsim_and_cycle(name: str) -> None:
    wl = POOLS[name]
    compiled = _compiled(name)
    x = _data(np.random.default_rng(len(name)), wl)
    want = max_pool_reference(x, wl)
    if wl.lo == -128:
        assert (want[:, 1] == -128).all() and want.max() == 127 and (want[:, wl.c // 2:] < 0).all()
    else:
        assert want.min() == wl.lo and want.max() == wl.hi
    for backend in BACKENDS:
        got, result = compiled.run_packed(pack_data(DEFAULT.config, x), backend)
        np.testing.assert_array_equal(unpack_output(got), want, err_msg=f"{name} on {backend}")
        if backend == "cycle":
            assert result.cycles > 0


@pytest.mark.parametrize("name", sorted(CLAMPS))
def test_standalone_clamp_bit_exact_on_fsim_and_cycle(name: str) -> None:
    wl = CLAMPS[name]
    compiled = compile_max_pool(wl, DEFAULT)
    x = np.random.default_rng(5).integers(-128, 128, (wl.n, wl.c, wl.h, wl.w)).astype(np.int8)
    want = max_pool_reference(x, wl)
    assert want.min() == wl.lo and want.max() == wl.hi and not np.array_equal(want, x)
    for backend in BACKENDS:
        got, _ = compiled.run_packed(pack_data(DEFAULT.config, x), backend)
        np.testing.assert_array_equal(unpack_output(got), want, err_msg=f"{name} on {backend}")


def test_padding_never_wins() -> None:
    """An all -128 image pools to -128 everywhere, the border windows (which read the LOAD's zero padding)
    included; an all-zero one to 0."""
    wl = POOLS["3x3_s1_p1_odd"]
    compiled = _compiled("3x3_s1_p1_odd")
    for v in (-128, -1, 0):
        x = np.full((wl.n, wl.c, wl.h, wl.w), v, np.int8)
        got, _ = compiled.run_packed(pack_data(DEFAULT.config, x), "fsim")
        assert (unpack_output(got) == v).all(), v


def test_max_pool_uses_the_gemm_core_and_the_alu_max() -> None:
    """One identity GEMM per tap (and per tap of the indicator with padding), an ALU chain of ADD (tap +
    indicator), MAX and the ADD of -128, a STORE; without padding only MAX."""
    from vdla_hw.isa import AluInsn, AluOp, GemmInsn

    for name, ops in (("3x3_s2_p1", {AluOp.MAX, AluOp.ADD}), ("2x2_s2", {AluOp.MAX})):
        program = _compiled(name).bind()
        alus = [i for i in program.instructions if isinstance(i, AluInsn)]
        assert [i for i in program.instructions if isinstance(i, GemmInsn)]
        assert {AluOp(i.alu_op) for i in alus} == ops, name
        assert [i.imm for i in alus if i.use_imm] == ([-128] * len([i for i in alus if i.use_imm]))


def test_max_pool_rejects_what_it_cannot_do() -> None:
    with pytest.raises(UnsupportedError, match="BLOCK"):
        compile_max_pool(MaxPoolWorkload(1, 24, 4, 4, 2, 2, 2), DEFAULT)
    with pytest.raises(UnsupportedError, match="smaller than the window"):
        compile_max_pool(MaxPoolWorkload(1, 16, 4, 4, 2, 2, 1, 2), DEFAULT)
    with pytest.raises(UnsupportedError, match="clamp bounds"):
        compile_max_pool(MaxPoolWorkload(1, 16, 4, 4, 1, 1, lo=10, hi=5), DEFAULT)


def _pool_net(pool_bias: float, relu_after: bool = False) -> tuple:  # type: ignore[type-arg]
    rng = np.random.default_rng(3)

    def rand(shape: tuple[int, ...], s: float) -> np.ndarray:
        return (rng.standard_normal(shape) * s).astype(np.float32)

    b = GraphBuilder()
    x = b.input("x", (1, 16, 9, 9), "float32")
    y = b.op("conv2d", [x, b.const(rand((32, 16, 3, 3), 0.1), "w1"), b.const(np.full(32, pool_bias, np.float32), "b1")],
             "conv1", padding=(1, 1, 1, 1))
    y = b.op("max_pool2d", [y], "pool", pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    if relu_after:  # nothing before it absorbs this ReLU: a standalone VDLA kernel
        y = b.op("relu", [y], "relu_after_pool")
    y = b.op("conv2d", [y, b.const(rand((16, 32, 1, 1), 0.1), "w2")], "conv2")
    samples = [{"x": rand((1, 16, 9, 9), 1.0)} for _ in range(2)]
    return b.build([y]), samples, {"x": rand((1, 16, 9, 9), 1.0)}


def test_partition_places_int8_max_pool_and_relu_on_the_vdla_bit_exact() -> None:
    """conv -> 3x3/2 max pool (padded) -> ReLU -> conv: the int8 max pool is its own VDLA kernel between the
    two VDLA convs, and so is the ReLU after it (no conv or add before it absorbs it: an identity GEMM and
    the STORE's ReLU); every integer value equals the graph's NumPy int8 reference on fsim and cycle."""
    graph, samples, feed = _pool_net(-0.3, relu_after=True)
    compiled = build_model(graph, target="vdla", calibrate=samples, skip_first_conv=False, placement="all")
    entries = {e.ops: e for e in compiled.partition()}
    for ops in (("max_pool2d",), ("relu",)):
        assert entries[ops].device == "vdla" and entries[ops].reason is None, entries[ops]
    want = run_all(compiled.graph, feed)
    pool, relu = want[entries[("max_pool2d",)].name], want[entries[("relu",)].name]
    assert pool.dtype == np.int8 and (pool < 0).any()  # negative maxima: zero padding would be wrong
    assert relu.dtype == np.int8 and relu.min() == 0
    for backend in BACKENDS:
        got = compiled.module.run_all(feed, backend=backend)
        integer = [n for n, v in want.items() if v.dtype.kind in "iu" and n in got]
        assert {entries[("max_pool2d",)].name, entries[("relu",)].name} <= set(integer)
        for name in integer:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} on {backend}")


def test_a_float_max_pool_stays_on_the_host_saying_why() -> None:
    """A max pool of a float value (after a float stem) is float: it stays on the host with the reason."""
    graph, samples, _ = _pool_net(0.0)
    compiled = build_model(graph, target="vdla", calibrate=samples, skip_first_conv=True)
    entry = next(e for e in compiled.partition() if "max_pool2d" in e.ops)
    assert entry.device == "cpu" and "float" in entry.reason


@pytest.mark.slow
def test_max_pool_3x3_s2_p1_on_rtl() -> None:
    """The Verilated RTL computes what the NumPy reference computes (and fsim)."""
    from vdla.runtime.backends.rtl import RtlBackend

    why = RtlBackend.unavailable()
    if why is not None:
        pytest.fail(f"the rtl backend is unavailable here: {why}")
    wl = POOLS["3x3_s2_p1"]
    compiled = compile_max_pool(wl, DEFAULT)
    x = _data(np.random.default_rng(7), wl)
    got, result = compiled.run_packed(pack_data(DEFAULT.config, x), "rtl")
    np.testing.assert_array_equal(unpack_output(got), max_pool_reference(x, wl))
    assert result.cycles > 0
