"""NumPy references of the VDLA operators and the packed layouts they use.

Layouts (B = BATCH, BI = BLOCK_IN, BO = BLOCK_OUT of the config):

- data   NCHW{B}n{BI}c: ``(N/B, C/BI, H, W, B, BI)``
- kernel OIHW{BO}o{BI}i: ``(O/BO, I/BI, KH, KW, BO, BI)`` -- one BO x BI weight tile per (o, i, kh, kw)
- bias   ``(O/BO, B, BO)`` int32, each batch row holding the same values
- output NCHW{B}n{BO}c: ``(N/B, O/BO, OH, OW, B, BO)``
"""

from __future__ import annotations

import numpy as np

from vdla_hw.config import HwConfig


def conv2d_reference(data: np.ndarray, kernel: np.ndarray, bias: np.ndarray | None, stride: int, pad: int,
                     shift: int, relu: bool, out_width: int = 8, acc_width: int = 32,
                     multiplier: np.ndarray | None = None) -> np.ndarray:
    """int8 NCHW conv2d + bias, then ReLU (optional), the per-output-channel ``multiplier`` (optional,
    wrapping like the int32 accumulator), arithmetic shift right and clip, as int8 NCHW."""
    n, c, h, w = data.shape
    o, c2, kh, kw = kernel.shape
    if c != c2:
        raise ValueError(f"data has {c} channels but the kernel expects {c2}")
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    x = np.pad(data.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    acc = np.zeros((n, o, oh, ow), np.int64)
    k = kernel.astype(np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i: i + stride * oh: stride, j: j + stride * ow: stride]
            acc += np.einsum("nchw,oc->nohw", patch, k[:, :, i, j], optimize=True)
    if bias is not None:
        acc += bias.astype(np.int64)[None, :, None, None]
    acc = _wrap(acc, acc_width)
    if relu:
        acc = np.maximum(acc, 0)
    if multiplier is not None:
        acc = _wrap(acc * multiplier.astype(np.int64)[None, :, None, None], acc_width)
    lo, hi = -(1 << (out_width - 1)), (1 << (out_width - 1)) - 1
    return np.clip(acc >> shift, lo, hi).astype(np.int8 if out_width <= 8 else np.int32)


def depthwise_reference(data: np.ndarray, kernel: np.ndarray, bias: np.ndarray | None, stride: int, pad: int,
                        shift: int, relu: bool, out_width: int = 8, acc_width: int = 32,
                        multiplier: np.ndarray | None = None) -> np.ndarray:
    """:func:`conv2d_reference` of a depthwise conv (``kernel`` ``(C, 1, KH, KW)``): as the dense conv
    with the equivalent diagonal ``(C, C, KH, KW)`` kernel."""
    c = kernel.shape[0]
    full = np.zeros((c, c) + kernel.shape[2:], kernel.dtype)
    full[np.arange(c), np.arange(c)] = kernel[:, 0]
    return conv2d_reference(data, full, bias, stride, pad, shift, relu, out_width, acc_width, multiplier)


def pack_depthwise_kernel(cfg: HwConfig, kernel: np.ndarray) -> np.ndarray:
    """A depthwise ``(C, 1, KH, KW)`` kernel as the block-diagonal GEMM's ``(C/BO, 1, KH, KW, BO, BI)``:
    output block ``o`` meets only input block ``o``, through a diagonal BO x BI tile (BO == BI)."""
    c, _, kh, kw = kernel.shape
    bo = cfg.block_out
    out = np.zeros((c // bo, 1, kh, kw, bo, bo), kernel.dtype)
    lane = np.arange(bo)
    out[:, 0, :, :, lane, lane] = kernel[:, 0].reshape(c // bo, bo, kh, kw).transpose(1, 0, 2, 3)
    return out


def _wrap(acc: np.ndarray, width: int) -> np.ndarray:
    """int64 values wrapped to ``width``-bit two's complement, as the accumulator SRAM holds them."""
    half = 1 << (width - 1)
    return ((acc + half) & ((1 << width) - 1)) - half


def dense_reference(data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, shift: int, relu: bool,
                    out_width: int = 8, acc_width: int = 32, multiplier: np.ndarray | None = None) -> np.ndarray:
    """int8 ``data (M, K) @ weight (N, K).T`` + bias, ReLU, multiplier, shift, clip."""
    out = conv2d_reference(data[:, :, None, None], weight[:, :, None, None], bias, 1, 0, shift, relu,
                           out_width, acc_width, multiplier)
    return out[:, :, 0, 0]


def pack_data(cfg: HwConfig, data: np.ndarray) -> np.ndarray:
    n, c, h, w = data.shape
    b, bi = cfg.batch, cfg.block_in
    return np.ascontiguousarray(data.reshape(n // b, b, c // bi, bi, h, w).transpose(0, 2, 4, 5, 1, 3))


def pack_kernel(cfg: HwConfig, kernel: np.ndarray) -> np.ndarray:
    o, i, kh, kw = kernel.shape
    bo, bi = cfg.block_out, cfg.block_in
    return np.ascontiguousarray(kernel.reshape(o // bo, bo, i // bi, bi, kh, kw).transpose(0, 2, 4, 5, 1, 3))


def pack_bias(cfg: HwConfig, bias: np.ndarray) -> np.ndarray:
    blocks = bias.astype(np.int32).reshape(-1, 1, cfg.block_out)
    return np.ascontiguousarray(np.broadcast_to(blocks, (blocks.shape[0], cfg.batch, cfg.block_out)))


def unpack_output(out: np.ndarray) -> np.ndarray:
    """``(N/B, O/BO, OH, OW, B, BO)`` -> NCHW."""
    nb, ob, oh, ow, b, bo = out.shape
    return np.ascontiguousarray(out.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, ob * bo, oh, ow))
