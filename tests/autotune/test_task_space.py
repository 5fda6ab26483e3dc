"""Tasks extracted from real graphs, config spaces, and replayable configs."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.autotune.dispatch import dispatching
from vdla.compiler.autotune.space import Axis, Config, ConfigSpace
from vdla.compiler.autotune.task import HostInfo, Task, extract_tasks, make_task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model
from vdla.compiler.tir.printer import to_text
from vdla_hw.errors import BadConfigError


def _mobile_block(rng: np.random.Generator):
    """conv -> depthwise -> conv -> (same conv again) -> global pool -> dense: repeated and depthwise tasks."""
    b = GraphBuilder()
    x = b.input("x", (1, 16, 8, 8), "float32")
    w = lambda *s: b.const((rng.standard_normal(s) * 0.2).astype(np.float32))
    y = b.op("relu", [b.op("conv2d", [x, w(32, 16, 1, 1)], "expand")])
    y = b.op("relu", [b.op("conv2d", [y, w(32, 1, 3, 3)], "dw", groups=32, padding=(1, 1, 1, 1))])
    y = b.op("conv2d", [y, w(16, 32, 1, 1)], "project")
    y = b.op("relu", [b.op("conv2d", [y, w(32, 16, 1, 1)], "expand2")])
    y = b.op("global_avg_pool2d", [y], "gap")
    y = b.op("reshape", [y], "flat", newshape=(1, 32))
    return b.build([b.op("dense", [y, w(10, 32)], "fc")])


def test_extracted_tasks_are_unique_weighted_and_keyed_by_host() -> None:
    tasks = extract_tasks(_mobile_block(np.random.default_rng(0)))
    kinds = sorted(t.kind for t in tasks)
    # The 32-channel depthwise conv sits between blocked convs: it runs (and tunes) in NCHW16c too.
    # The element-wise kernels: the input's NCHW -> NCHW16c copy and the pooled result's unblocking.
    assert kinds == ["conv2d_nchwc", "conv2d_nchwc", "dense_pack", "depthwise_conv2d_nchwc", "elementwise",
                     "elementwise"]
    expand = [t for t in tasks if t.kind == "conv2d_nchwc" and t.wl["ic_outer"] * t.wl["ic_block"] == 16]
    assert [t.weight for t in expand] == [2]  # "expand" and "expand2" are one workload
    host = HostInfo.detect()
    assert all(t.host == host.key and f"({host.isa})" in t.target for t in tasks)
    assert host.isa in ("avx512", "avx2", "avx", "sse") and host.vector_bits in (128, 256, 512) and host.cores >= 1


def test_task_key_round_trips_through_json(cpu_task: Task) -> None:
    again = Task.from_json(cpu_task.to_json())
    assert again == cpu_task and again.key == cpu_task.key


def test_space_index_and_config_round_trip() -> None:
    space = ConfigSpace((Axis("a", (1, 2, 4)), Axis("b", ("x", "y")), Axis("c", (False, True))))
    assert space.size == 12
    configs = list(space)
    assert len({c.key for c in configs}) == 12
    for i, c in enumerate(configs):
        assert space.index_of(c) == i
        assert space.from_dict(c.to_dict()) == c


def test_a_knob_added_later_takes_its_old_meaning_in_old_logs() -> None:
    space = ConfigSpace((Axis("a", (1, 2)), Axis("rows", (1, 2, 3), absent=1), Axis("at", ("tile", "plane"),
                                                                                 absent="tile")))
    # A record from before ``rows`` and ``at`` existed means what the schedule did then: 1 row, per tile.
    assert space.from_dict({"a": 2}) == Config((("a", 2), ("rows", 1), ("at", "tile")))
    assert space.from_dict({"a": 2, "rows": 3, "at": "plane"}).key == "a=2,rows=3,at=plane"
    with pytest.raises(BadConfigError, match="has knobs"):
        space.from_dict({"rows": 2})  # a knob without an old meaning must be named


def test_cpu_conv_space_has_row_tiles_and_reduce_positions(cpu_task: Task) -> None:
    template = template_for(make_task("conv2d_nchwc", dict(cpu_task.wl, oc_outer=8)))
    registers = {"avx512": 32}.get(template.isa, 16)
    space = template.space
    assert {"oh_block", "reduce_at"} <= set(space.names)
    legal = [space.get(i) for i in space.legal_indices()]
    assert {c["reduce_at"] for c in legal} == {"tile", "row", "plane"}
    assert max(int(c["oh_block"]) for c in legal) > 1
    # The channels order only with 16 registers (AVX2); AVX-512's spaces are as before the axis.
    assert {c["tile_order"] for c in legal} == ({"columns", "channels"} if registers == 16 else {"columns"})
    for c in legal:  # every legal tile fits the register file: accumulators, weights, inputs (by its loop order)
        tile = int(c["oh_block"]) * int(c["ow_block"]) * int(c["oc_block"])
        beside = (int(c["oc_block"]) + 1 if c["tile_order"] == "columns"
                  else int(c["oh_block"]) * int(c["ow_block"]) + 1)
        assert tile + beside <= registers or (c["oh_block"], c["oc_block"], c["tile_order"]) == (1, 1, "columns")


@pytest.mark.parametrize("which", ["cpu", "vdla"])
def test_default_is_a_point_of_the_space_and_configs_replay(which: str, cpu_task: Task, vdla_task: Task,
                                                             hw_config: dict) -> None:
    task = cpu_task if which == "cpu" else vdla_task
    template = template_for(task, hw_config)
    space = template.space
    assert space.size > 1
    default = template.default()
    assert space.why_illegal(default) is None
    assert space.get(space.index_of(default)) == default
    legal = space.legal_indices()
    config = space.get(legal[len(legal) // 2])
    # The same config applied twice (and read back from its JSON form) gives the same program.
    replay = space.from_dict(config.to_dict())
    assert to_text(template.program(config)) == to_text(template.program(replay))
    assert np.array_equal(template.features(config), template.features(replay))
    other = space.get(legal[0])
    assert to_text(template.program(other)) != to_text(template.program(config))


def test_vdla_space_rejects_configs_the_tiling_check_refuses(vdla_task: Task, hw_config: dict) -> None:
    space = template_for(vdla_task, hw_config).space
    bad = Config(tuple((k, v) for k, v in space.get(0).values))
    bad = Config(tuple((k, 4 if k == "virtual_threads" else v) for k, v in bad.values))
    assert "virtual threads must divide" in (space.why_illegal(bad) or "")


def test_dispatched_knobs_reach_the_lowering() -> None:
    graph = _mobile_block(np.random.default_rng(1))
    tasks = extract_tasks(graph)
    seen: list[str] = []

    class Spy:
        def query(self, kind: str, workload: dict) -> object:
            seen.append(kind)
            if kind != "conv2d_nchwc":
                return None
            task = next(t for t in tasks if t.kind == kind and t.wl == workload)
            template = template_for(task)
            return template.knobs(template.space.get(0))  # the narrowest column block

    feed = {"x": np.random.default_rng(2).standard_normal((1, 16, 8, 8)).astype(np.float32)}
    want = build_model(graph).run(feed)[0]
    with dispatching(Spy()):
        got = build_model(graph).run(feed)[0]
    assert sorted(set(seen)) == ["conv2d_nchwc", "dense_pack", "depthwise_conv2d_nchwc", "elementwise"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_program_features_see_the_loop_structure(cpu_task: Task) -> None:
    from vdla.compiler.autotune.features import LOOPS

    template = template_for(cpu_task)
    base = template.default().to_dict()
    narrow = template.features(template.space.from_dict(dict(base, ow_block=1, unroll_kw=False)))
    wide = template.features(template.space.from_dict(dict(base, ow_block=8, unroll_kw=True)))
    assert narrow.shape == wide.shape and not np.array_equal(narrow, wide)
    # Per loop: log2 extent, reduction flag, then parallel / vectorized / unrolled / virtual-thread flags;
    # the busiest stage is the conv, whose innermost loop is the vectorized 16-channel block.
    width = 2 + 4
    innermost = wide[(LOOPS - 1) * width:LOOPS * width]
    assert innermost[0] == pytest.approx(np.log2(17)) and innermost[1] == 0.0 and innermost[3] == 1.0
    unrolled = [wide[k * width + 4] for k in range(LOOPS)]
    assert sum(unrolled) > sum(narrow[k * width + 4] for k in range(LOOPS))


@pytest.mark.parametrize(("board", "isa", "registers"), [("ultra96-v2", "asimd", 32), ("pynq-z2", "neon", 16)])
def test_arm_board_tasks_have_a_space_sized_for_neon(board: str, isa: str, registers: int) -> None:
    """A task for a board's processor names its triple and ISA; its template sizes lanes, registers, the
    default and the space for that CPU (not this x86 host), and the default is a point of the space."""
    tasks = extract_tasks(_mobile_block(np.random.default_rng(0)), cpu_target=f"board:{board}")
    conv = next(t for t in tasks if t.kind == "conv2d_nchwc")
    assert f"({isa})" in conv.target and "-mtriple=" in conv.target
    template = template_for(conv)
    assert (template.lanes, template.registers) == (4, registers)
    assert conv.wl["oc_block"] == 4  # blocked by one NEON register of fp32
    default = template.default()
    assert template.space.index_of(default) >= 0
