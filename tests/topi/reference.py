"""NumPy references of the operators (float64 accumulation)."""
from __future__ import annotations

import numpy as np


def pad_hw(x: np.ndarray, ph: int, pw: int, value: float = 0.0) -> np.ndarray:
    widths = [(0, 0)] * x.ndim
    widths[2], widths[3] = (ph, ph), (pw, pw)
    return np.pad(x, widths, constant_values=value)


def conv2d_nchw(x: np.ndarray, w: np.ndarray, stride: int, pad: int,
                groups: int = 1) -> np.ndarray:
    xp = pad_hw(x.astype(np.float64), pad, pad)
    n, c, h, wd = xp.shape
    oc, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, oc, oh, ow))
    per = oc // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * per:(g + 1) * per].astype(np.float64)
        for y in range(kh):
            for x_ in range(kw):
                patch = xs[:, :, y:y + stride * oh:stride, x_:x_ + stride * ow:stride]
                out[:, g * per:(g + 1) * per] += np.einsum("nchw,oc->nohw", patch, ws[:, :, y, x_])
    return out


def to_nchwc(x: np.ndarray, block: int) -> np.ndarray:
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def from_nchwc(x: np.ndarray) -> np.ndarray:
    n, co, h, w, cb = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, co * cb, h, w)


def kernel_blocked(w: np.ndarray, ib: int, ob: int) -> np.ndarray:
    oc, ic, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(oc // ob, ob, ic // ib, ib, kh, kw)
                                .transpose(0, 2, 4, 5, 3, 1))


def pool2d(x: np.ndarray, k: int, stride: int, pad: int, kind: str,
           count_include_pad: bool = True) -> np.ndarray:
    fill = -np.inf if kind == "max" else 0.0
    xp = pad_hw(x.astype(np.float64), pad, pad, fill)
    ones = pad_hw(np.ones_like(x, dtype=np.float64), pad, pad, 0.0)
    h, w = xp.shape[2], xp.shape[3]
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    wins = [xp[:, :, y:y + stride * oh:stride, x_:x_ + stride * ow:stride]
            for y in range(k) for x_ in range(k)]
    if kind == "max":
        return np.max(wins, axis=0)
    total = np.sum(wins, axis=0)
    if count_include_pad:
        return total / (k * k)
    counts = np.sum([ones[:, :, y:y + stride * oh:stride, x_:x_ + stride * ow:stride]
                     for y in range(k) for x_ in range(k)], axis=0)
    return total / counts
