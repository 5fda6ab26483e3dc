"""Every buffer a compiled CPU model's kernels touch starts on a cache line: the runtime's arena,
weights and inputs (page-aligned) and the kernels' heap temporaries (``aligned_alloc(64, ...)``).
NumPy's and malloc's 16-byte alignment split three of every four 64-byte vector accesses across two
cache lines (a ResNet-18 ran ~8% slower)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import te
from vdla.compiler.build import build
from vdla.compiler.codegen.llvm import codegen, host_target
from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model
from vdla.compiler.schedule import create_schedule
from vdla.compiler.tir.pipeline import lower
from vdla.compiler.tir.stmt import PrimFunc
from vdla.runtime.cpu_module import BUFFER_ALIGN, aligned_copy, aligned_zeros


@pytest.mark.parametrize("shape, dtype", [((3, 5), np.float32), ((), np.int8), (7, np.float64)])
def test_aligned_arrays(shape: tuple, dtype: type) -> None:
    z = aligned_zeros(shape, dtype)
    assert z.ctypes.data % BUFFER_ALIGN == 0 and z.flags.c_contiguous and z.flags.writeable
    assert z.shape == np.zeros(shape, dtype).shape and not z.any()
    src = np.arange(np.prod(shape, dtype=int)).astype(dtype).reshape(shape)
    c = aligned_copy(src)
    assert c.ctypes.data % BUFFER_ALIGN == 0 and np.array_equal(c, src) and c.dtype == src.dtype


def test_a_models_buffers_start_on_a_page() -> None:
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 9, 9), "float32")
    h = b.op("relu", [b.op("conv2d", [x, b.const(rng.standard_normal((32, 16, 3, 3)).astype(np.float32))], "c1",
                           padding=(1, 1, 1, 1))])
    y = b.op("conv2d", [h, b.const(rng.standard_normal((16, 32, 1, 1)).astype(np.float32))], "c2")
    module = build_model(b.build([y])).module
    buffers = [module._arena, *module.params.values(), *module._input_bufs.values()]
    assert len(module.params) >= 2
    assert all(a.ctypes.data % BUFFER_ALIGN == 0 for a in buffers)


def test_big_kernel_temporaries_are_cache_line_aligned() -> None:
    n = 1 << 17  # 512 KiB of float32: past the stack limit, so a heap temporary
    a = te.placeholder((n,), name="a")
    tmp = te.compute((n,), lambda i: a[i] * 2.0, name="tmp")
    out = te.compute((n,), lambda i: tmp[n - 1 - i] + 1.0, name="out")
    s = create_schedule(out)
    ir_text = str(codegen([PrimFunc("f", (a.buffer, out.buffer), lower(s, "llvm").body, {})], host_target()).ir_text)
    assert '@"aligned_alloc"(i64 64' in ir_text and "malloc" not in ir_text
    x = np.arange(n, dtype=np.float32)
    got = np.zeros(n, np.float32)
    build(create_schedule(out), [a, out])(x, got)
    np.testing.assert_array_equal(got, (x * 2 + 1)[::-1])
