"""The proof tasks of a config: which module is proven, with which parameters, how deep.

Every task proves one module (or the token harness of ``vdla_hw/formal``) as the top of
a SymbiYosys run. The parameters come from the config, so each preset proves the FIFO
depths, DMA element widths and gate variants its design instantiates. A task's
``define`` turns the module's environment contract from assertions into assumptions
(see the `` `ifdef FORMAL `` blocks in ``vdla_hw/rtl``): a module proven alone assumes its
neighbours keep their side of the valid/ready handshakes; a harness that wires the real
neighbours in proves it instead.

Method: ``prove`` is k-induction (SymbiYosys ``mode prove``: a base case of ``depth``
steps plus an induction step of ``depth``), so a pass holds for every reachable state.
``bmc`` checks every execution of ``depth`` cycles from reset only; it is used where no
inductive strengthening is written yet, and the depth is stated in the task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import Mapping
from pathlib import Path

from vdla_hw import isa as isa_mod
from vdla_hw.config import HwConfig, load_config
from vdla_hw.rtl_build import RTL_DIR

HARNESS_DIR = Path(__file__).parent


@dataclass(frozen=True)
class ProofTask:
    """One SymbiYosys run: ``top`` from ``modules`` (RTL module names) plus harness files."""

    name: str
    top: str
    modules: tuple[str, ...]
    params: tuple[tuple[str, int], ...] = ()
    define: str | None = None
    extra_defines: tuple[str, ...] = ()
    """More macros defined for the run (a variant of the module's properties)."""
    mode: str = "prove"
    depth: int = 8
    harness: tuple[str, ...] = ()
    """File names in ``vdla_hw/formal`` read after the RTL modules."""
    properties: tuple[str, ...] = field(default=())
    """Labels of the properties the task checks (asserted ones), for the report."""
    solver: str = "z3"
    """The solver the task runs with unless the caller names one (boolector where z3 is far slower)."""
    generated: tuple[tuple[str, str], ...] = ()
    """(file name, text) of files written beside the sources for the run (e.g. a harness's include)."""
    script: tuple[str, ...] = ()
    """Yosys commands run after ``prep`` (e.g. dropping the submodules' own assertions)."""
    engine_opts: tuple[str, ...] = ()
    """Options of the ``smtbmc`` engine (e.g. ``--nopresat``: no separate check of the assumptions per step)."""
    abc_opts: tuple[str, ...] = ()
    """Options of the ABC command of an ``abc-*`` engine (e.g. ``bmc3``'s ``-g``: the Glucose SAT solver)."""
    config: tuple[tuple[str, object], ...] = ()
    """Changes to the config the run elaborates the RTL with (``HwConfig.replace``), e.g. the live tasks'
    queue depths sized to their program (:func:`~vdla_hw.formal.liveness.live_config`)."""
    skip: int = 0
    """BMC only: steps before this one are unrolled but their assertions not checked (the replay of a
    counterexample another engine found at that step)."""

    @property
    def method(self) -> str:
        return f"k-induction, depth {self.depth}" if self.mode == "prove" else f"BMC, depth {self.depth}"


FIFO_PROPS = ("a_fifo_overflow", "a_fifo_underflow", "a_fifo_in_stable", "a_fifo_count", "f_fifo_ptrs")
GATE_PROPS = ("f_gate_release", "f_gate_pop_once", "f_gate_push_once", "f_gate_pushed_all", "f_gate_need",
              "f_gate_progress")
GATE_CONTRACT = ("a_gate_cmd_stable", "a_gate_token_held_prev", "a_gate_token_held_next", "a_gate_exec_done")
TOKEN_PROPS = ("f_tok_conserved",)
DMA_RD_PROPS = ("a_axi_ar_burst", "a_axi_ar_stable", "f_dma_ar_len", "f_dma_rd_beats")
DMA_WR_PROPS = ("a_axi_aw_burst", "a_axi_aw_stable", "a_axi_w_stable", "a_axi_wlast", "f_dma_aw_len",
                "f_dma_w_after_aw", "f_dma_wr_outstanding")

ARB_PROPS = ("a_arb_grant_onehot", "a_axi_ar_stable", "a_arb_bursts", "f_arb_in_flight", "a_arb_r_onehot",
             "a_arb_fair", "f_arb_fair_dist")
ARB_ROUTE_PROPS = ("a_arb_route", "a_arb_r_owned")
TILE_PROPS = ("f_tile_addr", "f_tile_oob_sound")
TILE_LEGAL_PROPS = ("a_tile_sram_range", "f_tile_in_buffer", "f_tile_extent", "f_tile_rows", "f_tile_walk")
RANGE_PROPS = ("f_range_first", "f_range_sound", "f_range_armed")
CTRL_PROPS = ("f_ctrl_clear_start", "f_ctrl_ends", "f_ctrl_ends_why", "f_ctrl_window_fixed", "f_ctrl_b_held",
              "f_ctrl_r_held")
LIVE_PROPS = ("a_live_done", "a_live_status", "a_live_bready")
LIVE_ROOM_PROPS = ("a_live_room_cmd", "a_live_room_dep")
# The options of the live tasks' `abc bmc3` (Satoko: see live_tasks).
LIVE_ABC_OPTS = ("-s",)
FETCH_DISPATCH_PROPS = ("f_fetch_dispatch_bound", "f_fetch_conserved", "f_fetch_room")
GATE_TOKEN_PROPS = ("f_gate_tokens_prev", "f_gate_tokens_next")
UOP_LOOP_PROPS = ("a_uop_range", "f_uop_bounds", "f_uop_progress", "f_uop_wait", "a_uop_next")


def read_clients(rtl_dir: Path | None = None) -> int:
    """The number of DRAM read clients ``vdla_top`` puts on its arbiter (its ``N_RD``)."""
    text = ((rtl_dir or RTL_DIR) / "vdla_top.sv").read_text()
    found = re.search(r"localparam\s+int\s+N_RD\s*=\s*(\d+)\s*;", text)
    if not found:
        raise ValueError("vdla_top.sv no longer declares `localparam int N_RD = <number>;`; update "
                         "vdla_hw/formal/tasks.py:read_clients")
    return int(found.group(1))


# Depths of the BMC tasks (their induction does not close yet: see docs/rtl.md).
# DMA: 12 cycles from reset cover a command accepted, its first bursts split at a DRAM
# block boundary and a back-pressured AR/AW/W handshake; the WLAST property follows one
# burst chosen by the solver, so any burst position that fits in 12 cycles is checked.
DMA_BMC_DEPTH = 12
# Tokens: 12 cycles hold two complete instructions per gate (3 cycles each plus a 1-cycle
# executor) with tokens crossing both queues in both directions.
TOKENS_BMC_DEPTH = 12
# Read arbiter, route: 10 cycles hold a grant, its AR handshake and the R bursts of the first
# grants ending (back-pressured or not), so the solver can pick a burst whose data is routed
# while later grants to other clients are in flight. Boolector: 2.5 min on tiny; z3 did not
# reach depth 10 in 10 minutes.
ARB_ROUTE_BMC_DEPTH = 10
# Window: 8 cycles cover reset, a command through the window (in or out of it, halted or not)
# and the engine's first bursts of it, split at a DRAM block boundary; the free base and limit
# make the solver's work grow fast with depth (depth 12 did not finish in 10 minutes).
WINDOW_BMC_DEPTH = 8
# Write window: the same 8 cycles -- reset, a command through the window, its first AW bursts
# (split at a DRAM block boundary) and their first W beats. Boolector: 2.7 min on tiny.
WINDOW_WR_BMC_DEPTH = 8
# Legal tile walks (a_tile_sram_range): 5 cycles hold reset, a start and the walk's first three
# writes of any legal block (any base, extents and padding), the first row end included when a
# row is one to three elements wide. Boolector: 33 s on tiny (5.8 min at load average ~28).
TILE_LEGAL_BMC_DEPTH = 5


# The fetch lemma: its invariants are 1-inductive; 2 * CHUNK + 6 cycles from reset hold clear, start, a
# chunk asked for, its words arriving and being dispatched, so a fetch that dispatches one too many fails
# with a trace from reset (tiny: CHUNK = 4).
FETCH_DISPATCH_DEPTH = 8


# The instruction DMA's element lemma: 1-inductive with its strengthening; 6 cycles from reset hold reset,
# a command accepted, its burst's AR and the two beats of a 128-bit element on a 64-bit bus, so an engine
# that hands out an element nobody asked for fails with a trace from reset.
DMA_RD_ELEMS_DEPTH = 6
DMA_RD_ELEMS_PROPS = ("f_dma_rd_elems", "f_dma_rd_elems_beats")


# The gate's token lemma: 1-inductive with the gate's own invariants; 8 cycles from reset hold reset, an
# instruction through accept, pop, execute and push and the next one's accept, so a gate that pushes a token
# it was not asked for fails with a trace from reset.
GATE_TOKENS_DEPTH = 8


# The FIFO invariants are 1-inductive, so any depth proves them; the depth is the longest
# counterexample from reset the base case finds. DEPTH + 4 cycles reset, fill a FIFO (its first
# entry takes two cycles to the output), push once more and see the count, so a bug at the
# full mark fails with a real trace. Above 18 (the 32-entry command queues) such a bug shows as
# UNKNOWN with the induction step's trace: a depth of 34 costs minutes.
FIFO_MAX_DEPTH = 18


def _fifo_tasks(cfg: HwConfig) -> list[ProofTask]:
    """The FIFO at every depth the design instantiates, strict where its users are strict."""
    depths = {("cmd", cfg.cmd_queue_depth, 0), ("dep", cfg.dep_queue_depth, 0),
              ("bursts", cfg.timing.dma_max_bursts, 1), ("rows", cfg.timing.dma_narrow_rows, 1),
              ("one", 1, 1), ("three", 3, 0)}
    out = []
    for what, depth, strict in sorted(depths, key=lambda d: (d[1], d[0])):
        out.append(ProofTask(
            name=f"fifo_{what}_d{depth}", top="vdla_fifo", modules=("vdla_fifo",),
            params=(("WIDTH", 4), ("DEPTH", depth), ("STRICT_PUSH", strict), ("STRICT_POP", strict)),
            define="VDLA_FORMAL_TOP_FIFO", depth=min(depth + 4, FIFO_MAX_DEPTH),
            properties=("a_fifo_count", "f_fifo_ptrs")))
    return out


def _room_fifo_depths(cfg: HwConfig) -> dict[str, int]:
    """The command and token queue depths of the live tasks' reduced configs (non-strict FIFOs, as
    ``vdla_top`` instantiates them): the depths whose ``fifo_pushes_*`` lemma the room argument uses."""
    from vdla_hw.formal.liveness import VARIANTS, live_queue_depths, liveness_program

    out: dict[str, int] = {}
    for kind in VARIANTS:
        for what, depth in zip(("cmd", "dep"), live_queue_depths(cfg, liveness_program(cfg, kind))):
            if depth not in out.values():
                out[f"{what}_{kind}"] = depth
    return out


def live_tasks(cfg: HwConfig | str, bounds: Mapping[str, int] | None = None, *, tight: bool = True) -> list[ProofTask]:
    """The whole-machine bounded liveness checks of ``cfg`` (``vdla_formal_live.sv``, docs/rtl.md).

    ``live_legal_l<L>``: the legal program of :func:`~vdla_hw.formal.liveness.liveness_program`
    (a LOAD of each memory type, GEMM, ALU, STORE, FINISH) ends at FINISH -- ``done`` high and
    STATUS.fault clear -- within N cycles of its start, whatever the DRAM does within latency L;
    ``live_fault_l<L>``: the same program with its LOAD INP outside the window ends in a fault
    within N'; ``live_finish_l<L>``: FINISH alone (the harness's quick check). N is ``bounds[kind]`` when
    given, else :func:`~vdla_hw.formal.liveness.live_bound`: the slowest run the solver found
    (``live_bounds.json``, :mod:`vdla_hw.formal.live_bound`) or, with ``tight`` off or nothing recorded,
    the a-priori sum in series. BMC to the depth that holds
    the driver's writes, N and the STATUS read, with ABC's ``bmc3`` by default. The submodules' own
    assertions are dropped (each is proven by its module's task), the tile SRAMs' read data made free
    (:data:`~vdla_hw.formal.liveness.DATA_SRAMS`: sound, and the claim then covers any tile data) and
    the design flattened, so the solver sees only what ``done`` and STATUS depend on.

    Each task elaborates ``vdla_top`` with queues sized to its program
    (:func:`~vdla_hw.formal.liveness.live_config`) and the micro-op SRAM holding only the entries the
    program loads (``vdla_formal_uop_sram.sv``, sound like the tile cut). ``live_room_<program>_l<L>``
    checks, on the same model to the same depth, that no reduced queue ever fills (``vdla_top``'s
    ``a_live_room_*``), which makes the reduced depths invisible: the run is the config's, cycle for cycle.
    """
    from vdla_hw.formal.liveness import (DATA_SRAMS, DRIVER_CYCLES, LIVE_LATENCY, STATUS_CYCLES, UOP_SRAM,
                                         UOP_SRAM_DECL, UOP_SRAM_READ, VARIANTS, live_bound, live_config, live_include, liveness_program,
                                         uop_entries)
    from vdla_hw.rtl_build import RTL_MODULES

    cfg = load_config(cfg)
    rtl = "".join(p.read_text() for p in RTL_DIR.glob("vdla_*.sv"))
    for name in DATA_SRAMS:
        # a renamed instance would leave the cut's selection empty, and the claim silently about zero tile data
        if not re.search(rf"\bvdla_sram\b[^;]*\b{name}\s*\(", rtl):
            raise ValueError(f"no vdla_sram instance named {name} in vdla_hw/rtl; update "
                             "vdla_hw/formal/liveness.py:DATA_SRAMS")
    sram = (RTL_DIR / "vdla_sram.sv").read_text()
    if not all(line in sram for line in UOP_SRAM_READ):
        raise ValueError("vdla_sram.sv's read path is no longer the one vdla_hw/formal/vdla_formal_uop_sram.sv "
                         f"reproduces ({' / '.join(UOP_SRAM_READ)}); update that file and liveness.py:UOP_SRAM_READ")
    if UOP_SRAM_DECL not in (RTL_DIR / "vdla_compute.sv").read_text():
        # the replacement reproduces exactly this instance; a changed one needs vdla_formal_uop_sram.sv changed too
        raise ValueError(f"vdla_compute.sv no longer declares `{UOP_SRAM_DECL}`; update "
                         "vdla_hw/formal/vdla_formal_uop_sram.sv and liveness.py:UOP_SRAM_DECL")
    cut = "cutpoint " + " ".join(f"*/{name}" for name in DATA_SRAMS)
    uop_sram = harness_path("vdla_formal_uop_sram.sv").read_text()
    out = []
    for kind in VARIANTS:
        prog = liveness_program(cfg, kind)
        bound = (bounds or {}).get(kind) or live_bound(cfg, kind, tight=tight)[0]
        small = live_config(cfg, prog)
        # The micro-op SRAM swapped for the one holding the program's entries only (after elaboration:
        # the cell is then of an elaborated module, which a re-read would not undo), every assertion but
        # the task's own removed (the submodules' are proven by their modules' tasks), the tile SRAMs
        # cut, the design flattened.
        # vdla_sram_range's assumption for its own proof (the walk never wraps its W-bit counter) is
        # dropped too: the live claim then needs it not (a walk starts at its base, < 2^16, and moves one
        # element a cycle at most, so no run of the BMC depth comes near the wrap; without the assumption the
        # solver sees every such run anyway).
        swap = ("read_verilog -sv -formal vdla_formal_uop_sram.sv",
                f"chtype -set vdla_formal_uop_sram vdla_compute/{UOP_SRAM}", "hierarchy -top vdla_formal_live", "proc",
                "chformal -assume -remove *vdla_sram_range*/*")
        tail = (cut, "flatten", "opt_clean", "opt -fast", "opt_clean")
        common = dict(
            top="vdla_formal_live", modules=RTL_MODULES, harness=("vdla_formal_live.sv",), mode="bmc",
            depth=DRIVER_CYCLES + bound + STATUS_CYCLES, solver="abc-bmc3",
            generated=(("vdla_formal_live_prog.svh", live_include(cfg, prog, LIVE_LATENCY, bound)),
                       ("vdla_formal_uop_sram.sv", uop_sram),
                       ("vdla_formal_uop_sram_keep.svh", f"localparam int KEEP = {uop_entries(prog)};\n")),
            config=(("name", small.name), ("cmd_queue_depth", small.cmd_queue_depth),
                    ("dep_queue_depth", small.dep_queue_depth)),
            engine_opts=("--nopresat",),
            # `bmc3 -s`: the Satoko SAT solver. On the fault program's task (tiny) it settled the frames at the bound
            # that ABC's default solver left unsolved: at N' = 66 the default solver had frame 77 open after ~11
            # min of CPU where Satoko refuted it in 273 s; at N' = 67 / 68 it refuted the task (frames 78 / 79, 612 s /
            # 359 s of ABC) and at N' = 80 (depth 94) it proved it in 1,024 s (docs/rtl.md, "The tight bound").
            # (Glucose with every learned clause kept, `-g -P 0`, was slower than the default: 454 s against 245 s
            # for frames 0-107 of the derived-bound task.)
            abc_opts=LIVE_ABC_OPTS)
        out.append(ProofTask(
            name=f"live_{kind}_l{LIVE_LATENCY}", properties=LIVE_PROPS,
            script=(*swap, "chformal -assert -remove * vdla_formal_live %d", *tail), **common))
        # The reduced queues never fill (what makes them invisible: docs/rtl.md), checked on the same
        # model to the same depth in a run of its own -- in the liveness run, these properties, which
        # can fail in any frame, made every frame several times dearer.
        out.append(ProofTask(
            name=f"live_room_{kind}_l{LIVE_LATENCY}", properties=LIVE_ROOM_PROPS,
            extra_defines=("VDLA_FORMAL_LIVE_ROOM",),
            script=(*swap, "chformal -assert -remove * vdla_top/a_live_room_* %d", *tail), **common))
    return out


def proof_tasks(cfg: HwConfig | str, *, whole_machine: bool = False, tight: bool = True,
                live_n: int | None = None) -> list[ProofTask]:
    """Every proof task of ``cfg``, cheapest first; with ``whole_machine`` also :func:`live_tasks`
    (long BMC runs of all of ``vdla_top``: they run when named, not in a plain ``vdla hw prove``),
    every one of them at ``live_n`` cycles when given, else at :func:`~vdla_hw.formal.liveness.live_bound`'s N."""
    cfg = load_config(cfg)
    tasks = _fifo_tasks(cfg)
    for unit, prev, nxt in (("load", 0, 1), ("compute", 1, 1), ("store", 1, 0)):
        tasks.append(ProofTask(
            name=f"gate_{unit}", top="vdla_dep_gate", modules=("vdla_dep_gate",),
            params=(("HAS_PREV", prev), ("HAS_NEXT", nxt)), define="VDLA_FORMAL_TOP_GATE", depth=6,
            properties=GATE_PROPS))
    # The compositional room lemmas (docs/rtl.md, "The reduced queues, compositionally"): fetch dispatches
    # at most insn_count instructions after a start; a gate pushes a token only for an instruction it took
    # with that push flag, at most once. k-induction; each closes in seconds.
    for what, depth in sorted(_room_fifo_depths(cfg).items(), key=lambda d: (d[1], d[0])):
        tasks.append(ProofTask(
            name=f"fifo_pushes_{what}_d{depth}", top="vdla_formal_fifo_count", modules=("vdla_fifo",),
            params=(("DEPTH", depth),), define="VDLA_FORMAL_TOP_FIFO", harness=("vdla_formal_fifo_count.sv",),
            depth=min(depth + 4, FIFO_MAX_DEPTH), properties=("f_fifo_pushes", "a_fifo_count", "f_fifo_ptrs")))
    tasks.append(ProofTask(
        name="fetch_dispatch", top="vdla_fetch", modules=("vdla_fifo", "vdla_sum_le", "vdla_fetch"), define="VDLA_FORMAL_TOP_FETCH",
        depth=FETCH_DISPATCH_DEPTH, properties=FETCH_DISPATCH_PROPS + FIFO_PROPS))
    # The instruction DMA hands out only elements its commands asked for (fetch_dispatch's assumption):
    # k-induction on vdla_dma_rd at the instruction width, its slave contract assumed as in dma_rd_*.
    tasks.append(ProofTask(
        name=f"dma_rd_elems_insn_{isa_mod.INSN_BITS}b", top="vdla_dma_rd", modules=("vdla_fifo", "vdla_dma_rd"),
        params=(("ELEM_BITS", isa_mod.INSN_BITS),), define="VDLA_FORMAL_TOP_DMA_RD",
        extra_defines=("VDLA_FORMAL_DMA_RD_ELEMS",), depth=DMA_RD_ELEMS_DEPTH, properties=DMA_RD_ELEMS_PROPS))
    for unit, prev, nxt in (("load", 0, 1), ("compute", 1, 1), ("store", 1, 0)):
        tasks.append(ProofTask(
            name=f"gate_tokens_{unit}", top="vdla_dep_gate", modules=("vdla_dep_gate",),
            params=(("HAS_PREV", prev), ("HAS_NEXT", nxt)), define="VDLA_FORMAL_TOP_GATE",
            extra_defines=("VDLA_FORMAL_GATE_TOKENS",), depth=GATE_TOKENS_DEPTH, properties=GATE_TOKEN_PROPS + GATE_PROPS))
    tasks.append(ProofTask(
        name="tokens", top="vdla_formal_tokens", modules=("vdla_fifo", "vdla_dep_gate"),
        harness=("vdla_formal_tokens.sv",), mode="bmc", depth=TOKENS_BMC_DEPTH,
        properties=TOKEN_PROPS + GATE_PROPS + GATE_CONTRACT + FIFO_PROPS))
    widths = dict(insn=isa_mod.INSN_BITS, inp=8 * cfg.inp_elem_bytes, wgt=8 * cfg.wgt_elem_bytes, uop=8 * cfg.uop_elem_bytes,
                  acc=8 * cfg.acc_elem_bytes)
    seen: set[int] = set()
    for client, bits in widths.items():
        if bits in seen:
            continue
        seen.add(bits)
        tasks.append(ProofTask(
            name=f"dma_rd_{client}_{bits}b", top="vdla_dma_rd", modules=("vdla_fifo", "vdla_dma_rd"),
            params=(("ELEM_BITS", bits),), define="VDLA_FORMAL_TOP_DMA_RD", mode="bmc", depth=DMA_BMC_DEPTH,
            properties=DMA_RD_PROPS + (FIFO_PROPS if bits < cfg.bus_width else ())))
    # A tile loader and its range check at each SRAM depth of the config (the element width only
    # sizes the data path): the SRAM address wraps only where the range check reports a fault.
    # Depth 5: reset, a start at a base on or past the end and the first steps, so a check that
    # misses the first element past the end fails from reset.
    loaders: dict[int, tuple[str, int]] = {}
    for kind in ("inp", "wgt", "acc", "uop", "out"):
        loaders.setdefault(getattr(cfg, f"{kind}_buff_depth"), (kind, 8 * getattr(cfg, f"{kind}_elem_bytes")))
    for depth, (kind, bits) in sorted(loaders.items()):
        tasks.append(ProofTask(
            name=f"sram_range_d{depth}", top="vdla_sram_range", modules=("vdla_sram_range",),
            params=(("DEPTH", depth), ("BASE_W", cfg.isa.sram_idx_w),
                    ("W", 32)), define="VDLA_FORMAL_TOP_RANGE", depth=5, properties=RANGE_PROPS))
        if kind != "out":
            tasks.append(ProofTask(
                name=f"tile_{kind}_d{depth}", top="vdla_tile_loader", modules=("vdla_sram_range", "vdla_sum_le", "vdla_tile_loader"),
                params=(("ELEM_BITS", bits), ("DEPTH", depth)), define="VDLA_FORMAL_TOP_TILE", depth=5,
                properties=TILE_PROPS + RANGE_PROPS))
            if depth == min(loaders):
                # Legal blocks only (the static checks' rule as a contract): no write past the buffer,
                # a_tile_sram_range as stated. BMC: the induction step of its invariants (1-inductive
                # by construction, but one of them is the product rows left x columns) did not finish
                # in 5 minutes with z3 or boolector at depth 2, nor in 15 (z3) at depth 5; see docs/rtl.md.
                # One SRAM depth only: the walk does not depend on it, and the task takes minutes.
                tasks.append(ProofTask(
                    name=f"tile_legal_{kind}_d{depth}", top="vdla_tile_loader",
                    modules=("vdla_sram_range", "vdla_sum_le", "vdla_tile_loader"), params=(("ELEM_BITS", bits), ("DEPTH", depth)),
                    define="VDLA_FORMAL_TOP_TILE", extra_defines=("VDLA_FORMAL_TILE_LEGAL",), mode="bmc",
                    depth=TILE_LEGAL_BMC_DEPTH, properties=TILE_LEGAL_PROPS + TILE_PROPS + RANGE_PROPS,
                    solver="boolector"))
    # The control registers: a run starts, ends on FINISH or a fault, and keeps its window.
    tasks.append(ProofTask(name="ctrl", top="vdla_ctrl", modules=("vdla_ctrl",), define="VDLA_FORMAL_TOP_CTRL",
                           depth=3, properties=CTRL_PROPS))
    # The micro-op loop of GEMM (II 1) and of the ALU (its II and copy II): the range and termination.
    # The operand offsets feed no property; 8-bit offsets keep the problem small. Depth 2 * II + 3:
    # reset, start and two iterations of a one-micro-op range, so a loop that runs past its range
    # fails the base case with a counterexample from reset.
    loops = {("gemm", 1, 1), ("alu", cfg.timing.alu_ii, cfg.timing.alu_copy_ii)}
    for unit, ii, ii_fast in sorted(loops):
        tasks.append(ProofTask(
            name=f"uop_loop_{unit}_ii{ii}", top="vdla_uop_loop", modules=("vdla_uop_loop",),
            params=(("II", ii), ("II_FAST", ii_fast), ("DST_W", 8), ("SRC_W", 8), ("WGT_W", 8)),
            define="VDLA_FORMAL_TOP_UOP_LOOP", depth=2 * ii + 3, properties=UOP_LOOP_PROPS))
    # The read arbiter: k-induction for its grants, AR handshake, burst count and fairness; BMC for
    # the routing of read data (the route FIFO's contents are not visible to an assertion). Depth
    # N + 3: reset, a request starting to wait, N grants to others -- so an unfair arbiter fails
    # the base case with a counterexample from reset instead of only the induction step.
    # With the R slice (timing.axi_r_slice = 1) the induction step does not close: whether the beat
    # held in the slice's skid register is a burst's last is state of vdla_skid that the arbiter's
    # assertions cannot name (yosys resolves no hierarchical reference in them), and a stalled client
    # can hold it there longer than any depth. Then the task is BMC at the same depth.
    n_rd = read_clients()
    tasks.append(ProofTask(
        name=f"rd_arb_n{n_rd}", top="vdla_axi_rd_arb", modules=("vdla_fifo", "vdla_skid", "vdla_axi_rd_arb"), params=(("N", n_rd),),
        define="VDLA_FORMAL_TOP_RD_ARB", depth=n_rd + 3, mode="bmc" if cfg.timing.axi_r_slice else "prove",
        properties=ARB_PROPS + ("a_fifo_overflow", "a_fifo_underflow")))
    tasks.append(ProofTask(
        name=f"rd_arb_route_n{n_rd}", top="vdla_axi_rd_arb", modules=("vdla_fifo", "vdla_skid", "vdla_axi_rd_arb"),
        params=(("N", n_rd),), define="VDLA_FORMAL_TOP_RD_ARB", extra_defines=("VDLA_FORMAL_ARB_ROUTE",), mode="bmc",
        depth=ARB_ROUTE_BMC_DEPTH, properties=ARB_ROUTE_PROPS + ARB_PROPS, solver="boolector"))
    # The address window (base/limit registers) in front of a read engine: every AR burst stays inside.
    tasks.append(ProofTask(
        name=f"window_rd_insn_{isa_mod.INSN_BITS}b", top="vdla_formal_window",
        modules=("vdla_fifo", "vdla_dma_rd", "vdla_addr_window"), params=(("ELEM_BITS", isa_mod.INSN_BITS),),
        harness=("vdla_formal_window.sv",), mode="bmc", depth=WINDOW_BMC_DEPTH,
        properties=("a_axi_in_window", "a_dma_rd_cmd", "a_dma_rd_cmd_stable", "a_dma_rd_r_owed") + DMA_RD_PROPS))
    out_bits = 8 * cfg.out_elem_bytes
    # The address window in front of the write engine (the store's path): every AW burst and W beat inside.
    tasks.append(ProofTask(
        name=f"window_wr_out_{out_bits}b", top="vdla_formal_window_wr",
        modules=("vdla_fifo", "vdla_dma_wr", "vdla_addr_window"), params=(("ELEM_BITS", out_bits),),
        harness=("vdla_formal_window_wr.sv",), mode="bmc", depth=WINDOW_WR_BMC_DEPTH,
        properties=("a_axi_aw_in_window", "a_axi_w_in_window", "a_dma_wr_cmd", "a_dma_wr_cmd_stable",
                    "a_dma_wr_el_stable", "a_dma_wr_b_owed") + DMA_WR_PROPS, solver="boolector"))
    tasks.append(ProofTask(
        name=f"dma_wr_out_{out_bits}b", top="vdla_dma_wr", modules=("vdla_fifo", "vdla_dma_wr"),
        params=(("ELEM_BITS", out_bits),), define="VDLA_FORMAL_TOP_DMA_WR", mode="bmc", depth=DMA_BMC_DEPTH,
        properties=DMA_WR_PROPS + FIFO_PROPS))
    if whole_machine:
        from vdla_hw.formal.liveness import VARIANTS

        tasks.extend(live_tasks(cfg, None if live_n is None else dict.fromkeys(VARIANTS, live_n),
                                tight=tight))
    return tasks


def harness_path(name: str) -> Path:
    """Path of a harness file of ``vdla_hw/formal``."""
    return HARNESS_DIR / name
