"""Vivado's Tcl commands as recording stubs in a real Tcl interpreter (``tkinter.Tcl()``).

The project's ``build.tcl`` runs unchanged: Tcl itself (``source``, ``set``, ``foreach``, ``file``,
``open``, ``error``) is the real interpreter's; only Vivado's commands are replaced. Each call is
recorded as a :class:`Call`; the stubs return what Vivado would hand back to the script (object
names, run progress, a run directory) and write the files Vivado would write (reports, bitstream,
``.hwh``), so the script's own file handling runs too.

Run as a program it stands in for ``vivado -mode batch -source build.tcl`` (the CLI test puts a
``vivado`` wrapper around it on ``PATH``).
"""

from __future__ import annotations

import sys
import tkinter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[str, ...]

    def option(self, flag: str) -> str | None:
        """The value after ``flag`` (``-part xc7...``), None if the flag is absent."""
        if flag not in self.args:
            return None
        return self.args[self.args.index(flag) + 1]


# Commands that only record (their result is unused by the script, or empty in Vivado too).
_RECORD_ONLY = (
    "add_files", "update_compile_order", "create_bd_design", "apply_bd_automation", "set_property",
    "connect_bd_intf_net", "connect_bd_net", "assign_bd_address", "validate_bd_design", "save_bd_design",
    "generate_target", "launch_runs", "open_run",
)
# Commands that return their last argument: the object they look up (pins, cells, runs, ...).
_LOOKUPS = ("get_bd_cells", "get_bd_pins", "get_bd_intf_pins", "get_bd_addr_spaces", "get_bd_addr_segs", "get_runs")


@dataclass
class VivadoStub:
    """A Tcl interpreter whose Vivado commands record their calls into :attr:`calls`."""

    work_dir: Path
    board_parts: tuple[str, ...] = ()
    """What ``get_board_parts`` returns (the installed board files)."""
    failing_run: str | None = None
    """A run whose PROGRESS stays below 100%."""
    actual_clock_mhz: str | None = None
    """What the PS reports as its actual fabric clock (default: the requested one)."""
    slack_ns: str = "0.215"
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tcl = tkinter.Tcl()
        self.run_dir = self.work_dir / "vivado" / "vdla.runs" / "impl_1"
        self.props: dict[str, str] = {}
        for name in _RECORD_ONLY:
            self._define(name, lambda *a: "")
        for name in _LOOKUPS:
            self._define(name, lambda *a: a[-1] if a else "")
        self._define("create_project", lambda *a: "vdla")
        self._define("current_project", lambda *a: "vdla")
        self._define("current_fileset", lambda *a: "sources_1")
        self._define("get_board_parts", lambda *a: " ".join(self.board_parts))
        self._define("create_bd_cell", lambda *a: a[-1])
        self._define("get_files", self._get_files)
        self._define("make_wrapper", lambda *a: str(self.work_dir / "vivado" / "vdla_bd_wrapper.v"))
        self._define("get_property", self._get_property)
        self._define("wait_on_run", self._wait_on_run)
        self._define("get_timing_paths", lambda *a: "worst_setup_path")
        self._define("get_cells", self._get_cells)
        for name in ("report_utilization", "report_timing_summary", "write_hw_platform"):
            self._define(name, self._write_file_option)

    def _define(self, name: str, func) -> None:
        def recorded(*args: str) -> str:
            self.calls.append(Call(name, tuple(args)))
            return func(*args)

        self.tcl.createcommand(name, recorded)

    def _get_files(self, *args: str) -> str:
        if "-of_objects" in args:  # the block design's generated files: its hardware handoff
            hwh = self.work_dir / "vivado" / "hw_handoff" / "vdla_bd.hwh"
            hwh.parent.mkdir(parents=True, exist_ok=True)
            hwh.write_text("<EDKSYSTEM/>\n")
            return str(hwh)
        return str(self.work_dir / "vivado" / args[-1])

    def _get_property(self, *args: str) -> str:
        prop, obj = args[-2], args[-1]
        if prop == "PROGRESS":
            return "0%" if obj == self.failing_run else "100%"
        if prop == "STATUS":
            return "synth_design ERROR" if obj == self.failing_run else "write_bitstream Complete!"
        if prop == "DIRECTORY":
            return str(self.run_dir)
        if prop == "SLACK":
            return self.slack_ns
        if prop.startswith("CONFIG.") and "ACT" in prop:
            return self.actual_clock_mhz or self.tcl.getvar("vdla_clock_mhz")
        raise AssertionError(f"build.tcl asked for property {prop} of {obj}, which the stub does not know")

    def _get_cells(self, *args: str) -> str:
        # A few primitives per type, told apart by their count: LUT 3, FD 2, DSP48 1, RAMB 0.
        counts = {"LUT*": 3, "FD*": 2, "DSP48*": 1}
        pattern = args[-1].split("=~ ")[-1]
        return " ".join(f"cell{i}" for i in range(counts.get(pattern, 0)))

    def _wait_on_run(self, *args: str) -> str:
        if args[-1] == "impl_1" and self.failing_run != "impl_1":
            self.run_dir.mkdir(parents=True, exist_ok=True)
            (self.run_dir / "vdla_bd_wrapper.bit").write_bytes(b"\x00\x09\x0f\xf0bitstream")
        return ""

    def _write_file_option(self, *args: str) -> str:
        path = Path(args[args.index("-file") + 1])
        path.write_text(f"stub {' '.join(args)}\n")
        return ""

    def source(self, script: Path) -> None:
        """Run ``script`` as ``vivado -mode batch -source`` would (a Tcl error raises ``tkinter.TclError``)."""
        self.tcl.eval(f"source {{{script}}}")

    def named(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.name == name]

    def index(self, name: str, *args: str) -> int:
        """Position of the first call of ``name`` whose arguments include ``args``."""
        for i, c in enumerate(self.calls):
            if c.name == name and all(a in c.args for a in args):
                return i
        raise AssertionError(f"no call {name} {args}")


def main(argv: list[str]) -> int:
    """``vivado -mode batch ... -source build.tcl`` in the current folder, on the stubs."""
    script = Path(argv[argv.index("-source") + 1]).resolve()
    stub = VivadoStub(script.parent)
    try:
        stub.source(script)
    except tkinter.TclError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1
    (script.parent / "vivado.log").write_text("\n".join(f"{c.name} {' '.join(c.args)}" for c in stub.calls) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
