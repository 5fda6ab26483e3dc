"""The partitioner's cost rule (``build_model(placement="cost")``, the default): an ALU kernel (residual add,
pool, clamp) stays on the VDLA only when the cycle model's time at the config clock beats the host's
estimate plus the transfers the host placement adds; the report names the figures of every kernel it moves.
"""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.codegen.llvm import current_target
from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.cost import host_model, program_cycles
from vdla.compiler.graph.errors import GraphError
from vdla.compiler.vdla import VdlaTarget
from vdla.compiler.vdla.topi.eltwise import AddWorkload, compile_add
from vdla.compiler.vdla.topi.maxpool import MaxPoolWorkload, compile_max_pool
from vdla.compiler.vdla.topi.pool import AvgPoolWorkload, compile_avg_pool
from vdla.runtime.backends import run as run_program


def _pool_net():  # type: ignore[no-untyped-def]
    """conv -> int8 3x3/2 max pool (padded) -> conv: the max pool between two VDLA convs."""
    rng = np.random.default_rng(3)

    def rand(shape: tuple[int, ...], s: float) -> np.ndarray:
        return (rng.standard_normal(shape) * s).astype(np.float32)

    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 16), "float32")
    y = b.op("conv2d", [x, b.const(rand((32, 16, 3, 3), 0.1), "w1")], "conv1", padding=(1, 1, 1, 1))
    y = b.op("max_pool2d", [y], "pool", pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    y = b.op("conv2d", [y, b.const(rand((16, 32, 1, 1), 0.1), "w2")], "conv2")
    samples = [{"x": rand((1, 16, 16, 16), 1.0)} for _ in range(2)]
    return b.build([y]), samples, {"x": rand((1, 16, 16, 16), 1.0)}


def test_the_max_pool_goes_to_the_host_with_the_figures_and_the_result_is_unchanged() -> None:
    graph, samples, feed = _pool_net()
    costed = build_model(graph, target="vdla", calibrate=samples, skip_first_conv=False)
    entry = next(e for e in costed.partition() if e.ops == ("max_pool2d",))
    assert entry.device == "cpu" and entry.reason.startswith("cost: max_pool2d"), entry
    assert "ms on the VDLA" in entry.reason and "placement='all'" in entry.reason
    cost = costed.costs[entry.name]
    assert not cost.on_vdla and cost.vdla_s > cost.host_s + cost.transfer_s
    assert cost.vdla_cycles > 0 and costed.fallbacks == {}  # moved by the rule, not a failure to compile
    # the convs stay on the VDLA; the integer graph, hence every result, is the same either way
    assert all(e.device == "vdla" for e in costed.partition() if e.anchor is not None)
    everything = build_model(graph, target="vdla", calibrate=samples, skip_first_conv=False, placement="all")
    assert next(e for e in everything.partition() if e.ops == ("max_pool2d",)).device == "vdla"
    np.testing.assert_array_equal(costed.run(feed, backend="fsim")[0], everything.run(feed, backend="fsim")[0])


def test_a_slow_host_keeps_the_max_pool_on_the_vdla(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule decides by the figures: with a 1 MHz host the VDLA's max pool wins."""
    monkeypatch.setenv("VDLA_HOST_HZ", "1e6")
    graph, samples, _ = _pool_net()
    compiled = build_model(graph, target="vdla", calibrate=samples, skip_first_conv=False)
    entry = next(e for e in compiled.partition() if e.ops == ("max_pool2d",))
    assert entry.device == "vdla" and compiled.costs[entry.name].on_vdla


def test_the_host_model_is_the_compile_target() -> None:
    host = host_model()
    assert host.lanes == current_target().vector_lanes(8) and host.clock_hz > 0
    assert host.seconds(0, 10) == 4 * host.seconds(10, 0) > 0  # int32 arithmetic: a quarter of the lanes


def test_unknown_placement_is_refused() -> None:
    graph, samples, _ = _pool_net()
    with pytest.raises(GraphError, match="unknown placement 'fast'"):
        build_model(graph, target="vdla", calibrate=samples, placement="fast")


@pytest.mark.parametrize("kind", ["max_pool_3x3_s2_p1", "max_pool_2x2", "relu", "add", "global_pool"])
def test_the_static_estimate_is_a_close_lower_bound_of_the_cycle_model(kind: str) -> None:
    target = VdlaTarget.from_config("default")
    if kind == "add":
        program = compile_add(AddWorkload(1, 64, 16, 16, (3, 5), (0, 0), 4, 3, True), target).bind()
    elif kind == "global_pool":  # ResNet-18's at 224: 8 chunks of 4 channel blocks on two threads
        program = compile_avg_pool(AvgPoolWorkload(1, 512, 7, 7, 7, 7, 1, 0, 1337, 24, 16), target).bind()
    else:
        wl = {"max_pool_3x3_s2_p1": MaxPoolWorkload(1, 64, 28, 28, 3, 3, 2, 1),
              "max_pool_2x2": MaxPoolWorkload(1, 32, 16, 16, 2, 2, 2, 0),
              "relu": MaxPoolWorkload(1, 16, 9, 9, 1, 1, lo=0)}[kind]
        program = compile_max_pool(wl, target).bind()
    estimate = program_cycles(target.config, program.instructions)
    cycles = run_program(program, backend="cycle").cycles
    assert 0.5 * cycles <= estimate <= cycles, (estimate, cycles)
