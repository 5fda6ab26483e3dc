"""Shared checks for the hardware tests."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Callable

import pytest

MAX_DIFF_LINES = 40


def assert_generated_up_to_date(path: Path, text: str, regen_cmd: str) -> None:
    """Fail unless the committed generated file ``path`` equals ``text``, freshly regenerated.

    The message shows the start of the diff and the command that regenerates the file.
    """
    path = Path(path)
    if not path.exists():
        pytest.fail(f"{path} is missing: run `{regen_cmd}` and commit the result", pytrace=False)
    committed = path.read_text()
    if committed == text:
        return
    diff = list(difflib.unified_diff(committed.splitlines(), text.splitlines(), "committed", "regenerated", lineterm=""))
    shown = "\n".join(diff[:MAX_DIFF_LINES]) + (f"\n... ({len(diff) - MAX_DIFF_LINES} more diff lines)" if len(diff) > MAX_DIFF_LINES else "")
    pytest.fail(f"{path} is stale: run `{regen_cmd}` and commit the result\n{shown}", pytrace=False)


@pytest.fixture
def generated_up_to_date() -> Callable[[Path, str, str], None]:
    """:func:`assert_generated_up_to_date`, for tests of any generated file (docs, RTL packages)."""
    return assert_generated_up_to_date
