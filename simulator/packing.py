"""Bit-exact conversion between DRAM bytes and signed integer elements.

Element widths come from the config (4, 8, 16 or 32 bits).  Values are stored
little-endian and densely packed; 4-bit values pack two per byte, low nibble
first.  In memory a value of width ``w`` lives in the smallest NumPy signed
integer holding ``w`` bits (``dtype_for``); narrowing keeps the low bits (two's
complement wrap), as the hardware does.
"""

from __future__ import annotations

import numpy as np

_DTYPES = {4: np.int8, 8: np.int8, 16: np.int16, 32: np.int32}


def dtype_for(width: int) -> type[np.signedinteger]:
    """The smallest NumPy signed integer type holding a ``width``-bit value."""
    try:
        return _DTYPES[width]
    except KeyError:
        raise ValueError(f"unsupported element width {width} bits; supported: {sorted(_DTYPES)}") from None


def wrap(values: np.ndarray, width: int) -> np.ndarray:
    """Keep the low ``width`` bits of integer ``values`` as a signed number (two's complement)."""
    dtype = dtype_for(width)
    if width == np.dtype(dtype).itemsize * 8:
        return np.asarray(values).astype(dtype)  # a C cast between integer types keeps the low bits
    v = np.asarray(values).astype(np.int64)
    half = 1 << (width - 1)
    return (((v + half) & ((1 << width) - 1)) - half).astype(dtype)


def decode(raw: np.ndarray, width: int) -> np.ndarray:
    """Signed values from little-endian bytes; the last axis of ``raw`` holds the bytes of one row.

    ``raw`` is uint8 of shape ``(..., nbytes)``; the result has shape ``(..., nbytes*8//width)``.
    """
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    if width == 4:
        out = np.empty(raw.shape[:-1] + (raw.shape[-1] * 2,), dtype=np.int8)
        # Shift each nibble to the top of a signed byte, then shift back arithmetically to sign-extend.
        out[..., 0::2] = (raw << 4).view(np.int8) >> 4
        out[..., 1::2] = raw.view(np.int8) >> 4
        return out
    return raw.view(np.dtype(dtype_for(width)).newbyteorder("<")).astype(dtype_for(width), copy=False)


def encode(values: np.ndarray, width: int) -> np.ndarray:
    """Little-endian bytes of ``values`` narrowed to ``width`` bits; inverse of :func:`decode`."""
    v = wrap(values, width)
    if width == 4:
        u = v.view(np.uint8) & 0x0F
        if u.shape[-1] % 2:
            raise ValueError("4-bit values pack two per byte: the last axis must have an even length")
        return (u[..., 0::2] | (u[..., 1::2] << 4)).astype(np.uint8)
    little = np.ascontiguousarray(v.astype(np.dtype(dtype_for(width)).newbyteorder("<")))
    return little.view(np.uint8).reshape(v.shape[:-1] + (v.shape[-1] * width // 8,))
