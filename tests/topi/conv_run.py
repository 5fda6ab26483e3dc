"""Build and run a blocked conv (``topi.conv2d_nchwc``) with given knobs, optionally with a fused per-channel
bias epilogue, for the conv tests' comparisons against NumPy."""

from __future__ import annotations

import numpy as np

from vdla.compiler import te, topi
from vdla.compiler.build import build
from vdla.compiler.schedule import create_schedule


def run_conv_nchwc(conv: te.Tensor, knobs: topi.Conv2dNCHWcKnobs, data: te.Tensor, kernel: te.Tensor,
                   inputs: list[np.ndarray], bias: np.ndarray | None = None) -> np.ndarray:
    """``conv`` (of placeholders ``data`` and ``kernel``, fed ``inputs``) scheduled with ``knobs``; with ``bias``
    (``(oc_outer, oc_block)``) the schedule fuses ``conv + bias`` as its epilogue.  Returns the blocked output."""
    if bias is not None:
        tb = te.placeholder(bias.shape, "float32", "b")
        out = te.compute(conv.shape, lambda n, c, y, xx, o: conv[n, c, y, xx, o] + tb[c, o], name="biased")
        s = topi.schedule_conv2d_nchwc(conv, knobs, s=create_schedule(out), epilogue=out)
        args, inputs = [data, kernel, tb, out], inputs + [bias]
    else:
        out, s = conv, topi.schedule_conv2d_nchwc(conv, knobs)
        args = [data, kernel, out]
    got = np.zeros([int(d.value) for d in out.shape], np.float32)
    build(s, args)(*inputs, got)
    return got
