"""The AArch64 and ARMv7 code of the conv micro-kernel, read from the assembly (compiling never runs it).

On a Cortex-A53 the register tile must be fused multiply-adds on q registers (``fmla v*.4s``), one
accumulator register per output vector of the tile, sized for the 32 NEON registers, and no register
allocator spill (LLVM marks those ``Spill`` / ``Reload`` in the assembly).  ARMv7's Cortex-A9
has no fused multiply-add: ``vmla.f32`` on q registers, in 16 of them.
"""

from __future__ import annotations

import re

from default_conv import default_conv

from vdla.compiler.codegen.llvm import codegen, parse_target

_SPILL = re.compile(r"(Spill|Reload)")


def blocks_with(asm: str, mnemonic: str) -> list[list[str]]:
    """The basic blocks (split at labels) whose instructions include ``mnemonic``: the tile's hot loop."""
    blocks: list[list[str]] = [[]]
    for line in asm.splitlines():
        if re.match(r"^\.?[A-Za-z_$.0-9]+:", line):
            blocks.append([])
        elif line.startswith("\t") and not line.strip().startswith((".", "//", "@")):
            blocks[-1].append(line.strip())
    return [b for b in blocks if any(i.split()[0] == mnemonic for i in b if i)]


def conv_assembly(target: str, channels: int = 64, size: int = 14) -> tuple[str, object]:
    """The assembly of ResNet's 3x3 conv micro-kernel with the target's default schedule, and its knobs."""
    func, tgt, knobs = default_conv(target, channels, channels, 3, size)
    return codegen([func], tgt, name="conv").assembly(), knobs


def test_aarch64_conv_tile_is_fmla_on_q_registers_without_spills() -> None:
    asm, knobs = conv_assembly("board:ultra96-v2")
    fmla = re.findall(r"\bfmla\s+v(\d+)\.4s", asm)
    tile = knobs.oh_block * knobs.ow_block * knobs.oc_block
    assert len(fmla) >= tile, (len(fmla), tile)
    assert len({int(r) for r in fmla}) >= tile  # one accumulator register per output vector of the tile
    # Within half of AArch64's 32 registers (topi.spare_registers) and beyond x86's 12 of 16: the 14-wide row
    # takes two balanced 7-column tiles x 2 channel blocks (topi.balance_columns), not 8 + a 6-column rest.
    assert 12 < tile <= 16, tile
    assert not _SPILL.search(asm), _SPILL.search(asm)
    hot = blocks_with(asm, "fmla")
    assert hot and sum(i.startswith("fmla") for b in hot for i in b) >= tile
    for block in hot:
        # The tile never goes through the stack: no accumulator (an fmla destination) of the hot loop is
        # loaded from or stored to a stack slot there.  (LLVM does keep some loop-invariant weight vectors
        # in stack slots; bench/arm_codegen.py counts those accesses per layer.)
        accumulators = {int(r) for i in block for r in re.findall(r"^fmla\s+v(\d+)\.4s", i)}
        stacked = {int(r) for i in block if "[sp" in i for r in re.findall(r"\bq(\d+)", i.split("[")[0])}
        assert not accumulators & stacked, sorted(accumulators & stacked)


def test_armv7_conv_tile_uses_16_q_registers_without_spills() -> None:
    asm, knobs = conv_assembly("board:pynq-z2")
    assert re.search(r"\bvmla\.f32\s+q\d+", asm) and "fmla" not in asm and "vfma" not in asm  # no FMA on an A9
    assert knobs.oh_block * knobs.ow_block * knobs.oc_block == 8  # half of ARMv7's 16 q registers
    assert not _SPILL.search(asm), _SPILL.search(asm)


def test_board_targets_come_from_the_board_table() -> None:
    a53, a9 = parse_target("board:zcu104"), parse_target("board:pynq-z2")
    assert (a53.arch, a53.cpu, a53.vector_bits, a53.vector_registers, a53.has_fma) == ("aarch64", "cortex-a53", 128, 32, True)
    assert (a9.arch, a9.cpu, a9.vector_bits, a9.vector_registers, a9.has_fma) == ("arm", "cortex-a9", 128, 16, False)
    assert {"neon", "vfp3"} <= a9.features and a9.triple.endswith("gnueabihf")
    assert parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53").isa == "asimd"


def test_bad_arm_targets_are_refused_with_the_fix() -> None:
    import pytest

    from vdla.compiler.codegen.llvm import TargetError

    with pytest.raises(TargetError, match="has no NEON") as err:
        parse_target("llvm -mtriple=armv7a-linux-gnueabihf -mcpu=cortex-a9 -mattr=+vfp3")
    assert "-mattr=+neon" in err.value.hint
    with pytest.raises(TargetError, match="no processor of its own"):
        parse_target("board:ulx3s")
    with pytest.raises(Exception, match="unknown board 'nope'"):
        parse_target("board:nope")
