"""Shared helpers for the compiler tests: run programs and compare with NumPy."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from vdla.compiler import te
from vdla.compiler.tir import PrimFunc, run
from vdla.compiler.tir.pipeline import PIPELINES

FP32_RTOL = 1e-5
FP32_ATOL = 1e-5


def random_args(func: PrimFunc, rng: np.random.Generator) -> list[np.ndarray]:
    """Random inputs for every parameter (outputs too; they are overwritten)."""
    out = []
    for p in func.params:
        shape = tuple(int(s.value) for s in p.shape)  # type: ignore[attr-defined]
        if p.dtype.startswith("float"):
            out.append(rng.uniform(-1, 1, shape).astype(p.dtype))
        else:
            out.append(rng.integers(-8, 8, shape).astype(p.dtype))
    return out


def execute(func: PrimFunc, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    copies = [np.array(a, copy=True) for a in args]
    run(func, *copies)
    return copies


def assert_same_results(before: PrimFunc, after: PrimFunc, seed: int = 0, rtol: float = FP32_RTOL,
                        atol: float = FP32_ATOL) -> None:
    """Both functions give the same outputs on the same random inputs."""
    args = random_args(before, np.random.default_rng(seed))
    for x, y in zip(execute(before, args), execute(after, args)):
        np.testing.assert_allclose(y, x, rtol=rtol, atol=atol)


def check_every_pass(func: PrimFunc, target: str = "llvm", seed: int = 0) -> PrimFunc:
    """Run the target pipeline one pass at a time, checking results after each pass."""
    args = random_args(func, np.random.default_rng(seed))
    want = execute(func, args)
    for p in PIPELINES[target]:
        func = p(func)
        got = execute(func, args)
        for x, y in zip(want, got):
            np.testing.assert_allclose(y, x, rtol=FP32_RTOL, atol=FP32_ATOL,
                                       err_msg=f"after pass {p.__name__}")
    return func


def matmul(n: int, m: int, k: int, dtype: str = "float32") -> tuple[te.Tensor, ...]:
    A = te.placeholder((n, k), dtype, "A")
    B = te.placeholder((k, m), dtype, "B")
    r = te.reduce_axis(k, "r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def conv2d(c: int, h: int, w: int, f: int, kh: int, pad: int) -> tuple[te.Tensor, ...]:
    """NCHW conv (batch 1) with a separate padding stage."""
    X = te.placeholder((c, h, w), name="X")
    W = te.placeholder((f, c, kh, kh), name="W")
    P = te.compute((c, h + 2 * pad, w + 2 * pad), lambda ci, y, x: te.if_then_else(
        (y >= pad) & (y < h + pad) & (x >= pad) & (x < w + pad), X[ci, y - pad, x - pad], 0.0),
        name="P")
    rc, ry, rx = te.reduce_axis(c, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kh, "rx")
    oh, ow = h + 2 * pad - kh + 1, w + 2 * pad - kh + 1
    Y = te.compute((f, oh, ow), lambda o, y, x: te.sum(
        P[rc, y + ry, x + rx] * W[o, rc, ry, rx], axis=[rc, ry, rx]), name="Y")
    return X, W, P, Y


def conv2d_ref(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    f, c, kh, kw = w.shape
    oh, ow = xp.shape[1] - kh + 1, xp.shape[2] - kw + 1
    out = np.zeros((f, oh, ow), np.float64)
    for dy in range(kh):
        for dx in range(kw):
            out += np.einsum("fc,chw->fhw", w[:, :, dy, dx], xp[:, dy:dy + oh, dx:dx + ow])
    return out.astype(np.float32)


def numpy_check(func: PrimFunc, ref: Callable[..., np.ndarray], n_inputs: int, seed: int = 0,
                rtol: float = FP32_RTOL, atol: float = FP32_ATOL) -> None:
    """The last parameter, computed by ``func``, equals ``ref(*inputs)``."""
    args = random_args(func, np.random.default_rng(seed))
    out = execute(func, args)
    np.testing.assert_allclose(out[-1], ref(*args[:n_inputs]), rtol=rtol, atol=atol)
