"""Mutation testing of the fuzzer: does ``vdla fuzz`` catch small, realistic RTL bugs?

Each :class:`Mutant` is one textual change to one file of a copy of ``vdla_hw/rtl``
(an off-by-one in a padding counter, a swapped or dropped token flag, a dropped
write enable, a wrong burst length, ...).  For each mutant the script builds the
harness from the copy (``harness_library(rtl_dir=...)``), fuzzes it against fsim
with fixed seeds until the first failing program, and reports which mutants were
killed and after how many programs.  The unmutated RTL runs first, with the same
seeds, to show the fuzzer raises no false alarm.

    python -m vdla.fuzz.mutants --config tiny --count 1000
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from vdla_hw.rtl_build import RTL_DIR

from vdla.fuzz.campaign import Settings, run_campaign


@dataclass(frozen=True)
class Mutant:
    """Replace ``old`` (which must occur exactly once) by ``new`` in RTL file ``file``."""

    name: str
    file: str
    old: str
    new: str
    what: str


MUTANTS: tuple[Mutant, ...] = (
    Mutant("pad-bottom-short", "vdla_tile_loader.sv",
           "assign y_end   = YW'(insn.y_pad0) + YW'(insn.y_size) + YW'(insn.y_pad1);",
           "assign y_end   = YW'(insn.y_pad0) + YW'(insn.y_size) + YW'(insn.y_pad1) - YW'(insn.y_pad1 != '0);",
           "off-by-one in the padding counter: one bottom padding row too few"),
    Mutant("pad-not-zero", "vdla_tile_loader.sv", "assign wr_data  = in_data ? el_data : '0;",
           "assign wr_data  = el_data;", "padding elements get the DMA's data lines instead of zero"),
    Mutant("load-ignores-stride", "vdla_tile_loader.sv", "(start || new_row ? RW'(insn.x_stride) : '0);",
           "(start || new_row ? RW'(insn.x_size) : '0);", "loads step rows by x_size, not x_stride"),
    Mutant("gather-ignores-elem-stride", "vdla_tile_loader.sv", "cmd_next + RW'(insn.elem_stride_m1) + 1'b1;",
           "cmd_next + 1'b1;", "a gathering LOAD reads a row's elements contiguously, not at its element stride"),
    Mutant("store-ignores-stride", "vdla_store.sv", "row_next + RW'(insn.x_stride);",
           "row_next + RW'(insn.x_size);", "stores step rows by x_size, not x_stride"),
    Mutant("swap-pop-flags", "vdla_dep_gate.sv", "need_pop_prev <= HAS_PREV && cmd_flags.pop_prev;",
           "need_pop_prev <= HAS_PREV && cmd_flags.pop_next;", "swapped token flag: pop_prev reads the pop_next bit"),
    Mutant("drop-pop-next", "vdla_dep_gate.sv", "need_pop_next <= HAS_NEXT && cmd_flags.pop_next;",
           "need_pop_next <= 1'b0;", "pop_next ignored: the write-after-read waits are lost"),
    Mutant("swap-push-flags", "vdla_dep_gate.sv", "need_push_prev <= HAS_PREV && flags.push_prev;",
           "need_push_prev <= HAS_PREV && flags.push_next;", "swapped token flag: push_prev reads the push_next bit"),
    Mutant("reset-no-write", "vdla_gemm.sv", "assign acc_wr_en   = v[D];", "assign acc_wr_en   = v[D] && !insn.reset;",
           "dropped write enable: GEMM reset leaves the accumulators unchanged"),
    Mutant("gemm-no-accumulate", "vdla_gemm.sv", "add_tile(acc_t, dot[D])", "add_tile('0, dot[D])",
           "GEMM overwrites the accumulator instead of adding to it"),
    Mutant("overwrite-accumulates", "vdla_gemm.sv", "insn.overwrite ? dot[D] : add_tile(acc_t, dot[D])",
           "add_tile(acc_t, dot[D])", "the GEMM overwrite bit is ignored: the first reduction step accumulates"),
    Mutant("store-bias-ignored", "vdla_store.sv", "      a_bias <= insn.bias ? bias_q : '0;",
           "      a_bias <= '0;", "the STORE's bias is never added"),
    Mutant("store-bias-no-step", "vdla_store.sv", "bias_addr  <= bias_addr + AIW'(insn.bias_step);",
           "bias_addr  <= bias_addr;", "the STORE's bias does not advance per row (bias_step ignored)"),
    Mutant("store-bias-stale", "vdla_store.sv", "if (bias_pending) bias_q <= rd_data;",
           "if (bias_pending && bias_q == '0) bias_q <= rd_data;",
           "the STORE keeps the first bias it read: later rows and STOREs reuse it"),
    Mutant("rd-burst-long", "vdla_dma_rd.sv", "assign ar_len    = 8'(burst - 1'b1);", "assign ar_len    = 8'(burst);",
           "wrong burst length: read bursts one beat too long"),
    Mutant("wr-burst-long", "vdla_dma_wr.sv", "assign aw_len    = 8'(burst - 1'b1);", "assign aw_len    = 8'(burst);",
           "wrong burst length: write bursts announce one beat too many"),
    Mutant("imm-zero-extend", "vdla_alu.sv", "assign imm = ACC_WIDTH'($signed(insn.imm));",
           "assign imm = ACC_WIDTH'($unsigned(insn.imm));", "ALU immediates zero-extended: negative immediates become large"),
    Mutant("alu-src-uses-dst-factor", "vdla_alu.sv", "AIW'(uop.src) + src1_off", "AIW'(uop.src) + dst1_off",
           "ALU accumulator operand indexed with the destination's loop factors"),
    Mutant("inner-factor-swap", "vdla_uop_loop.sv", "dst_i <= dst_i + dst_factor_in;",
           "dst_i <= dst_i + dst_factor_out;", "inner loop steps the destination by the outer factor"),
    Mutant("uop-range-short", "vdla_uop_loop.sv", "last_u <= last_u ? u_one : u + (UW + 1)'(2) == uop_end;",
           "last_u <= last_u ? u_one : u + (UW + 1)'(2) == uop_end || u + (UW + 1)'(3) == uop_end;",
           "off-by-one in the micro-op range: the last micro-op of ranges of 3 or more is skipped"),
    Mutant("shr-left-wrong", "vdla_alu.sv", "else alu_lane = nb >= ACC_WIDTH'(ACC_WIDTH) ? '0 : a << nb[SHW-1:0];",
           "else alu_lane = nb >= ACC_WIDTH'(ACC_WIDTH) ? '0 : a >> nb[SHW-1:0];",
           "negative shift amounts shift right instead of left"),
    Mutant("fifo-admits-full", "vdla_fifo.sv", "assign in_ready = count < CNT_W'(DEPTH);",
           "assign in_ready = count <= CNT_W'(DEPTH);", "a FIFO accepts a push when full (one entry too many)"),
    Mutant("gate-start-early", "vdla_dep_gate.sv", "assign exec_start  = state == S_POP && !pops_left;",
           "assign exec_start  = state == S_POP && !(need_pop_prev && !pop_prev_valid);",
           "a gate starts its executor before a pop_next token is there"),
    Mutant("max-is-min", "vdla_alu.sv", "ALU_MAX: alu_lane = sa > sb ? a : b;", "ALU_MAX: alu_lane = sa < sb ? a : b;",
           "ALU MAX computes MIN"),
    Mutant("alu-no-forward-dst", "vdla_alu.sv", "assign fwd_dst3 = v[D] && acc_wr_addr == dst[3];",
           "assign fwd_dst3 = 1'b0;",
           "pipelined ALU: the previous iteration's write is not forwarded into acc[dst] (stale read)"),
    Mutant("alu-no-forward-src", "vdla_alu.sv", "assign fwd_src3 = v[D] && acc_wr_addr == src[3] && !insn.use_imm;",
           "assign fwd_src3 = 1'b0;",
           "pipelined ALU: the previous iteration's write is not forwarded into the acc[src] operand"),
    Mutant("alu-forward-imm", "vdla_alu.sv", "assign fwd_src3 = v[D] && acc_wr_addr == src[3] && !insn.use_imm;",
           "assign fwd_src3 = v[D] && acc_wr_addr == src[3];",
           "pipelined ALU: a write is forwarded over the immediate operand"),
    Mutant("store-stage-a-early", "vdla_store.sv", "      else                 a_v <= rd_pending;",
           "      else                 a_v <= rd_en && !bias_next;",
           "pipelined STORE (store_pipeline_depth >= 1): stage A's valid runs a cycle ahead of the SRAM's data"),
    Mutant("store-stage-b-early", "vdla_store.sv", "      else                 b_v <= c_v;",
           "      else                 b_v <= rd_pending;",
           "pipelined STORE (store_pipeline_depth >= 2): stage B's valid skips stage A (its data is the previous "
           "element's)"),
    Mutant("gemm-wgt-unregistered", "vdla_gemm.sv",
           "      inp_t <= inp_rd_data;\n      wgt_t <= wgt_rd_data;\n    end\n",
           "      inp_t <= inp_rd_data;\n    end\n    assign wgt_t = wgt_rd_data;\n",
           "GEMM operand registers (gemm_pipeline_depth >= 4): the weight tile bypasses its register, so each "
           "input meets the next iteration's weights"),
    Mutant("alu-mul-dropped", "vdla_alu.sv", "assign res5 = insn.alu_op == ALU_MUL ? product : other;",
           "assign res5 = other;", "pipelined ALU: MUL takes the other ops' result (product dropped)"),
    # Mutants of the properties added with the arbiter, micro-op loop, range check and write-window
    # proofs (docs/rtl.md, "Formal proofs"); some change no result a program can see.
    Mutant("arb-fixed-priority", "vdla_axi_rd_arb.sv", "idx = int'(last_grant) + k;", "idx = k - 1;",
           "the read arbiter grants by fixed priority, not round-robin: a low client can starve"),
    Mutant("arb-route-pops-early", "vdla_axi_rd_arb.sv", ".out_ready(s_valid && s_ready && s_last)",
           ".out_ready(s_valid && s_ready)",
           "the read arbiter's route advances on every beat, not on RLAST: beats go to the wrong client"),
    Mutant("uop-range-long", "vdla_uop_loop.sv", "last_u <= last_u ? u_one : u + (UW + 1)'(2) == uop_end;",
           "last_u <= last_u ? u_one : u + 1'b1 == uop_end;",
           "off-by-one in the micro-op range: one micro-op past uop_end is read (ranges of two or more)"),
    Mutant("range-check-late", "vdla_sram_range.sv", "armed <= at == W'(DEPTH - 1);",
           "armed <= at == W'(DEPTH);",
           "the SRAM range check misses the first element past the buffer (it reports the second)"),
    Mutant("wr-window-last-beat", "vdla_store.sv", ".lim(RW'(win_limit >> LOG_EB))",
           ".lim(RW'(win_limit >> LOG_EB) + RW'(BUS_BYTES >> LOG_EB))",
           "the store's window verdict (vdla_addr_window's rule, registered in the client) lets a command end "
           "one bus beat past WINDOW_LIMIT"),
    Mutant("loader-col-flag-late", "vdla_tile_loader.sv", "assign in_col_on   = x_inc >= x_lo && x_inc < x_hi;",
           "assign in_col_on   = x >= x_lo && x < x_hi;",
           "registered padding flag: the column flag is computed for the current position, not the next, "
           "so data and padding shift by one column"),
    Mutant("skid-loses-stalled-word", "vdla_skid.sv",
           "if (out_valid && !out_ready && in_valid && in_ready) skid_data <= in_data;",
           "if (out_valid && !out_ready && in_valid && in_ready) skid_data <= out_data;",
           "register slice (AXI R slice, axi_r_slice = 1): the word taken while the output stalls is lost "
           "(the skid register repeats the stalled one)"),
    Mutant("r-slice-route-early", "vdla_axi_rd_arb.sv", ".out_ready(s_valid && s_ready && s_last)",
           ".out_ready(m_rvalid && m_rready && m_rlast)",
           "AXI R slice (axi_r_slice = 1): the route FIFO pops at the bus's last beat, a cycle before the "
           "slice hands it out, so a burst's last beat goes to the next burst's client"),
    Mutant("gemm-acc-no-forward", "vdla_gemm.sv", "assign fwd_acc = v[D] && acc_wr_addr == dst[D-1];",
           "assign fwd_acc = 1'b0;",
           "registered accumulator operand (gemm_pipeline_depth >= 4): the previous iteration's write is not "
           "forwarded into it, so back-to-back micro-ops on one accumulator lose a partial sum"),
    Mutant("uop-lookahead-current", "vdla_uop_loop.sv", "assign uop_idx_next = UW'(u_next);",
           "assign uop_idx_next = UW'(u);",
           "registered micro-op SRAM: the look-ahead read uses the current index, so every iteration gets the "
           "previous iteration's micro-op"),
    Mutant("uop-lookahead-steps-while-waiting", "vdla_uop_loop.sv", "(it_valid ? u + 1'b1 : u)", "(u + 1'b1)",
           "registered micro-op SRAM: the look-ahead steps in the cycles between two ALU iterations (alu_ii > 1), "
           "so an ALU iteration reads the next micro-op"),
    Mutant("gemm-products-unregistered", "vdla_gemm.sv",
           "always_ff @(posedge clk) prod <= prod_tile(inp_t, wgt_t, lut_p);",
           "always_comb prod = prod_tile(inp_t, wgt_t, lut_p);",
           "registered GEMM products (gemm_pipeline_depth >= 5): the product register is left out, so the adder "
           "tree sums the next iteration's products a cycle early"),
    Mutant("gemm-products-late", "vdla_gemm.sv",
           "always_ff @(posedge clk) prod <= prod_tile(inp_t, wgt_t, lut_p);",
           "logic [NMAC*PW-1:0] prod_q; always_ff @(posedge clk) begin prod_q <= prod_tile(inp_t, wgt_t, lut_p); "
           "prod <= prod_q; end",
           "registered GEMM products (gemm_pipeline_depth >= 5): the products are registered twice, so the adder "
           "tree sums the previous iteration's products"),
    Mutant("fetch-end-stale", "vdla_fetch.sv",
           "assign end_after  = EW'(addr_after) + (EW'(n_after) << LOG_INSN_BYTES);",
           "assign end_after  = EW'(dma_addr) + (EW'(n) << LOG_INSN_BYTES);",
           "registered window end (fetch): the end byte is computed from the chunk just taken, not the next one, "
           "so the window checks a stale span (and the next chunk's address is the previous one)"),
    Mutant("loader-end-from-start", "vdla_tile_loader.sv", ": EW'(cmd_next + RW'(count)) << LOG_EB;",
           ": EW'(cmd_next) << LOG_EB;",
           "registered window end (tile loader): the end byte is the command's first byte, an empty span, "
           "which the window's check of its client (a_window_span_end) must catch"),
    Mutant("store-end-stale", "vdla_store.sv", ": EW'(row_next + RW'(insn.x_size)) << LOG_EB;",
           ": EW'(row_ahead + RW'(insn.x_size)) << LOG_EB;",
           "registered window end (store): the end byte is the row after the command's, a wrong span, which the "
           "window's check of its client (a_window_span_end) must catch"),
    Mutant("uop-sram-no-out-reg", "vdla_compute.sv", ".OUT_REG(1'b1)", ".OUT_REG(1'b0)",
           "micro-op SRAM without its output register while the loop reads a cycle ahead: every micro-op "
           "arrives a cycle early (the next iteration's)"),
)


FAULT_MUTANTS: tuple[tuple[Mutant, str], ...] = (
    (Mutant("window-ignores-limit", "vdla_tile_loader.sv", " && end_ok;", ";",
            "the LOAD's window verdict (vdla_addr_window's rule, registered in the client) lets a DMA command "
            "run past WINDOW_LIMIT"), "load_past_dram"),
    (Mutant("window-ignores-base", "vdla_store.sv",
            "assign ok_next = ((RW+LOG_EB)'(row_next) << LOG_EB) >= (RW+LOG_EB)'(win_base) && end_ok;",
            "assign ok_next = end_ok;",
            "the STORE's window verdict (vdla_addr_window's rule, registered in the client) lets a DMA command "
            "start below WINDOW_BASE"), "store_outside_window"),
    (Mutant("loop-check-skips-src", "vdla_compute.sv", ".check_src(is_gemm ? !gemm.reset : !alu.use_imm)",
            ".check_src(1'b0)", "the loop check ignores the source operand"), "gemm_src_overrun"),
    (Mutant("store-range-unchecked", "vdla_store.sv", ".step(rd_en && !bias_next), .fault(el_fault),",
            ".step(1'b0), .fault(el_fault),",
            "the STORE's accumulator walk is not range-checked"), "store_past_sram"),
    (Mutant("loop-room-off-by-one", "vdla_loop_check.sv", "dst_room <= NW'(W'(ACC_BUFF_DEPTH) - s_dst);",
            "dst_room <= NW'(W'(ACC_BUFF_DEPTH) - s_dst + 1'b1);",
            "registered loop check, first stage: the room left in the accumulator buffer is one too many, "
            "so the first element past it passes"), "acc_overrun"),
    (Mutant("loop-verdict-next-offset", "vdla_loop_check.sv", "bad_dst ? p_dst : bad_src ? p_src : p_wgt;",
            "bad_dst ? s_dst : bad_src ? s_src : s_wgt;",
            "registered loop check, verdict stage: the element is built from the offsets of the iteration being "
            "read, not of the one checked"), "acc_overrun"),
)
"""Mutants of the fault logic, each with the fault program of tests/faults/test_faults.py that
kills it (valid fuzz programs never fault, so the fuzzer cannot): tests/faults/test_fault_mutants.py."""


def make_copy(mutant: Mutant | None, dest: Path) -> Path:
    """A copy of the shipped RTL in ``dest`` with ``mutant`` applied (or none)."""
    dest.mkdir(parents=True, exist_ok=True)
    for src in RTL_DIR.glob("*.sv"):
        shutil.copy2(src, dest / src.name)
    if mutant is not None:
        path = dest / mutant.file
        text = path.read_text()
        if text.count(mutant.old) != 1:
            raise ValueError(f"mutant {mutant.name}: the text to replace occurs {text.count(mutant.old)} times in "
                             f"{mutant.file}, not once; update the mutant to the current RTL")
        path.write_text(text.replace(mutant.old, mutant.new))
    return dest


@dataclass(frozen=True)
class Verdict:
    name: str
    what: str
    killed: bool
    programs: int
    """Programs run: the first failing one's position when killed."""
    failure: str | None
    seconds: float


def fuzz_mutant(mutant: Mutant | None, config: str, count: int, seed: int, workdir: Path) -> Verdict:
    """Fuzz one mutant (None: the shipped RTL) until its first failure or ``count`` programs."""
    name = mutant.name if mutant else "(original)"
    rtl_dir = make_copy(mutant, workdir / name.strip("()"))
    options = {"rtl": {"rtl_dir": str(rtl_dir), "max_seconds": 30.0, "max_cycles": 20_000_000}}
    t0 = time.perf_counter()
    result = run_campaign(Settings(config, count=count, seed=seed, backends=("fsim", "rtl"), options=options,
                                   stop_on_failure=True), quiet=True)
    failed = result.failures
    detail = f"{failed[0].failure.kind}: {failed[0].failure.detail.splitlines()[0][:120]}" if failed else None
    return Verdict(name, mutant.what if mutant else "the shipped RTL", bool(failed), len(result.records), detail,
                   time.perf_counter() - t0)


@dataclass(frozen=True)
class ProofVerdict:
    """What ``vdla hw prove`` says of one mutant: the tasks over its file, and the first that refutes it."""

    name: str
    tasks: tuple[str, ...]
    killed_by: str | None
    """``task: label`` of the first refuted property, None when every task passed (or none applies)."""
    seconds: float


def prove_mutant(mutant: Mutant | None, config: str, workdir: Path, solver: str | None = None) -> ProofVerdict:
    """Run the proof tasks whose top or harness reads ``mutant``'s file until one fails."""
    from vdla_hw.formal.sby import run_task
    from vdla_hw.formal.tasks import proof_tasks

    name = mutant.name if mutant else "(original)"
    rtl_dir = make_copy(mutant, workdir / ("proof-" + name.strip("()")))
    stem = mutant.file.removesuffix(".sv") if mutant else None
    tasks = [t for t in proof_tasks(config) if stem is None or stem in t.modules]
    t0 = time.perf_counter()
    for task in tasks:
        result = run_task(config, task, rtl_dir=rtl_dir, solver=solver)
        if result.status == "FAIL":
            label = result.failed[0].label if result.failed else "?"
            return ProofVerdict(name, tuple(t.name for t in tasks), f"{task.name}: {label}", time.perf_counter() - t0)
    return ProofVerdict(name, tuple(t.name for t in tasks), None, time.perf_counter() - t0)


def format_kill_matrix(verdicts: list[Verdict] | None, proofs: list[ProofVerdict]) -> str:
    """Markdown: each mutant killed by fuzz only, proofs only, both or neither."""
    fuzz = {v.name: v.killed for v in verdicts or []}
    lines = ["| mutant | fuzz | proofs (task: property) | killed by |", "|---|---|---|---|"]
    for p in proofs:
        if p.name == "(original)":
            continue
        f = fuzz.get(p.name)
        by_fuzz = "not run" if f is None else ("killed" if f else "survived")
        by_proof = p.killed_by or ("no proof task reads the file" if not p.tasks else "all passed")
        who = {(True, True): "both", (True, False): "fuzz only", (False, True): "proofs only",
               (False, False): "neither"}.get((bool(f), p.killed_by is not None), "?")
        if f is None:
            who = "proofs" if p.killed_by else "-"
        lines.append(f"| {p.name} | {by_fuzz} | {by_proof} | {who} |")
    killed = sum(p.killed_by is not None for p in proofs if p.name != "(original)")
    lines.append(f"\nproofs killed {killed}/{len([p for p in proofs if p.name != '(original)'])} mutants")
    return "\n".join(lines)


def format_table(verdicts: list[Verdict]) -> str:
    """A Markdown table of the verdicts and the kill rate."""
    lines = ["| mutant | change | killed | programs to kill | first failure |", "|---|---|---|---|---|"]
    for v in verdicts:
        kind = v.failure.split(":")[0] if v.failure else ""
        lines.append(f"| {v.name} | {v.what} | {'yes' if v.killed else 'NO'} | {v.programs if v.killed else '-'} | {kind} |")
    mutants = [v for v in verdicts if v.name != "(original)"]
    killed = sum(v.killed for v in mutants)
    lines.append(f"\nkilled {killed}/{len(mutants)} mutants ({killed / max(len(mutants), 1):.0%})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--count", type=int, default=1000, help="most programs per mutant (default: 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default=None, help="comma-separated mutant names")
    parser.add_argument("--json", default="fuzz-out/mutants.json")
    parser.add_argument("--proofs", action="store_true",
                        help="also run `vdla hw prove`'s tasks over each mutant's file and report which mutants "
                             "the proofs kill (fuzz only / proofs only / both)")
    parser.add_argument("--no-fuzz", action="store_true", help="with --proofs: skip fuzzing, only prove")
    args = parser.parse_args(argv)
    if args.no_fuzz and not args.proofs:
        parser.error("--no-fuzz needs --proofs (there would be nothing to run)")
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only.split(",")]
    verdicts: list[Verdict] = []
    proofs: list[ProofVerdict] = []
    with tempfile.TemporaryDirectory(prefix="vdla-mutants-") as tmp:
        for mutant in [None, *chosen]:
            if not args.no_fuzz:
                v = fuzz_mutant(mutant, args.config, args.count, args.seed, Path(tmp))
                print(f"{v.name:<24} {'killed' if v.killed else 'survived'} after {v.programs} programs "
                      f"({v.seconds:.1f} s){': ' + v.failure if v.failure else ''}", flush=True)
                verdicts.append(v)
            if args.proofs:
                pv = prove_mutant(mutant, args.config, Path(tmp))
                print(f"{pv.name:<24} proofs: {pv.killed_by or 'not killed'} ({len(pv.tasks)} task(s), "
                      f"{pv.seconds:.1f} s)", flush=True)
                proofs.append(pv)
    if verdicts:
        print(format_table(verdicts))
    if proofs:
        print(format_kill_matrix(verdicts or None, proofs))
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"config": args.config, "count": args.count, "seed": args.seed,
                                "verdicts": [asdict(v) for v in verdicts],
                                "proofs": [asdict(p) for p in proofs]}, indent=2) + "\n")
    print(f"JSON: {path}")
    false_alarm = (verdicts and verdicts[0].killed) or (proofs and proofs[0].killed_by is not None)
    return 1 if false_alarm else 0


if __name__ == "__main__":
    raise SystemExit(main())
