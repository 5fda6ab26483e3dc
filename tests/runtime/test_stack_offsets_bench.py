"""``bench/stack_offsets.py`` replays, in one process, the stack positions Linux gives processes at random:
it calls a model's kernels (``GraphModule.kernel_calls``) through a JIT-compiled trampoline that lowers the
stack by a given number of bytes.  Checked here: the replayed calls are the run's own (bit-identical
outputs), the trampoline moves the callee's frame by exactly the pad and passes the arguments through, and
the summary's shares of slow positions."""

from __future__ import annotations

import ctypes
from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model
from vdla.runtime.graph_executor import GraphModule


def _model() -> tuple[GraphModule, np.ndarray]:
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x = b.input("x", (1, 8, 10, 10), "float32")
    h = b.op("relu", [b.op("conv2d", [x, b.const(rng.standard_normal((16, 8, 3, 3)).astype(np.float32))], "c1",
                           padding=(1, 1, 1, 1))])
    h = b.op("conv2d", [h, b.const(rng.standard_normal((8, 16, 1, 1)).astype(np.float32))], "c2")
    y = b.op("softmax", [b.op("reshape", [h], "flat", newshape=(1, 800))], "prob", axis=-1)
    return build_model(b.build([y])).module, rng.standard_normal((1, 8, 10, 10)).astype(np.float32)


@pytest.fixture(scope="module")
def so(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("stack_offsets")


def test_kernel_calls_are_the_runs_calls() -> None:
    module, x = _model()
    want = module.run(x)[0]
    calls = module.kernel_calls()
    cpu_nodes = [n["name"] for n in module.graph["nodes"] if n["device"] == "cpu"]
    assert [name for name, _, _ in calls] == cpu_nodes and len(calls) >= 3
    module.run(np.zeros_like(x))  # the arena now holds another run's values
    module._bind(x)  # noqa: SLF001 -- bind without running, then replay the calls by hand
    for _, fn, argv in calls:
        fn.call_unchecked(argv)
    np.testing.assert_array_equal(module._outputs()[0], want)  # noqa: SLF001


def test_trampoline_replays_the_model_bit_identically_at_every_pad(so: ModuleType) -> None:
    module, x = _model()
    want = module.run(x)[0]
    calls = so.kernel_calls(module, x)
    call = so.padded_call()
    scanned = so.scan({"m": calls}, [0, 16], 2)["m"]  # the bench's own loop runs the calls and times every node
    assert len(scanned[0]) == 2 and all(t > 0 for row in scanned[0] for t in row)
    assert all(0 < t < float("inf") for row in scanned[1] for t in row) and len(scanned[1][0]) == len(calls)
    for pad in (0, 16, 1040, 4080):
        module.run(np.zeros_like(x))
        module._bind(x)  # noqa: SLF001
        for name, address, argv in calls:
            assert call(address, argv, pad) == 0, name
        np.testing.assert_array_equal(module._outputs()[0], want)  # noqa: SLF001


def test_trampoline_moves_the_callee_frame_by_the_pad(so: ModuleType) -> None:
    """A JIT-compiled callee that writes its own frame address through its argument: lowered by exactly
    the pad (the trampoline's frame is otherwise the same)."""
    import llvmlite.binding as llvm

    mod = llvm.parse_assembly(r"""
declare ptr @llvm.frameaddress.p0(i32)
define i32 @where(ptr %out) noinline {
  %f = call ptr @llvm.frameaddress.p0(i32 0)
  %i = ptrtoint ptr %f to i64
  store i64 %i, ptr %out
  ret i32 0
}""")
    engine = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    where = engine.get_function_address("where")
    out = ctypes.c_uint64()
    frames = {}
    for pad in (0, 16, 32, 1024, 4096):
        assert so.padded_call()(where, ctypes.addressof(out), pad) == 0
        frames[pad] = out.value
    assert {pad: frames[0] - f for pad, f in frames.items()} == {pad: pad for pad in frames}


def test_summary_counts_slow_positions(so: ModuleType) -> None:
    pads = [0, 16, 32, 48]
    whole = [[10.0, 10.4, 11.5, 10.0], [10.0, 10.2, 11.5, 9.8], [10.2, 10.3, 11.0, 10.0]]  # medians 10.0 10.3 11.5 10.0
    node_best = [[1.0, 2.0], [1.0, 2.1], [3.0, 2.0], [1.0, 2.0]]
    s = so.summarize(pads, whole, node_best, ["a", "b"])
    assert s["per_pad_ms"] == [10.0, 10.3, 11.5, 10.0] and s["median_ms"] == pytest.approx(10.15)
    assert s["slow_share_runs"] == {"0.03": 0.25, "0.10": 0.25}  # only pad 32 is >= 3% (and 10%) over 10.15
    assert s["per_pad_best_sum_ms"] == [3.0, 3.1, 5.0, 3.0] and s["best_sum_median_ms"] == pytest.approx(3.05)
    assert s["slow_share"] == {"0.03": 0.25, "0.10": 0.25}  # by the sums of node bests: pad 32 again
    assert s["slowest_pads"][0] == {"pad": 32, "best_sum_ms": 5.0, "run_ms": 11.5}
    top = s["nodes"][0]
    assert top["name"] == "a" and top["worst_pad"] == 32 and top["max_over_median"] == 3.0
    assert top["pads_over_1.15x"] == [32] and s["nodes"][1]["pads_over_1.15x"] == []
