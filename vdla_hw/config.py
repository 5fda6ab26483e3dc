"""The accelerator's hardware configuration: the single source of truth.

A config is read from JSON (presets live in ``vdla_hw/configs/``), validated
once, and then derives every constant the rest of the stack needs: tile shapes,
element sizes, buffer depths, index widths.  The RTL parameter package, both
simulators, the runtime and the compiler all read these derived values; none of
them recomputes them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any
from vdla_hw.errors import BadConfigError, BadFileError

CONFIG_DIR = Path(__file__).parent / "configs"
# The one source of default values: the dataclass fields below take theirs from the default preset,
# so ``HwConfig(name=...)`` and ``load_config("default")`` describe the same hardware.
_DEFAULTS: dict[str, Any] = json.loads((CONFIG_DIR / "default.json").read_text())
# Limits the RTL's elaboration checks fix (stated in CONFIG_RULES, which the ISA doc prints).
MIN_PIPELINE_DEPTH = 3
MIN_ALU_II = 2
MAX_BURST_BEATS = 256


class ConfigError(BadConfigError):
    """An invalid hardware configuration; the message names the field and the allowed range."""


class ConfigFileError(ConfigError, BadFileError):
    """A hardware config file that is missing, empty, truncated or not JSON at all."""


@dataclass(frozen=True)
class TimingConfig:
    """Timing parameters of the microarchitecture, used by the cycle model.

    All values are in accelerator clock cycles unless the name says otherwise.
    Presets carry the RTL's values: the fields that are RTL parameters reach the
    RTL through the generated package, the others are measured properties of the
    RTL (``docs/rtl.md`` says which is which and how each was measured).
    """

    dram_latency: int = _DEFAULTS["timing"]["dram_latency"]
    """Cycles from a DRAM read request to its first data beat, and from a write burst's last beat
    to its write response."""
    dram_burst_bytes: int = _DEFAULTS["timing"]["dram_burst_bytes"]
    """Largest AXI burst in bytes; longer rows are split into several bursts."""
    gemm_pipeline_depth: int = _DEFAULTS["timing"]["gemm_pipeline_depth"]
    """Cycles to fill the GEMM pipeline before the first micro-op iteration retires."""
    alu_pipeline_depth: int = _DEFAULTS["timing"]["alu_pipeline_depth"]
    """Cycles to fill the ALU pipeline."""
    alu_ii: int = _DEFAULTS["timing"]["alu_ii"]
    """Initiation interval of the ALU: cycles between consecutive micro-op iterations."""
    store_pipeline_depth: int = _DEFAULTS["timing"]["store_pipeline_depth"]
    """Register stages of the STORE's requantization between the output buffer's read and the
    element queue (0..3): each delays every STORE's element stream by one cycle and shortens the
    critical path (``docs/rtl.md``)."""
    sram_write_cycles: int = _DEFAULTS["timing"]["sram_write_cycles"]
    """Cycles to write one element (tile) into an SRAM buffer, e.g. a zero-padding element."""
    insn_overhead: int = _DEFAULTS["timing"]["insn_overhead"]
    """Cycles the dependency-token gate adds to every instruction besides its executor: one from
    taking the instruction to starting the executor (popping its tokens), the rest after the
    executor is done (pushing its tokens in the first of them)."""
    queue_latency: int = _DEFAULTS["timing"]["queue_latency"]
    """Cycles from a push into a command, token or element queue to the earliest pop of that entry
    (the RTL's FIFOs have a registered output)."""
    dma_start_cycles: int = _DEFAULTS["timing"]["dma_start_cycles"]
    """Cycles from an executor's start (or fetch's) to its first DRAM read request on the AXI bus:
    the row command, the engine's burst request, the read arbiter's register.  A write request
    does not pass the arbiter: one cycle less."""
    dma_max_bursts: int = _DEFAULTS["timing"]["dma_max_bursts"]
    """Read bursts in flight (requested, last beat not yet returned) and write bursts awaiting their
    response, per DMA direction."""
    dma_narrow_rows: int = _DEFAULTS["timing"]["dma_narrow_rows"]
    """Row commands a DMA engine keeps in flight when its elements are narrower than the bus
    (the queue of lane offsets and counts it unpacks or packs beats with)."""
    axi_r_slice: int = 0
    """Register slices (skid buffers, 0 or 1) on the AXI read data channel inside the read arbiter:
    1 delays every read beat by one cycle and keeps the bus's handshake out of the DMA engines'
    ready logic (a shorter critical path, ``docs/rtl.md``)."""
    dram_beat_cycles: int = 1
    """Cycles the DRAM needs per bus beat: 1 for a memory as fast as the bus (every preset's RTL
    harness); more for a narrower one, e.g. 5 for the ULX3S's 16-bit SDRAM behind a 64-bit bus
    (LiteDRAM's port converter: 1 cycle to take the beat, 4 for its 16-bit commands; a board's
    memory, see ``vdla_hw.fpga.boards``).  Reads and writes share it: above 1, a STORE's bursts wait
    for their turn in the same memory as the loads'."""
    dram_burst_cycles: int = 0
    """Cycles the DRAM spends on every burst besides its beats: row activation and precharge,
    the controller's command slots, refresh on average.  0 for the RTL harness's memory."""

    def to_dict(self) -> dict[str, int]:
        """The fields as a JSON-ready dict.  The DRAM fields added after the presets
        (:data:`NEUTRAL_TIMING`) are left out at their neutral value: a config that does not set
        them describes the same hardware, with the same digest, as before they existed."""
        data = dataclasses.asdict(self)
        for key, neutral in NEUTRAL_TIMING.items():
            if data[key] == neutral:
                del data[key]
        return data

    @property
    def read_latency(self) -> int:
        """Cycles from a read burst's request on the bus to its first beat at a DMA engine: the
        DRAM's latency plus the read arbiter's R slice (derived, never configured)."""
        return self.dram_latency + self.axi_r_slice

    @property
    def alu_copy_ii(self) -> int:
        """Initiation interval of the ALU's copy (``MOV``): derived, never configured.  A copy reads
        only its source, so the single accumulator read port takes one iteration per cycle."""
        return 1

    def alu_op_ii(self, reads_dst: bool) -> int:
        """Cycles between consecutive micro-op iterations of an ALU op that does (or does not) read
        its destination: ``alu_ii`` for the two-operand ops, ``alu_copy_ii`` for the copy."""
        return self.alu_ii if reads_dst else self.alu_copy_ii


@dataclass(frozen=True)
class HwConfig:
    """A validated VDLA hardware configuration.

    Widths and sizes are given as log2 values, as in the published design; use
    the derived properties (``batch``, ``inp_width``, ``inp_buff_depth`` ...)
    rather than recomputing them.
    """

    name: str
    """Name of the configuration (the preset's file name for presets)."""
    log_inp_width: int = _DEFAULTS["log_inp_width"]
    """log2 of the input element width in bits (3 = int8)."""
    log_wgt_width: int = _DEFAULTS["log_wgt_width"]
    """log2 of the weight element width in bits (3 = int8)."""
    log_acc_width: int = _DEFAULTS["log_acc_width"]
    """log2 of the accumulator width in bits (5 = int32)."""
    log_out_width: int = _DEFAULTS["log_out_width"]
    """log2 of the output width in bits; STORE keeps the low bits of each accumulator."""
    log_batch: int = _DEFAULTS["log_batch"]
    """log2 of BATCH, the rows of the GEMM core's input vector."""
    log_block_in: int = _DEFAULTS["log_block_in"]
    """log2 of BLOCK_IN, the reduction width of the GEMM core."""
    log_block_out: int = _DEFAULTS["log_block_out"]
    """log2 of BLOCK_OUT, the output channels of the GEMM core."""
    log_uop_buff_size: int = _DEFAULTS["log_uop_buff_size"]
    """log2 of the micro-op buffer size in bytes."""
    log_inp_buff_size: int = _DEFAULTS["log_inp_buff_size"]
    """log2 of the input buffer size in bytes."""
    log_wgt_buff_size: int = _DEFAULTS["log_wgt_buff_size"]
    """log2 of the weight buffer size in bytes."""
    log_acc_buff_size: int = _DEFAULTS["log_acc_buff_size"]
    """log2 of the accumulator buffer size in bytes."""
    log_bus_width: int = _DEFAULTS["log_bus_width"]
    """log2 of the DRAM (AXI) data bus width in bits."""
    cmd_queue_depth: int = _DEFAULTS["cmd_queue_depth"]
    """Entries of each of the three command queues fetch dispatches into."""
    dep_queue_depth: int = _DEFAULTS["dep_queue_depth"]
    """Tokens each of the four dependency queues holds."""
    clock_mhz: float = _DEFAULTS["clock_mhz"]
    """Accelerator clock frequency in MHz."""
    gemm_lut_macs: int = _DEFAULTS["gemm_lut_macs"]
    """How many of the GEMM core's ``macs_per_cycle`` int multipliers are built from LUTs instead of
    DSP slices (the last output lanes of the tile); same results, fewer DSPs, more LUTs.  Set it so
    the design fits the target device (``vdla hw synth``)."""
    timing: TimingConfig = field(default_factory=TimingConfig)
    """Timing parameters of the cycle model."""

    def __post_init__(self) -> None:
        _validate(self)

    # ---- element shapes and widths -------------------------------------------------
    @property
    def batch(self) -> int:
        return 1 << self.log_batch

    @property
    def block_in(self) -> int:
        return 1 << self.log_block_in

    @property
    def block_out(self) -> int:
        return 1 << self.log_block_out

    @property
    def inp_width(self) -> int:
        return 1 << self.log_inp_width

    @property
    def wgt_width(self) -> int:
        return 1 << self.log_wgt_width

    @property
    def acc_width(self) -> int:
        return 1 << self.log_acc_width

    @property
    def out_width(self) -> int:
        return 1 << self.log_out_width

    @property
    def bus_width(self) -> int:
        return 1 << self.log_bus_width

    @property
    def bus_bytes(self) -> int:
        return self.bus_width // 8

    # ---- one SRAM element ("tile") of each buffer, in bytes -------------------------
    @property
    def uop_elem_bytes(self) -> int:
        return 4

    @property
    def inp_elem_bytes(self) -> int:
        return self.batch * self.block_in * self.inp_width // 8

    @property
    def wgt_elem_bytes(self) -> int:
        return self.block_out * self.block_in * self.wgt_width // 8

    @property
    def acc_elem_bytes(self) -> int:
        return self.batch * self.block_out * self.acc_width // 8

    @property
    def out_elem_bytes(self) -> int:
        return self.batch * self.block_out * self.out_width // 8

    # ---- buffer depths (number of elements) and index widths ------------------------
    @property
    def uop_buff_depth(self) -> int:
        return (1 << self.log_uop_buff_size) // self.uop_elem_bytes

    @property
    def inp_buff_depth(self) -> int:
        return (1 << self.log_inp_buff_size) // self.inp_elem_bytes

    @property
    def wgt_buff_depth(self) -> int:
        return (1 << self.log_wgt_buff_size) // self.wgt_elem_bytes

    @property
    def acc_buff_depth(self) -> int:
        return (1 << self.log_acc_buff_size) // self.acc_elem_bytes

    @property
    def out_buff_depth(self) -> int:
        """The output buffer is the narrowed view of the accumulator buffer: same depth."""
        return self.acc_buff_depth

    @property
    def log_uop_buff_depth(self) -> int:
        return self.uop_buff_depth.bit_length() - 1

    @property
    def log_inp_buff_depth(self) -> int:
        return self.inp_buff_depth.bit_length() - 1

    @property
    def log_wgt_buff_depth(self) -> int:
        return self.wgt_buff_depth.bit_length() - 1

    @property
    def log_acc_buff_depth(self) -> int:
        return self.acc_buff_depth.bit_length() - 1

    @property
    def fetch_cycles_per_insn(self) -> int:
        """Cycles between two instructions coming out of fetch's DRAM stream: an instruction
        takes ``INSN_BYTES / bus_bytes`` beats on a narrow bus, and fetch hands on at most
        one per cycle from a wide one (derived from the bus width, never configured)."""
        from vdla_hw.isa import INSN_BYTES

        return max(1, INSN_BYTES // self.bus_bytes)

    @property
    def macs_per_cycle(self) -> int:
        """Peak multiply-accumulates per cycle of the GEMM core."""
        return self.batch * self.block_in * self.block_out

    @property
    def peak_gops(self) -> float:
        """Peak throughput in giga-operations per second (one MAC = two operations)."""
        return 2 * self.macs_per_cycle * self.clock_mhz / 1000.0

    @cached_property
    def isa(self) -> "Isa":  # noqa: F821 - resolved lazily to avoid a cycle
        """The instruction-set layout derived from this config."""
        from vdla_hw.isa import Isa

        return Isa(self)

    # ---- (de)serialization ------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict that :func:`from_dict` turns back into an equal config."""
        data = dataclasses.asdict(self)
        data["timing"] = self.timing.to_dict()
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @cached_property
    def digest(self) -> str:
        """A stable 12-hex-digit hash of the hardware this config describes.

        Computed over the canonical JSON (sorted keys, no whitespace) of every field but
        ``name``: two presets describing the same hardware share a digest, and any parameter
        change gives a new one.  Device-pool kinds (``vdla-rtl-<digest>``) are named by it.
        """
        data = self.to_dict()
        del data["name"]
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def replace(self, **changes: Any) -> "HwConfig":
        """A new validated config with some fields changed (``timing`` may be a dict)."""
        data = self.to_dict()
        if isinstance(changes.get("timing"), TimingConfig):
            changes["timing"] = changes["timing"].to_dict()
        elif isinstance(changes.get("timing"), dict):
            changes["timing"] = {**data["timing"], **changes["timing"]}
        data.update(changes)
        return from_dict(data)

    def label(self) -> str:
        """``'name' (digest)``: how messages name a config (files compiled for one record its digest)."""
        return f"{self.name!r} ({self.digest})"



# Allowed inclusive ranges of the log2/plain integer fields (public: the docs generator prints them).
# Data values are 8 or 16 bits (32 for accumulators): the compiler's integer types.  4-bit values,
# which the simulators could pack, are refused here rather than by the compiler after validation.
RANGES: dict[str, tuple[int, int]] = {
    "log_inp_width": (3, 4),
    "log_wgt_width": (3, 4),
    "log_acc_width": (4, 5),
    "log_out_width": (3, 4),
    "log_batch": (0, 3),
    "log_block_in": (1, 6),
    "log_block_out": (1, 6),
    "log_uop_buff_size": (6, 20),
    "log_inp_buff_size": (6, 22),
    "log_wgt_buff_size": (6, 22),
    "log_acc_buff_size": (6, 22),
    "log_bus_width": (5, 9),
    "cmd_queue_depth": (1, 1 << 16),
    "dep_queue_depth": (1, 1 << 16),
    "gemm_lut_macs": (0, 1 << 15),
}
TIMING_RANGES: dict[str, tuple[int, int]] = {
    "dram_latency": (0, 10_000),
    "dram_burst_bytes": (8, 4096),
    "gemm_pipeline_depth": (1, 64),
    "alu_pipeline_depth": (1, 64),
    "alu_ii": (1, 16),
    "store_pipeline_depth": (0, 3),
    "sram_write_cycles": (1, 16),
    "insn_overhead": (2, 64),
    "queue_latency": (1, 16),
    "dma_start_cycles": (2, 16),
    "dma_max_bursts": (1, 64),
    "dma_narrow_rows": (1, 64),
    "axi_r_slice": (0, 1),
    "dram_beat_cycles": (1, 256),
    "dram_burst_cycles": (0, 10_000),
}
NEUTRAL_TIMING: dict[str, int] = {"dram_beat_cycles": 1, "dram_burst_cycles": 0, "axi_r_slice": 0}
"""Timing fields whose neutral value leaves the cycle model's timing as it was before they existed
(left out of :meth:`TimingConfig.to_dict`, so out of the digest, at that value)."""
CLOCK_MHZ_RANGE: tuple[float, float] = (1, 2000)
# The rules across fields that validation enforces besides the ranges above (public: the docs
# generator prints them).  Each is what the RTL's elaboration checks or the ISA's encoding need.
CONFIG_RULES: tuple[str, ...] = (
    "`cmd_queue_depth` and `dep_queue_depth` are powers of two (the RTL's FIFOs).",
    "`timing.dram_burst_bytes` is a power of two, at least the bus width in bytes, and at most "
    f"{MAX_BURST_BEATS} bus beats (an AXI4 burst).",
    f"`timing.gemm_pipeline_depth` and `timing.alu_pipeline_depth` are at least {MIN_PIPELINE_DEPTH} "
    "(operand read, operate, accumulator write).",
    f"`timing.alu_ii` is at least {MIN_ALU_II} (one accumulator read port, two operands) and at least "
    "`alu_pipeline_depth - 3` (the ALU forwards a write into its operand registers, which it fills by the "
    "third cycle of an iteration).",
    "The accumulator is at least as wide as an input × weight product "
    "(`acc_width >= inp_width + wgt_width`); the output is no wider than the accumulator.",
    "Input, weight and output values are 8 or 16 bits wide (the compiler's integer types; no 4-bit values).",
    "`gemm_lut_macs` is at most the GEMM core's multipliers (`macs_per_cycle`).",
    "Every SRAM buffer holds at least two of its elements (double buffering; a non-empty index).",
    "Every instruction and micro-op field derived from the buffer depths fits its 128-bit instruction / "
    "32-bit micro-op.",
    "Derived, never configured: `fetch_cycles_per_insn = max(1, 16 / bus_bytes)` (a stored value is refused).",
)
# Queue depths are sized in hardware as FIFOs: they must be powers of two.
POW2_FIELDS = ("cmd_queue_depth", "dep_queue_depth")


def _check_int(owner: str, name: str, value: Any, lo: int, hi: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{owner}.{name} must be an integer in [{lo}, {hi}], got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(f"{owner}.{name} = {value} is out of range: allowed [{lo}, {hi}]")


def _validate(cfg: HwConfig) -> None:
    if not isinstance(cfg.name, str) or not cfg.name:
        raise ConfigError(f"config.name must be a non-empty string, got {cfg.name!r}")
    for name, (lo, hi) in RANGES.items():
        _check_int(cfg.name, name, getattr(cfg, name), lo, hi)
    for name in POW2_FIELDS:
        value = getattr(cfg, name)
        if value & (value - 1):
            raise ConfigError(
                f"{cfg.name}.{name} = {value} is not a power of two; use e.g. {1 << (value.bit_length() - 1)}"
            )
    if not isinstance(cfg.timing, TimingConfig):
        raise ConfigError(f"{cfg.name}.timing must be a TimingConfig, got {type(cfg.timing).__name__}")
    for name, (lo, hi) in TIMING_RANGES.items():
        _check_int(f"{cfg.name}.timing", name, getattr(cfg.timing, name), lo, hi)
    burst = cfg.timing.dram_burst_bytes
    if burst & (burst - 1) or burst < cfg.bus_bytes:
        raise ConfigError(
            f"{cfg.name}.timing.dram_burst_bytes = {burst} must be a power of two "
            f">= the bus width in bytes ({cfg.bus_bytes})"
        )
    _validate_rtl_timing(cfg)
    lo_mhz, hi_mhz = CLOCK_MHZ_RANGE
    clock = cfg.clock_mhz
    if isinstance(clock, bool) or not isinstance(clock, (int, float)) or not lo_mhz <= clock <= hi_mhz:
        raise ConfigError(f"{cfg.name}.clock_mhz = {clock!r} is out of range: allowed [{lo_mhz}, {hi_mhz}] MHz")
    if cfg.acc_width < cfg.inp_width + cfg.wgt_width:
        raise ConfigError(
            f"{cfg.name}.log_acc_width = {cfg.log_acc_width} gives {cfg.acc_width}-bit accumulators, narrower than "
            f"the {cfg.inp_width}x{cfg.wgt_width}-bit product; raise log_acc_width or lower the input/weight widths"
        )
    if cfg.out_width > cfg.acc_width:
        raise ConfigError(
            f"{cfg.name}.log_out_width = {cfg.log_out_width} is wider than the accumulator "
            f"(log_acc_width = {cfg.log_acc_width}); allowed [2, {cfg.log_acc_width}]"
        )
    if cfg.gemm_lut_macs > cfg.macs_per_cycle:
        raise ConfigError(
            f"{cfg.name}.gemm_lut_macs = {cfg.gemm_lut_macs} exceeds the GEMM core's {cfg.macs_per_cycle} "
            f"multipliers (macs_per_cycle); allowed [0, {cfg.macs_per_cycle}]"
        )
    # Every buffer must hold at least two elements: one tile is not enough to double-buffer,
    # and a zero-bit index cannot be encoded.
    for buf in ("uop", "inp", "wgt", "acc"):
        elem = getattr(cfg, f"{buf}_elem_bytes")
        size = 1 << getattr(cfg, f"log_{buf}_buff_size")
        if size < 2 * elem:
            min_log = (2 * elem).bit_length() - 1
            raise ConfigError(
                f"{cfg.name}.log_{buf}_buff_size = {size.bit_length() - 1} ({size} B) is smaller than two "
                f"{elem}-byte {buf} tiles; allowed [{min_log}, {RANGES[f'log_{buf}_buff_size'][1]}]"
            )
    # Field widths of the ISA are derived from the sizes above; building the layout checks
    # that every field still fits its 128-bit instruction / 32-bit micro-op.
    from vdla_hw.isa import Isa

    Isa(cfg)


def _validate_rtl_timing(cfg: HwConfig) -> None:
    """The timing rules the RTL's elaboration checks (``$fatal``) enforce, checked here first."""
    t = cfg.timing
    for name in ("gemm_pipeline_depth", "alu_pipeline_depth"):
        depth = getattr(t, name)
        if depth < MIN_PIPELINE_DEPTH:
            raise ConfigError(
                f"{cfg.name}.timing.{name} = {depth}: the RTL pipeline needs at least {MIN_PIPELINE_DEPTH} stages "
                f"(operand read, multiply/operate, accumulator write); allowed [{MIN_PIPELINE_DEPTH}, {TIMING_RANGES[name][1]}]"
            )
    least_ii = max(MIN_ALU_II, t.alu_pipeline_depth - 3)
    if t.alu_ii < least_ii:
        raise ConfigError(
            f"{cfg.name}.timing.alu_ii = {t.alu_ii} must be >= {MIN_ALU_II} (one accumulator read port, two operands) "
            f"and >= alu_pipeline_depth - 3 = {t.alu_pipeline_depth - 3} (forwarding reaches the operand registers only); "
            f"allowed [{least_ii}, {TIMING_RANGES['alu_ii'][1]}]"
        )
    beats = t.dram_burst_bytes // cfg.bus_bytes
    if beats > MAX_BURST_BEATS:
        raise ConfigError(
            f"{cfg.name}.timing.dram_burst_bytes = {t.dram_burst_bytes} is {beats} beats of the {cfg.bus_bytes}-byte bus; "
            f"AXI4 allows at most {MAX_BURST_BEATS} beats per burst: allowed [{cfg.bus_bytes}, "
            f"{MAX_BURST_BEATS * cfg.bus_bytes}] bytes"
        )


# Keys earlier configs stored that are now derived; a file naming one is told why it is refused.
DERIVED_TIMING_KEYS = {"fetch_cycles_per_insn": "it is derived from log_bus_width (HwConfig.fetch_cycles_per_insn)"}


def from_dict(data: dict[str, Any]) -> HwConfig:
    """Build and validate a config from a JSON-like dict; unknown keys are errors."""
    if not isinstance(data, dict):
        raise ConfigError(f"a hardware config must be a JSON object, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(HwConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown config key(s) {unknown}; allowed keys: {sorted(known)}")
    if "name" not in data:
        raise ConfigError("config is missing the required key 'name'")
    values = dict(data)
    timing = values.pop("timing", {})
    if not isinstance(timing, dict):
        raise ConfigError(f"config.timing must be a JSON object, got {type(timing).__name__}")
    tknown = {f.name for f in dataclasses.fields(TimingConfig)}
    derived = sorted(set(timing) & set(DERIVED_TIMING_KEYS))
    if derived:
        key = derived[0]
        raise ConfigError(f"timing.{key} is no longer a config key: {DERIVED_TIMING_KEYS[key]}",
                          hint=f"delete timing.{key} from the config")
    tunknown = sorted(set(timing) - tknown)
    if tunknown:
        raise ConfigError(f"unknown timing key(s) {tunknown}; allowed keys: {sorted(tknown)}")
    return HwConfig(**values, timing=TimingConfig(**timing))


def preset_names() -> list[str]:
    """Names of the presets shipped in ``vdla_hw/configs/``."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def load_config(name_or_path: str | Path | HwConfig = "default") -> HwConfig:
    """Load a preset by name (``default``, ``tiny``, ``wide``) or a JSON file by path."""
    if isinstance(name_or_path, HwConfig):
        return name_or_path
    path = Path(name_or_path)
    if path.suffix != ".json":
        path = CONFIG_DIR / f"{name_or_path}.json"
        if not path.exists():
            raise ConfigError(f"no hardware preset named {name_or_path!r}; presets: {preset_names()}, or pass a .json path")
    elif not path.is_file():
        raise ConfigFileError(f"hardware config file {str(path)!r} does not exist"
                              + (" (it is a directory)" if path.exists() else ""))
    raw = path.read_bytes()
    if not raw.strip():
        raise ConfigFileError(f"hardware config file {path} is empty", hint="write the config as a JSON object")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigFileError(f"{path} is binary data, not a hardware config (a JSON text)",
                              hint="pass a preset name or a .json config file") from None
    except json.JSONDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid JSON ({exc}); truncated, or not a hardware config") from None
    return from_dict(data)
