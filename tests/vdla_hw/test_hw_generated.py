"""Committed generated files must match what the single source of truth generates now."""

from __future__ import annotations

import pytest

from vdla_hw.asm import assemble
from vdla_hw.config import load_config, preset_names
from vdla_hw.gen_docs import DEFAULT_DOC_PATH, EXAMPLE_PROGRAM, REGEN_CMD, render_isa_doc
from vdla_hw.isa import Opcode


def test_isa_doc_is_up_to_date(generated_up_to_date):
    generated_up_to_date(DEFAULT_DOC_PATH, render_isa_doc(), REGEN_CMD)


def test_stale_file_fails_with_the_regen_command(tmp_path, generated_up_to_date):
    path = tmp_path / "isa.md"
    path.write_text("old\n")
    with pytest.raises(pytest.fail.Exception, match="stale: run `vdla hw gen-docs`"):
        generated_up_to_date(path, "new\n", REGEN_CMD)
    with pytest.raises(pytest.fail.Exception, match="missing: run `vdla hw gen-docs`"):
        generated_up_to_date(tmp_path / "absent.md", "new\n", REGEN_CMD)
    generated_up_to_date(path, "old\n", REGEN_CMD)


def test_doc_covers_every_preset_layout_and_opcode():
    text = render_isa_doc()
    for name in preset_names():
        assert f"## Preset `{name}`" in text
        for layout in load_config(name).isa.layouts:
            assert f"#### `{layout}`" in text
    for op in Opcode:
        assert f"| `{op.name}` | {int(op)} |" in text


@pytest.mark.parametrize("preset", preset_names())
def test_documented_example_assembles_on_every_preset(preset):
    insns, uops = assemble(EXAMPLE_PROGRAM, load_config(preset))
    assert insns[-1].deps.pop_next and len(uops) == 1
