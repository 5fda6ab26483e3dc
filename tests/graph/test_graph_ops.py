"""Operator references against independent computations (bit-exact for integer paths)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.graph import Attrs, get_op
from vdla.compiler.graph.layout import pack, parse_layout, transform, unpack
from vdla.compiler.graph.errors import GraphError


def _naive_conv(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))).astype(np.int64)
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w.astype(np.int64))
    return out


def _conv_attrs(**kw: object) -> Attrs:
    return get_op("conv2d").make_attrs(kw)


def test_int8_conv2d_accumulates_exactly_into_int32() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (2, 32, 7, 7), dtype=np.int8)
    w = rng.integers(-128, 128, (16, 32, 3, 3), dtype=np.int8)
    bias = rng.integers(-1000, 1000, 16).astype(np.int32)
    attrs = _conv_attrs(strides=(2, 2), padding=(1, 1, 1, 1), out_dtype="int32")
    out = get_op("conv2d").reference([x, w, bias], attrs)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, _naive_conv(x, w, 2, 1) + bias[None, :, None, None])


def test_int32_accumulator_wraps_like_the_hardware() -> None:
    x = np.full((1, 1), 127, np.int8).repeat(16, axis=1)
    w = np.full((1, 16), 127, np.int8)
    big = np.array([2**31 - 1], np.int32)
    out = get_op("dense").reference([x, w, big], get_op("dense").make_attrs({"out_dtype": "int32"}))
    assert int(out[0, 0]) == ((16 * 127 * 127 + 2**31 - 1 + 2**31) % 2**32) - 2**31


def test_packed_conv2d_equals_unpacked() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (1, 32, 6, 6), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 32, 3, 3), dtype=np.int8)
    plain = get_op("conv2d").reference([x, w], _conv_attrs(padding=(1, 1, 1, 1), out_dtype="int32"))
    attrs = _conv_attrs(padding=(1, 1, 1, 1), out_dtype="int32", data_layout="NCHW1n16c",
                        kernel_layout="OIHW16o16i", out_layout="NCHW1n16c")
    packed = get_op("conv2d").reference([pack(x, "NCHW1n16c"), pack(w, "OIHW16o16i")], attrs)
    np.testing.assert_array_equal(unpack(packed, "NCHW1n16c"), plain)


def test_right_shift_is_the_alu_shr() -> None:
    x = np.array([-7, -1, 5, 2**30], np.int32)
    shr = get_op("right_shift").reference
    np.testing.assert_array_equal(shr([x], Attrs(shift=1)), [-4, -1, 2, 2**29])  # arithmetic (floor)
    np.testing.assert_array_equal(shr([x], Attrs(shift=-2)), [-28, -4, 20, 0])  # negative: left, wrapping


def test_cast_narrows_by_keeping_low_bits() -> None:
    out = get_op("cast").reference([np.array([300, -129, 127], np.int32)], Attrs(dtype="int8"))
    np.testing.assert_array_equal(out, [44, 127, 127])


def test_layout_roundtrip_and_tile_placement() -> None:
    a = np.arange(2 * 32 * 3 * 3).reshape(2, 32, 3, 3)
    p = pack(a, "NCHW1n16c")
    assert p.shape == (2, 2, 3, 3, 1, 16) and p[1, 1, 2, 0, 0, 5] == a[1, 21, 2, 0]
    np.testing.assert_array_equal(unpack(p, "NCHW1n16c"), a)
    w = np.arange(32 * 16 * 9).reshape(32, 16, 3, 3)
    assert pack(w, "OIHW16o16i")[1, 0, 1, 2, 3, 4] == w[19, 4, 1, 2]
    np.testing.assert_array_equal(transform(transform(a, "NCHW", "NCHW2n8c"), "NCHW2n8c", "NCHW1n16c"), p)
    assert parse_layout("NCHW1n16c").primal == "NCHW"
    with pytest.raises(GraphError, match="not a multiple of the block size"):
        pack(np.zeros((1, 3, 2, 2)), "NCHW1n16c")
    with pytest.raises(GraphError, match="malformed layout"):
        parse_layout("NC-HW")


def test_avg_pool_ceil_mode_divisors() -> None:
    x = np.ones((1, 1, 5, 5), np.float32)
    attrs = get_op("avg_pool2d").make_attrs({"pool_size": (2, 2), "strides": (2, 2), "ceil_mode": True,
                                             "padding": (1, 1, 1, 1), "count_include_pad": True})
    out = get_op("avg_pool2d").reference([x], attrs)
    # A 4th window would start in the bottom padding, so ceil mode drops it (PyTorch/ONNX rule).
    assert out.shape == (1, 1, 3, 3)
    assert out[0, 0, 0, 0] == pytest.approx(0.25)  # 1 real of 4 counted positions
    exclude = get_op("avg_pool2d").reference([x], attrs.replace(count_include_pad=False))
    np.testing.assert_allclose(exclude, 1.0)


def test_matmul_type_follows_numpy_shape_rules() -> None:
    """The matmul relation derives shapes by NumPy's rules (1-D operands, broadcast batches) and
    rejects what np.matmul rejects, from the shapes alone."""
    import itertools

    from vdla.compiler.graph.errors import TypeInferenceError
    from vdla.compiler.graph.ir import TensorType

    shapes = [(3,), (4,), (2, 3), (3, 4), (5, 3, 4), (1, 3, 4), (2, 1, 3, 4), (5, 4, 3), (7, 1, 4, 3), (3, 1)]
    relation = get_op("matmul").relation
    for a, b in itertools.product(shapes, repeat=2):
        types = [TensorType(a, "float32"), TensorType(b, "float32")]
        try:
            want = np.matmul(np.zeros(a), np.zeros(b)).shape
        except ValueError:
            with pytest.raises(TypeInferenceError, match="not compatible"):
                relation(types, Attrs({}))
            continue
        assert relation(types, Attrs({})).shape == want, (a, b)
