"""The whole-machine bounded liveness check (issue 30): a legal program reaches FINISH in N cycles.

The harness ``vdla_formal_live.sv`` holds all of ``vdla_top`` (control slave, fetch, the
three command queues, the four token queues, the gates, load / compute / store, both DMA
directions behind the address window, the read arbiter and the fault unit). It drives the
AXI-lite slave as a driver does (window, program address and count, start), answers the AXI
master as a DRAM whose every handshake comes within ``latency`` cycles (the solver picks
when, and the data of every byte outside the program and its micro-ops), and asserts that
``done`` rises within ``bound`` cycles of the start, then reads STATUS and asserts its fault
bit: clear for the legal program, set for the one with a LOAD outside the window.

This module builds the program (one instruction of each kind, tokens balanced across all four
queues, extents of one element; or one of the per-kind programs, :data:`KINDS`), the DRAM bytes the harness serves as constants, and ``bound``
from the RTL's latencies (:func:`liveness_bound`); the include file the harness reads carries
them. Whether the program is legal is fsim's static checks' call: the tests run it there.

It also sizes what the solver sees to the program: the command and token queues
(:func:`live_config`: one more entry than a queue ever receives, so it never fills) and the
micro-op SRAM's kept entries (:func:`uop_entries`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from vdla_hw.config import HwConfig, load_config
from vdla_hw.formal.live_record import program_entry, proven_entry
from vdla_hw.isa import (DEP_QUEUE_NAMES, FLAG_QUEUES, INSN_BYTES, AluInsn, AluOp, DepFlags, FinishInsn, GemmInsn, Insn,
                         Isa, MemInsn, MemType, Module, Opcode, Uop, module_of)

# Byte addresses of the regions of the liveness program's DRAM (all inside the window).
WINDOW_BASE = 0x0
WINDOW_LIMIT = 0x400
INSN_ADDR = 0x100
REGION = {MemType.UOP: 0x200, MemType.INP: 0x240, MemType.WGT: 0x280, MemType.ACC: 0x300, MemType.OUT: 0x380}
# The fault variant's LOAD INP reads here: past the window's limit.
FAULT_ADDR = 0x800


@dataclass(frozen=True)
class LivenessProgram:
    """A program for the whole-machine harness and the DRAM it is served from."""

    insns: tuple[Insn, ...]
    uops: tuple[Uop, ...]
    dram: np.ndarray
    """Bytes ``[0, WINDOW_LIMIT)``: the program at ``INSN_ADDR``, the micro-ops at the UOP region, zeros elsewhere."""
    window: tuple[int, int]
    faulting: bool
    """True for the variant whose LOAD INP lies outside the window (it must end in a fault)."""
    const_ranges: tuple[tuple[int, int], ...]
    """Byte ranges ``[lo, hi)`` the harness serves as the constants of ``dram``; the DRAM model's data is free elsewhere."""
    last: int
    """Index of the last instruction that runs: FINISH, or the faulting LOAD INP (the fault ends the run there)."""


def _elem_bytes(cfg: HwConfig, mem: MemType) -> int:
    return {MemType.UOP: cfg.uop_elem_bytes, MemType.INP: cfg.inp_elem_bytes, MemType.WGT: cfg.wgt_elem_bytes,
            MemType.ACC: cfg.acc_elem_bytes, MemType.OUT: cfg.out_elem_bytes}[mem]


# The per-kind programs (issue 30): one live program per instruction kind, each the fewest
# instructions that make that kind legal and end at FINISH. Across the set every token queue is
# crossed: load_wgt's c2l (LOAD UOP -> LOAD WGT) and l2c (LOAD WGT -> FINISH), load_inp's l2c,
# store's c2s (LOAD ACC -> STORE) and s2c (STORE -> FINISH).
KINDS = ("load_uop", "load_inp", "load_wgt", "load_acc", "gemm", "alu", "store")
VARIANTS = ("legal", "fault", "finish", *KINDS)


def liveness_program(cfg: HwConfig | str, variant: str = "legal") -> LivenessProgram:
    """``legal``: LOAD UOP, LOAD INP, LOAD WGT, LOAD ACC, GEMM, ALU, STORE, FINISH; one element each.

    Tokens cross every queue once: LOAD UOP (compute) pushes c2l for LOAD INP (load), LOAD WGT
    pushes l2c for GEMM, ALU pushes c2s for STORE, STORE pushes s2c for FINISH. ``fault``: the
    same with the LOAD INP at ``FAULT_ADDR``, past the window: the machine must fault.
    ``finish``: FINISH alone, the shortest legal program (a quick check of the harness and of
    planted bugs).

    The per-kind programs (:data:`KINDS`), one element each, tokens balanced:

    - ``load_uop``: LOAD UOP, FINISH;
    - ``load_inp``: LOAD INP (push l2c), FINISH (pop l2c);
    - ``load_wgt``: LOAD UOP (push c2l), LOAD WGT (pop c2l, push l2c), FINISH (pop l2c);
    - ``load_acc``: LOAD ACC, FINISH;
    - ``gemm``: LOAD UOP, GEMM reset (its one micro-op: the loop reads no tile, so no other LOAD is needed), FINISH;
    - ``alu``: LOAD UOP, ALU (MOV immediate: reads no accumulator, so nothing else need be loaded), FINISH;
    - ``store``: LOAD ACC (push c2s), STORE (pop c2s, push s2c), FINISH (pop s2c).
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown liveness program {variant!r}; choose one of {', '.join(VARIANTS)}")
    cfg = load_config(cfg)
    faulting = variant == "fault"

    def load(mem: MemType, deps: DepFlags, addr: int | None = None) -> MemInsn:
        byte = REGION[mem] if addr is None else addr
        return MemInsn(Opcode.LOAD, mem, sram_base=0, dram_base=byte // _elem_bytes(cfg, mem), y_size=1, x_size=1,
                       x_stride=1, deps=deps)

    gemm = GemmInsn(reset=False, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, dst_factor_out=0, dst_factor_in=0,
                    src_factor_out=0, src_factor_in=0, wgt_factor_out=0, wgt_factor_in=0, deps=DepFlags(pop_prev=True))
    alu = AluInsn(alu_op=AluOp.ADD, use_imm=True, imm=1, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1,
                  dst_factor_out=0, dst_factor_in=0, src_factor_out=0, src_factor_in=0, deps=DepFlags(push_next=True))
    # GEMM with reset: the micro-op loop of GEMM that reads no INP/WGT/ACC (a GEMM that did would need
    # a LOAD of each before it to be legal: the 8-instruction program).
    reset = dataclasses.replace(gemm, reset=True, deps=DepFlags())
    store = MemInsn(Opcode.STORE, MemType.OUT, sram_base=0, dram_base=REGION[MemType.OUT] // cfg.out_elem_bytes,
                    y_size=1, x_size=1, x_stride=1, deps=DepFlags(pop_prev=True, push_prev=True))
    insns: tuple[Insn, ...] = (
        load(MemType.UOP, DepFlags(push_prev=True)),
        load(MemType.INP, DepFlags(pop_next=True), FAULT_ADDR if faulting else None),
        load(MemType.WGT, DepFlags(push_next=True)),
        load(MemType.ACC, DepFlags()),
        gemm,
        alu,
        store,
        FinishInsn(deps=DepFlags(pop_next=True)),
    )
    per_kind: dict[str, tuple[Insn, ...]] = {
        "finish": (FinishInsn(),),
        "load_uop": (load(MemType.UOP, DepFlags()), FinishInsn()),
        "load_inp": (load(MemType.INP, DepFlags(push_next=True)), FinishInsn(deps=DepFlags(pop_prev=True))),
        "load_wgt": (load(MemType.UOP, DepFlags(push_prev=True)), load(MemType.WGT, DepFlags(pop_next=True, push_next=True)),
                     FinishInsn(deps=DepFlags(pop_prev=True))),
        "load_acc": (load(MemType.ACC, DepFlags()), FinishInsn()),
        "gemm": (load(MemType.UOP, DepFlags()), reset, FinishInsn()),
        # MOV immediate: the one ALU op that reads no accumulator (fsim refuses reading an unwritten one),
        # so the micro-op load is all it needs; an ADD would need its ACC element written first
        "alu": (load(MemType.UOP, DepFlags()), dataclasses.replace(alu, alu_op=AluOp.MOV, deps=DepFlags()), FinishInsn()),
        "store": (load(MemType.ACC, DepFlags(push_next=True)), store, FinishInsn(deps=DepFlags(pop_next=True))),
    }
    insns = per_kind.get(variant, insns)
    uops = (Uop(dst=0, src=0, wgt=0),)
    isa = Isa(cfg)
    dram = np.zeros(WINDOW_LIMIT, dtype=np.uint8)
    code = isa.encode_program(insns)
    dram[INSN_ADDR:INSN_ADDR + code.size] = code
    uop_bytes = isa.encode_uops(uops).view(np.uint8)
    uop_at = REGION[MemType.UOP]
    dram[uop_at:uop_at + uop_bytes.size] = uop_bytes
    ranges = ((INSN_ADDR, INSN_ADDR + len(insns) * INSN_BYTES), (uop_at, uop_at + uop_bytes.size))
    return LivenessProgram(insns, uops, dram, (WINDOW_BASE, WINDOW_LIMIT), faulting, ranges,
                           1 if faulting else len(insns) - 1)


def live_include(cfg: HwConfig | str, prog: LivenessProgram, latency: int, bound: int, *, free_data: bool = False) -> str:
    """The ``vdla_formal_live_prog.svh`` the harness includes: the program, its DRAM, LAT and BOUND.

    The DRAM serves the program's bytes at its constant ranges; elsewhere the solver's free data
    with ``free_data``, else the image's zeros (the tasks' choice: the data of the tiles feeds no
    control decision of this program -- its micro-ops are constant -- and free data made each BMC
    step several times slower)."""
    cfg = load_config(cfg)
    if latency < 1:
        raise ValueError(f"DRAM latency bound {latency} must be at least 1 cycle")
    beat = cfg.bus_width // 8
    lines = [
        "// Generated by vdla_hw/formal/liveness.py (live_include); do not edit.",
        f"localparam int PROG_LEN = {len(prog.insns)};",
        f"localparam int INSN_ADDR = 32'h{INSN_ADDR:x};",
        f"localparam int WIN_BASE = 32'h{prog.window[0]:x};",
        f"localparam int WIN_LIMIT = 32'h{prog.window[1]:x};",
        f"localparam int LAT = {latency};",
        f"localparam int BOUND = {bound};",
        f"localparam logic EXPECT_FAULT = 1'b{int(prog.faulting)};",
        "// The DRAM's bus beat at byte address a: the program's bytes where they are constant, else `free`.",
        "function automatic logic [BUS_WIDTH-1:0] dram_beat(input logic [AXI_ADDR_WIDTH-1:0] a,",
        "                                                   input logic [BUS_WIDTH-1:0] free);",
        "  case (a)",
    ]
    beats = sorted({b for lo, hi in prog.const_ranges for b in range(lo // beat * beat, hi, beat)})
    for b in beats:
        word = int.from_bytes(prog.dram[b:b + beat].tobytes(), "little")
        lines.append(f"    AXI_ADDR_WIDTH'(32'h{b:x}): dram_beat = BUS_WIDTH'({cfg.bus_width}'h{word:x});")
    lines += [f"    default: dram_beat = {'free' if free_data else chr(39) + '0'};", "  endcase", "endfunction", ""]
    return "\n".join(lines)


# The tile SRAMs (instance names in vdla_top, vdla_compute, vdla_store) whose read data the
# liveness tasks make free: each instance is cut out and its `rd_data` becomes a new free input
# every cycle (yosys `cutpoint`). Sound for these safety properties: every run of the real
# machine is one of the runs of the cut one (the real read data is one choice of the free
# data), so a bound that holds for all of them holds for it. No control decision reads tile
# data -- the micro-op SRAM, which steers GEMM and the ALU, is kept -- so the cut adds no
# spurious failure; the proof then covers every tile content, not only the zeros. (It does not
# shrink the model: yosys's opt_clean already drops the datapath no assertion observes.)
DATA_SRAMS = ("u_inp_sram", "u_wgt_sram", "u_acc_sram", "u_out_sram")

# The micro-op SRAM (vdla_compute's instance) the liveness tasks replace by vdla_formal_uop_sram.sv,
# which holds only the entries the program loads (:func:`uop_entries`) and answers any other read
# with free data. That is sound for the same reason as the tile cut above (the real SRAM's answer is
# one choice of the free one), and keeps the control it steers (GEMM's and the ALU's micro-ops).
UOP_SRAM = "u_uop_sram"
# vdla_compute's instance as the replacement reproduces it (its widths, depth and output register):
# the tasks refuse to run when the RTL declares it otherwise.
UOP_SRAM_DECL = "vdla_sram #(.WIDTH(UOP_BITS), .DEPTH(UOP_BUFF_DEPTH), .OUT_REG(1'b1), .NO_COLLISION(1'b1)) u_uop_sram ("
# vdla_sram's read path (a registered read, then OUT_REG's second register) as the replacement copies it.
UOP_SRAM_READ = ("if (rd_en) q <= mem[rd_addr];", "always_ff @(posedge clk) rd_data <= rd_now;")


def uop_entries(prog: LivenessProgram) -> int:
    """Micro-op SRAM entries ``[0, n)`` that hold every micro-op the program's LOAD UOPs write (at least 1)."""
    ends = [insn.sram_base + (insn.y_size + insn.y_pad0 + insn.y_pad1) * (insn.x_size + insn.x_pad0 + insn.x_pad1)
            for insn in prog.insns if isinstance(insn, MemInsn) and insn.opcode == Opcode.LOAD
            and insn.mem_type == MemType.UOP]
    return max([1, *ends])


# The DRAM latency bound of the liveness tasks: every AXI handshake within LIVE_LATENCY cycles.
LIVE_LATENCY = 2
# Cycles from reset to the CONTROL write that starts the run: one reset cycle, then the four
# register writes before it (the control slave takes a write every other cycle).
DRIVER_CYCLES = 11
# Cycles after `done` for the STATUS read: the request, the response, the capture.
STATUS_CYCLES = 3


def _bursts(addr: int, nbytes: int, burst_bytes: int) -> int:
    """AXI bursts of a DMA command of ``nbytes`` at ``addr`` (split at each DRAM block boundary)."""
    return (addr + nbytes - 1) // burst_bytes - addr // burst_bytes + 1


def _beats(addr: int, nbytes: int, bus_bytes: int) -> int:
    return (addr + nbytes - 1) // bus_bytes - addr // bus_bytes + 1


def dram_handshakes(cfg: HwConfig | str, prog: LivenessProgram) -> int:
    """AXI handshakes the DRAM answers in a run of ``prog`` (the DRAM-side term of :func:`liveness_bound`).

    A read burst is its AR and its R beats; a write burst its AW, its W beats and its B. The
    fetch reads the whole program in chunks of one DRAM block; the instructions count up to
    ``prog.last`` (a faulting command never reaches the bus: counting it over-estimates).
    """
    cfg = load_config(cfg)
    bus, block = cfg.bus_width // 8, cfg.timing.dram_burst_bytes
    total = 0
    chunk = max(1, block // INSN_BYTES)
    for first in range(0, len(prog.insns), chunk):
        addr, nbytes = INSN_ADDR + first * INSN_BYTES, min(chunk, len(prog.insns) - first) * INSN_BYTES
        total += _bursts(addr, nbytes, block) + _beats(addr, nbytes, bus)
    for insn in prog.insns[:prog.last + 1]:
        if isinstance(insn, MemInsn):
            size = _elem_bytes(cfg, insn.mem_type)
            rows = [(insn.dram_base + y * insn.x_stride) * size for y in range(insn.y_size)]
            bursts = sum(_bursts(a, insn.x_size * size, block) for a in rows)
            total += bursts + sum(_beats(a, insn.x_size * size, bus) for a in rows)
            if insn.opcode == Opcode.STORE:
                total += bursts  # one B per write burst
    return total


def machine_cycles(cfg: HwConfig | str, prog: LivenessProgram) -> int:
    """The machine's own cycles for ``prog`` with a DRAM that answers at once, summed in series.

    From the RTL's measured latencies (``HwConfig.timing``, docs/rtl.md): start (clear, then start:
    2) and ``done`` (1); the fetch's DMA start, R slice and two queues per chunk and one dispatch
    cycle per instruction; per instruction the command queue (``queue_latency``), its gate (``insn_overhead``) and a
    token hop (``queue_latency``) for each token it pops; a LOAD/STORE's ``dma_start_cycles``, its
    element queue (``queue_latency``) and one SRAM write per element; GEMM's and the ALU's pipeline
    fill plus one iteration per micro-op at their initiation interval; STORE's requantization
    stages and one element per cycle. Nothing overlaps in this sum, so it over-estimates a run
    in which fetch, load, compute and store work side by side. The instructions count up to
    ``prog.last``; a run that ends in a fault adds 2 cycles (the fault unit's, the control's).
    """
    cfg = load_config(cfg)
    t = cfg.timing
    # start (clear, then start), `done` registered after FINISH, and a fault's two cycles
    total = 2 + 1 + (2 if prog.faulting else 0)
    # fetch: per chunk its DMA start, the R slice, the element queue and the instruction buffer;
    # per instruction one cycle of dispatch
    chunk = max(1, t.dram_burst_bytes // INSN_BYTES)
    chunks = -(-len(prog.insns) // chunk)
    total += chunks * (t.dma_start_cycles + t.axi_r_slice + 2 * t.queue_latency) + len(prog.insns)
    for insn in prog.insns[:prog.last + 1]:
        deps = insn.deps
        total += t.queue_latency + t.insn_overhead + t.queue_latency * (int(deps.pop_prev) + int(deps.pop_next))
        if isinstance(insn, MemInsn):
            elems = insn.y_size * insn.x_size
            total += t.dma_start_cycles + t.queue_latency + elems * t.sram_write_cycles
            if insn.opcode == Opcode.STORE:
                total += t.store_pipeline_depth + elems
        elif isinstance(insn, GemmInsn):
            total += t.gemm_pipeline_depth + insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_bgn)
        elif isinstance(insn, AluInsn):
            total += t.alu_pipeline_depth + t.alu_ii * insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_bgn)
    return total


def live_bound(cfg: HwConfig | str, kind: str, *, tight: bool = True) -> tuple[int, str]:
    """(N, where it comes from) of ``cfg``'s live task of program ``kind``, from the record
    (:mod:`~vdla_hw.formal.live_record`, ``live_bounds.json``) unless ``tight`` is off:

    ``"proven"``: the N at which the live task PASSED on this very RTL and harness (the record's digest is
    the shipped RTL's), so the task reproduces that pass; ``"recorded"``: else the candidate -- the largest
    bound the solver refuted (a run busy that long) plus one, or an N proven on another RTL (a changed RTL,
    e.g. after a merge: the re-run proves it again or refutes it, and ``--record`` keeps which), whichever is
    larger; ``"derived"``: :func:`liveness_bound`, the sum in series, when nothing is recorded or ``tight`` is off.
    A candidate above the derived N would contradict the derivation; the derived one is kept then
    (and the live task's counterexample at it shows which latency the sum misses)."""
    cfg = load_config(cfg)
    derived = liveness_bound(cfg, liveness_program(cfg, kind), LIVE_LATENCY)
    if not tight:
        return derived, "derived"
    proof = proven_entry(cfg.name, kind)
    if proof is not None:
        return int(proof["bound"]), "proven"
    entry = program_entry(cfg.name, kind) or {}
    stale = entry.get("proven") if isinstance(entry.get("proven"), dict) else {}
    found = [int(n) for n in (entry.get("bound"), stale.get("bound")) if n is not None and int(n) <= derived]
    if found:
        return max(found), "recorded"
    return derived, "derived"


def liveness_bound(cfg: HwConfig | str, prog: LivenessProgram, latency: int) -> int:
    """N: cycles from the start to ``done`` that no run of ``prog`` may exceed when every DRAM handshake
    comes within ``latency`` cycles: the machine's own cycles in series plus every handshake's wait."""
    return machine_cycles(cfg, prog) + dram_handshakes(cfg, prog) * latency


# ---- the queues sized to the program (a formal-only config of the live tasks) --------------------

def queue_entries(prog: LivenessProgram) -> tuple[dict[Module, int], dict[str, int]]:
    """Entries each command queue and each token queue ever receives in a run of ``prog``.

    Every instruction of the program counts (fetch may dispatch past a faulting one before the
    halt), and every token an instruction pushes: a queue never holds more than it ever receives,
    so these are bounds on the queues' occupancy in any run, whatever the timing.
    """
    cmd = {m: 0 for m in Module}
    tokens = {q: 0 for q in DEP_QUEUE_NAMES}
    for insn in prog.insns:
        module = module_of(insn)
        cmd[module] += 1
        for flag in ("push_prev", "push_next"):
            if getattr(insn.deps, flag):
                tokens[FLAG_QUEUES[module][flag]] += 1
    return cmd, tokens


def _room_depth(entries: int) -> int:
    """The smallest power of two (the config's rule for queue depths) above ``entries``: such a
    queue never fills, so its ``in_ready`` never falls."""
    return 1 << entries.bit_length()


def live_queue_depths(cfg: HwConfig | str, prog: LivenessProgram) -> tuple[int, int]:
    """(cmd_queue_depth, dep_queue_depth) for the live harness of ``prog``: one more than the most
    entries any command (token) queue receives, rounded up to a power of two, never above ``cfg``'s own.

    A queue of that depth never fills in a run of ``prog``, so no push is refused and no path of
    the machine that depends on a full queue is taken -- as at ``cfg``'s depths, which are at least
    as large: the run is cycle for cycle the same (``vdla_top`` asserts the "never fills" part in
    the live tasks, ``a_live_room_cmd``/``a_live_room_dep``; docs/rtl.md). Where ``cfg``'s own
    queue is not deeper than that, it is kept (then it too never fills, and nothing is reduced).
    """
    cfg = load_config(cfg)
    cmd, tokens = queue_entries(prog)
    return (min(cfg.cmd_queue_depth, _room_depth(max(cmd.values()))),
            min(cfg.dep_queue_depth, _room_depth(max(tokens.values()))))


def live_config(cfg: HwConfig | str, prog: LivenessProgram) -> HwConfig:
    """``cfg`` with the queue depths of :func:`live_queue_depths`: the config the live task of
    ``prog`` elaborates ``vdla_top`` with (named ``<cfg>_live_c<cmd>_d<dep>``; ``cfg`` itself when
    nothing is reduced)."""
    cfg = load_config(cfg)
    cmd, dep = live_queue_depths(cfg, prog)
    if (cmd, dep) == (cfg.cmd_queue_depth, cfg.dep_queue_depth):
        return cfg
    return cfg.replace(name=f"{cfg.name}_live_c{cmd}_d{dep}", cmd_queue_depth=cmd, dep_queue_depth=dep)
