"""A compiled model's weights and arena live in memory advised to use transparent huge pages
(``runtime/huge_pages.py``): one TLB miss per 2 MiB of a weight stream instead of per 4 KiB.  The kernel's
own record of the advice (``hg`` in the mapping's ``VmFlags`` in ``/proc/self/smaps``) is checked, and
that the data the kernels see is the same as in ordinary memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model
from vdla.runtime.cpu_module import BUFFER_ALIGN, aligned_pack, aligned_zeros
from vdla.runtime.graph_executor import GraphModule
from vdla.runtime.huge_pages import HUGE_PAGE, huge_page_zeros

THP = Path("/sys/kernel/mm/transparent_hugepage")
needs_thp = pytest.mark.skipif(not THP.is_dir(), reason="this kernel has no transparent huge pages (no /sys/kernel/mm/"
                                                       "transparent_hugepage): the memory is ordinary pages")


def vm_flags(address: int) -> list[str]:
    """The ``VmFlags`` of the mapping of this process holding ``address``."""
    start = end = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            lo, hi = (int(v, 16) for v in head.split("-"))
            start, end = lo, hi
        elif head == "VmFlags:" and start is not None and start <= address < end:
            return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


@needs_thp
def test_huge_page_zeros_are_advised_aligned_and_zero() -> None:
    a = huge_page_zeros(3 * HUGE_PAGE + 123)
    assert a is not None and a.dtype == np.uint8 and a.nbytes == 3 * HUGE_PAGE + 123
    assert a.ctypes.data % HUGE_PAGE == 0 and a.flags.writeable and not a.any()
    assert "hg" in vm_flags(a.ctypes.data) and "hg" in vm_flags(a.ctypes.data + a.nbytes - 1)
    a[:] = 7  # writable all the way, every page faulted in
    assert int(a.sum()) == 7 * a.nbytes


@needs_thp
def test_big_aligned_arrays_take_huge_pages() -> None:
    big = aligned_zeros((HUGE_PAGE // 4,), np.float32)
    assert big.ctypes.data % HUGE_PAGE == 0 and "hg" in vm_flags(big.ctypes.data)


def test_aligned_pack_keeps_values_order_and_alignment() -> None:
    rng = np.random.default_rng(0)
    src = {"b": rng.standard_normal((3, 5)).astype(np.float32), "a": np.arange(7, dtype=np.int8),
           "c": rng.standard_normal((2, 2)).T, "empty": np.zeros((0, 4), np.float32)}  # "c": not C-contiguous
    packed = aligned_pack(src)
    assert list(packed) == list(src)
    addresses = [packed[k].ctypes.data for k in ("b", "a", "c")]
    assert addresses == sorted(addresses) and all(p % BUFFER_ALIGN == 0 for p in addresses)
    for k, v in src.items():
        got = packed[k]
        assert got.dtype == v.dtype and got.shape == v.shape and got.flags.c_contiguous and got.flags.writeable
        np.testing.assert_array_equal(got, v)
    packed["b"][...] = 0  # a private copy: the source is untouched
    assert src["b"].any()


def _model_with_big_weights() -> tuple[GraphModule, np.ndarray]:
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", (1, 256, 4, 4), "float32")
    h = x
    for k, (cin, cout) in enumerate([(256, 512), (512, 256)]):  # 2 x 512 KiB of 1x1 weights
        w = (rng.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32)
        h = b.op("relu", [b.op("conv2d", [h, b.const(w)], f"c{k}")])
    w3 = (rng.standard_normal((256, 256, 3, 3)) / 48).astype(np.float32)  # 2.25 MiB
    h = b.op("conv2d", [h, b.const(w3)], "c3x3", padding=(1, 1, 1, 1))
    return build_model(b.build([h])).module, rng.standard_normal((1, 256, 4, 4)).astype(np.float32)


@needs_thp
def test_a_models_weights_share_advised_memory_in_the_order_nodes_read_them() -> None:
    module, x = _model_with_big_weights()
    params = module.params
    assert sum(p.nbytes for p in params.values()) > HUGE_PAGE
    assert all(p.ctypes.data % BUFFER_ALIGN == 0 and "hg" in vm_flags(p.ctypes.data) for p in params.values())
    read = [a["param"] for n in module.graph["nodes"] for a in n.get("args", ()) if "param" in a]
    first = list(dict.fromkeys(read))
    assert [params[k].ctypes.data for k in first] == sorted(params[k].ctypes.data for k in first)
    # The same model in NumPy's memory (not advised by us; whether the process's heap takes huge pages is
    # up to its allocator) computes the same bits.
    plain = GraphModule(module.graph, module.params, module.library, module.programs, huge_pages=False)
    assert all(p.ctypes.data % BUFFER_ALIGN == 0 for p in plain.params.values())
    np.testing.assert_array_equal(module.run(x)[0], plain.run(x)[0])
