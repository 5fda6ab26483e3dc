"""The resident 1x1 template where the user meets it: its settings are points of the ``vdla_conv2d`` tuning space,
a resident config survives the tuning log and reaches the graph compiler, and without a log the graph compiler
picks it for a layer where it is faster; the compiled model layers are bit-exact on fsim."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.autotune.database import ApplyBest, Database, Record, read_log
from vdla.compiler.autotune.dispatch import dispatching
from vdla.compiler.autotune.task import make_task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.autotune.templates_vdla import TILING, parse_resident, resident_text
from vdla.compiler.graph import GraphBuilder, run_all
from vdla.compiler.graph import vdla_kernel
from vdla.compiler.graph.build import build_model
from vdla.compiler.vdla.topi import RESNET18_CONVS, Conv2dKnobs, ResidentKnobs, resident_space
from vdla.compiler.vdla.topi.resident_fit import default_row_tiles
from vdla_hw.config import load_config
from vdla_hw.errors import BadConfigError

HW = load_config("default")
C11 = RESNET18_CONVS["C11"]


@pytest.fixture(scope="module")
def c11_template():  # type: ignore[no-untyped-def]
    return template_for(make_task("vdla_conv2d", C11.task_workload(), "vdla", HW), HW.to_dict())


def _resident_configs(template):  # type: ignore[no-untyped-def]
    space = template.space
    return [space.get(i) for i in space.legal_indices() if space.get(i)["resident"] != TILING]


def test_the_space_holds_each_resident_setting_once(c11_template) -> None:  # type: ignore[no-untyped-def]
    residents = _resident_configs(c11_template)
    want = resident_space(C11, c11_template.target, c11_template.epilogue)
    assert [c11_template.knobs(c) for c in residents] == want and len(want) >= 2
    # One point per setting: with any other tiling values the same setting is illegal.
    other = tuple((k, 1 if k == "oc_tile" else v) for k, v in residents[0].values)
    assert "default tiling" in (c11_template.space.why_illegal(type(residents[0])(other)) or "")
    # A 1x1 layer that fits only in row tiles (C8 on default) has its row-tile settings as points, and without a log
    # compiles to the row-tile setting of ``default_row_tiles`` (faster than its tiling on the cycle model: 26,488
    # against 29,454); a 3x3 layer has only tilings.
    c8 = template_for(make_task("vdla_conv2d", RESNET18_CONVS["C8"].task_workload(), "vdla", HW), HW.to_dict())
    assert [parse_resident(r) for r in c8.residents] == resident_space(RESNET18_CONVS["C8"], c8.target, c8.epilogue)
    assert all(parse_resident(r).row_tiles > 1 for r in c8.residents)
    assert c8.knobs(c8.default()) == default_row_tiles(RESNET18_CONVS["C8"], c8.target, c8.epilogue)
    c9 = template_for(make_task("vdla_conv2d", RESNET18_CONVS["C9"].task_workload(), "vdla", HW), HW.to_dict())
    assert c9.residents == () and c9.space.get(0)["resident"] == TILING


def test_resident_text_round_trips_and_bad_text_is_named() -> None:
    k = ResidentKnobs(9, 8, 16, 4, 1, late_bias=True, first_rows=3, first_blocks=2, later_from=3, last_rows=2)
    assert parse_resident(resident_text(k)) == k
    with pytest.raises(ValueError, match="'speed=3' of resident setting"):
        parse_resident("b1=2;speed=3")


def test_a_resident_config_round_trips_through_the_log_and_an_old_log_still_loads(tmp_path, c11_template) -> None:  # type: ignore[no-untyped-def]
    task = c11_template.task
    resident = _resident_configs(c11_template)[-1]
    tiling = c11_template.space.get(c11_template.space.legal_indices()[0])
    db = Database(tmp_path / "log.jsonl")
    db.append(Record.make(task, tiling, "ok", [40000.0], "cycles"))
    db.append(Record.make(task, resident, "ok", [26000.0], "cycles", features=c11_template.features(resident)))
    records = read_log(tmp_path / "log.jsonl")
    assert records[1].config["resident"] == resident["resident"]
    apply = ApplyBest(records, target="vdla", config=HW)
    knobs = apply.query("vdla_conv2d", C11.task_workload())
    assert isinstance(knobs, ResidentKnobs) and knobs == c11_template.knobs(resident)
    # A log written before the resident knob existed: its configs read as tilings.
    old = {k: v for k, v in tiling.to_dict().items() if k != "resident"}
    legacy = Record(task, old, ",".join(f"{k}={v}" for k, v in old.items()), "ok", (1.0,), "cycles")
    assert isinstance(ApplyBest([legacy], target="vdla", config=HW).query("vdla_conv2d", C11.task_workload()),
                      Conv2dKnobs)
    # A resident setting the space does not list (another template version) is a named error.
    stale = dict(resident.to_dict(), resident=resident_text(ResidentKnobs(1, 1, 1, 1)))
    with pytest.raises(BadConfigError, match="resident="):
        c11_template.space.from_dict(stale)


def _c11_model():  # type: ignore[no-untyped-def]
    """A C11-shaped model layer: a float 1x1 stride-2 conv 256 -> 512 on 14 x 14 and its bias, then a ReLU."""
    rng = np.random.default_rng(5)
    b = GraphBuilder()
    x = b.input("x", (1, 256, 14, 14), "float32")
    w = b.const((rng.standard_normal((512, 256, 1, 1)) * 0.05).astype(np.float32), "w")
    y = b.op("conv2d", [x, w], "conv", strides=(2, 2))
    out = b.op("relu", [b.op("add", [y, b.const((rng.standard_normal((1, 512, 1, 1)) * 0.1).astype(np.float32), "b")])])
    samples = [{"x": rng.standard_normal((1, 256, 14, 14)).astype(np.float32)} for _ in range(2)]
    return b.build([out]), samples, {"x": rng.standard_normal((1, 256, 14, 14)).astype(np.float32)}


def _compile_and_check(graph, samples, feed, monkeypatch, per_channel: bool = False):  # type: ignore[no-untyped-def]
    """Build for the VDLA (per-tensor scales: the epilogue the resident template takes, on the STORE), record the
    knobs the conv compiled with, and check every integer value of a fsim run against the int8 reference."""
    used = []
    compile_conv2d, compile_default = vdla_kernel.compile_conv2d, vdla_kernel.compile_default_conv

    def spy_tuned(*args, **kwargs):  # type: ignore[no-untyped-def]
        used.append(compiled := compile_conv2d(*args, **kwargs))
        return compiled

    def spy_default(*args, **kwargs):  # type: ignore[no-untyped-def]
        used.append(compiled := compile_default(*args, **kwargs))
        return compiled

    monkeypatch.setattr(vdla_kernel, "compile_conv2d", spy_tuned)
    monkeypatch.setattr(vdla_kernel, "compile_default_conv", spy_default)
    model = build_model(graph, target="vdla", config=HW, calibrate=samples, skip_first_conv=False,
                        per_channel=per_channel)
    got = model.module.run_all(feed, backend="fsim")
    want = run_all(model.graph, feed)
    integer = [n for n, v in want.items() if v.dtype.kind in "iu" and n in got]
    assert integer
    for name in integer:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    convs = [c for c in used if c.workload == C11]
    assert len(convs) == 1
    return convs[0].knobs


@pytest.mark.parametrize("per_channel", [False, True])
def test_a_tuned_c11_layer_from_a_log_naming_a_resident_config_is_bit_exact(c11_template, monkeypatch,  # type: ignore[no-untyped-def]
                                                                            per_channel: bool) -> None:
    graph, samples, feed = _c11_model()
    resident = _resident_configs(c11_template)[0]  # not the default's setting: the log decides
    record = Record.make(c11_template.task, resident, "ok", [26000.0], "cycles")
    apply = ApplyBest([record], target="vdla", config=HW)
    with dispatching(apply):
        knobs = _compile_and_check(graph, samples, feed, monkeypatch, per_channel)
    # Per-channel scales too: the resident template runs the multiplier on the ALU before each group's STORE.
    assert list(apply.applied.values()) == [resident.key] and apply.fallbacks == {}
    assert knobs == c11_template.knobs(resident)


def test_a_logged_resident_config_the_epilogue_refuses_is_reported_as_a_fallback(c11_template) -> None:  # type: ignore[no-untyped-def]
    # A logged resident setting meets an epilogue the template cannot take (the whole epilogue on the ALU): the layer
    # compiles its default tiling, and ApplyBest says so instead of listing the config as applied.
    from vdla.compiler.vdla.topi import Requantize

    resident = _resident_configs(c11_template)[0]
    apply = ApplyBest([Record.make(c11_template.task, resident, "ok", [26000.0], "cycles")], target="vdla", config=HW)
    with dispatching(apply):
        compiled = vdla_kernel.compile_conv_workload(C11, c11_template.target, Requantize(shift=8, on_store=False),
                                                     2, "conv")
    assert isinstance(compiled.knobs, Conv2dKnobs)
    assert apply.applied == {}
    why = apply.fallbacks[c11_template.task.name]
    assert "not compiled" in why and "'conv'" in why and "STORE" in why
    # The same log with an epilogue it takes: applied, no fallback.
    apply = ApplyBest([Record.make(c11_template.task, resident, "ok", [26000.0], "cycles")], target="vdla", config=HW)
    with dispatching(apply):
        compiled = vdla_kernel.compile_conv_workload(C11, c11_template.target, Requantize(shift=8, multiplier=True),
                                                     2, "conv")
    assert compiled.knobs == c11_template.knobs(resident)
    assert apply.applied == {c11_template.task.name: resident.key} and apply.fallbacks == {}


def test_without_a_log_a_c11_layer_compiles_resident_and_is_bit_exact(c11_template, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    graph, samples, feed = _c11_model()
    knobs = _compile_and_check(graph, samples, feed, monkeypatch)
    # The rule picks the resident setting on C11 (26,383 cycles against the default tiling's 29,731), and the
    # tuner's default is the same point.
    assert isinstance(knobs, ResidentKnobs)
    assert c11_template.knobs(c11_template.default()) == knobs


def test_resident_space_of_a_layer_whose_output_blocks_have_no_quarter() -> None:
    # 1008 outputs = 63 blocks (ResNet-18's classifier, padded): 63 // 4 = 15 divides nothing; the space is still listed.
    from vdla.compiler.vdla.target import VdlaTarget
    from vdla.compiler.vdla.topi import Requantize, dense_workload

    target = VdlaTarget(HW)
    for wl in (dense_workload(1, 512, 1008), type(C11)(1, 64, 4, 4, 63 * 16, 1, 1, 1, 0)):
        for k in resident_space(wl, target, Requantize(shift=8)):
            assert 63 % k.first_piece == 0 and 63 % k.piece == 0
    assert resident_space(type(C11)(1, 64, 4, 4, 63 * 16, 1, 1, 1, 0), target, Requantize(shift=8))


def test_tuning_c11_measures_the_resident_default_first_and_logs_it(tmp_path, c11_template) -> None:  # type: ignore[no-untyped-def]
    # `vdla tune --target vdla`'s loop on C11: the default (the resident setting) is measured first, bit-exact on the
    # cycle model, and the log's best replays to the same ResidentKnobs.
    from vdla.compiler.autotune.executor import LocalExecutor
    from vdla.compiler.autotune.measure import Measurer
    from vdla.compiler.autotune.tuner import make_tuner, tune_task

    with LocalExecutor(workers=1) as ex:
        m = Measurer(c11_template.task, ex, hw_config=HW.to_dict())
        best = tune_task(make_tuner("random", m.template, seed=3), m, Database(tmp_path / "t.jsonl"), trials=2,
                         batch=2, retime=0)
    records = read_log(tmp_path / "t.jsonl")
    assert records[0].config == c11_template.default().to_dict() and records[0].ok
    assert records[0].config["resident"] != TILING
    # Faster than the tiling it replaced as the default (cycle model; 26,383 against 29,731 on main's model today).
    from vdla.compiler.vdla.topi import check_conv2d, compile_conv2d

    tiled = compile_conv2d(C11, c11_template.target, knobs=c11_template.knobs(c11_template.default_tiling),
                           epilogue=c11_template.epilogue)
    ok, result, _, _ = check_conv2d(tiled, backend="cycle")
    assert ok and records[0].cost < result.cycles
    assert best is not None and best.cost <= records[0].cost
    knobs = ApplyBest(records, target="vdla", config=HW).query("vdla_conv2d", C11.task_workload())
    assert knobs == c11_template.knobs(c11_template.space.from_dict(best.config))
