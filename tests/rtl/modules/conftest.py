"""Shared pieces of the cocotb module tests: one runner call per (design, parameters) case."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from vdla_hw.rtl_build import cocotb_run

MODULES_DIR = Path(__file__).parent


def run_module(config: str, toplevel: str, test_dir: Path, *, env: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
    """Build ``toplevel`` for ``config`` (cached) and run ``<test_dir>/<folder>_cocotb.py`` on it.

    ``env`` values reach the cocotb test as environment variables.
    """
    test_module = f"{Path(test_dir).name}_cocotb"
    cocotb_run(config, toplevel, test_module, Path(test_dir), python_path=[MODULES_DIR],
               extra_env={k: str(v) for k, v in (env or {}).items()}, **kwargs)


@pytest.fixture
def rtl_module() -> Callable[..., None]:
    """:func:`run_module` as a fixture."""
    return run_module
