"""Which hardware configs the RTL tests run on: the presets they name, or the user's own config.

``vdla hw test --config my.json`` sets :data:`CONFIG_ENV` to the file's path; every test that
regresses "a config" (rather than one preset's corner case) is parametrized through
:func:`configs_under_test`, so it then runs on that config instead, with the config's name as the
test id (which is what ``vdla hw test`` selects with ``-k``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from vdla_hw.config import load_config

CONFIG_ENV = "VDLA_HW_TEST_CONFIG"


def configs_under_test(presets: Sequence[str]) -> list:
    """``presets``, or the one config of :data:`CONFIG_ENV` (a JSON path or preset name) when it is set."""
    chosen = os.environ.get(CONFIG_ENV)
    if not chosen:
        return list(presets)
    path = Path(chosen)
    value = str(path.resolve()) if path.suffix == ".json" or path.exists() else chosen
    return [pytest.param(value, id=load_config(value).name)]
