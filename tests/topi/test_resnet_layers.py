"""Full-size ResNet-18 conv layers (the benchmark's shapes) with the default NCHWc
schedules vs NumPy. Slow: run with ``-m slow``."""
from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import te, topi
from vdla.compiler.build import build

from . import reference as ref

LAYERS = [(224, 3, 64, 7, 2, 3), (56, 64, 64, 3, 1, 1), (56, 64, 64, 1, 1, 0),
          (56, 64, 128, 3, 2, 1), (56, 64, 128, 1, 2, 0), (28, 128, 128, 3, 1, 1),
          (28, 128, 256, 3, 2, 1), (28, 128, 256, 1, 2, 0), (14, 256, 256, 3, 1, 1),
          (14, 256, 512, 3, 2, 1), (14, 256, 512, 1, 2, 0), (7, 512, 512, 3, 1, 1)]


@pytest.mark.slow
@pytest.mark.parametrize("size,cin,cout,k,stride,pad", LAYERS)
def test_resnet18_conv_layer(size: int, cin: int, cout: int, k: int, stride: int,
                             pad: int) -> None:
    rng = np.random.default_rng(size * cin + cout)
    x = rng.standard_normal((1, cin, size, size)).astype(np.float32)
    w = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
    ib, ob = topi.default_nchwc_blocks(cin, cout)
    xb, wb = ref.to_nchwc(x, ib), ref.kernel_blocked(w, ib, ob)
    tx, tw = te.placeholder(xb.shape, name="x"), te.placeholder(wb.shape, name="w")
    out = topi.conv2d_nchwc(tx, tw, stride, pad)
    got = np.zeros([d.value for d in out.shape], np.float32)
    mod = build(topi.schedule_conv2d_nchwc(out), [tx, tw, out])
    for threads in (1, 0):
        mod.set_num_threads(threads)
        got[:] = 0
        mod(xb, wb, got)
        np.testing.assert_allclose(ref.from_nchwc(got), ref.conv2d_nchw(x, w, stride, pad),
                                   rtol=1e-4, atol=1e-4)
