"""CONFIG_ID (vdla_hw.regmap): its value in the generated package and the driver's check."""

from __future__ import annotations

import pytest

from vdla_hw import regmap
from vdla_hw.config import load_config, preset_names
from vdla_hw.errors import DeviceFaultError
from vdla_hw.gen_sv import generate_package


@pytest.mark.parametrize("name", preset_names())
def test_package_carries_the_config_id(name: str) -> None:
    cfg = load_config(name)
    assert f"CONFIG_ID_VALUE = 32'h{cfg.digest[-8:]};" in generate_package(cfg)
    assert regmap.config_id(cfg) == int(cfg.digest[-8:], 16)


def test_config_ids_of_presets_differ() -> None:
    ids = {regmap.config_id(load_config(n)) for n in preset_names()}
    assert len(ids) == len({load_config(n).digest for n in preset_names()})


def test_check_names_both_configs_or_the_unknown_id() -> None:
    tiny, default = load_config("tiny"), load_config("default")
    regmap.check_config_id(regmap.config_id(tiny), tiny)
    with pytest.raises(DeviceFaultError, match=r"built for 'default' \(.*compiled for 'tiny'") as err:
        regmap.check_config_id(regmap.config_id(default), tiny)
    assert default.digest in str(err.value) and tiny.digest in str(err.value)
    changed = tiny.replace(name="tiny_x", cmd_queue_depth=2 * tiny.cmd_queue_depth)
    with pytest.raises(DeviceFaultError, match=rf"unknown config \(CONFIG_ID 0x{changed.digest[-8:]}\)"):
        regmap.check_config_id(regmap.config_id(changed), tiny)


def test_register_offsets_are_unique_and_word_aligned() -> None:
    offsets = [r.offset for r in regmap.REGISTERS]
    assert len(set(offsets)) == len(offsets) and all(o % 4 == 0 for o in offsets)
    assert max(offsets) < 1 << regmap.AXIL_ADDR_WIDTH
