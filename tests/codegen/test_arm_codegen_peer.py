"""bench/arm_codegen.py's reading of a stripped AArch64 library: innermost loops and MLAS's SGEMM signature.

The disassembly below is ``llvm-objdump -d --no-show-raw-insn`` text in the form the bench parses: an outer
loop around an inner one (only the inner is innermost), a loop with a call (a tail, not a kernel loop), and a
by-element ``fmla`` loop over v16-v31 (the 4 x 16 tile that names MLAS's hand-written SGEMM kernel)."""

from __future__ import annotations

from types import ModuleType
from typing import Callable


def _disassembly() -> str:
    lines = ["0000000000001000 <.text>:"]
    addr = 0x1000

    def emit(text: str) -> int:
        nonlocal addr
        lines.append(f"    {addr:x}:      \t{text}")
        addr += 4
        return addr - 4

    outer = emit("mov x0, #0")
    inner = emit("ldr q0, [x1], #16")
    emit("fmla v1.4s, v0.4s, v2.4s")
    emit(f"b.ne {inner:#x} <.text+0x4>")
    emit(f"cbnz x3, {outer:#x} <.text>")
    called = emit("add x4, x4, #1")
    emit("bl 0x9000 <.text+0x8000>")
    emit(f"b.ne {called:#x} <.text+0x18>")
    sgemm = emit("ldp q4, q5, [x1], #32")
    for r in range(16, 32):
        emit(f"fmla v{r}.4s, v{4 + r % 4}.4s, v{8 + (r - 16) // 4}.s[{r % 4}]")
    emit("subs x5, x5, #1")
    emit(f"b.ne {sgemm:#x} <.text+0x24>")
    return "\n".join(lines)


def test_innermost_loops_skip_outer_loops_and_loops_with_calls(bench_script: Callable[[str], ModuleType]) -> None:
    bench = bench_script("arm_codegen")
    loops = bench.innermost_loops(_disassembly())
    assert [(hex(lp.start), len(lp.insns), lp.fmas) for lp in loops] == [("0x1004", 3, 1), ("0x1020", 19, 16)]


def test_the_mlas_sgemm_loop_is_found_by_its_register_tile(bench_script: Callable[[str], ModuleType]) -> None:
    bench = bench_script("arm_codegen")
    loop = bench.find_mlas_sgemm_loop(_disassembly())
    assert loop.start == 0x1020 and loop.fmas == 16
    assert loop.accumulators() == frozenset(f"v{r}" for r in range(16, 32))
