// The two-level affine micro-op loop shared by GEMM and ALU.
//
// For i0 < iter_out, i1 < iter_in and each micro-op index u in [uop_bgn, uop_end) (in
// that order) it emits one iteration every II cycles: the micro-op index to read and
// the loop offsets i0*factor_out + i1*factor_in of the three operands, kept as running
// sums so no multiplier is needed. An empty loop emits nothing. `busy` stays high until
// the last iteration has been emitted. With `fast` (held for the whole instruction) the
// interval is II_FAST instead.
//
// `uop_idx_next` is the micro-op index the loop will present in the next cycle (u's next
// value): the executors read their micro-op SRAM with it one cycle ahead, so a registered
// read port (vdla_sram OUT_REG) still hands them the micro-op the cycle after the iteration
// is emitted. It depends on registers and the held instruction only (not on `start`: an
// idle loop looks ahead at uop_bgn, where a start puts it).
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_uop_loop #(
  parameter int II = 1,
  parameter int II_FAST = II,
  parameter int DST_W = 8,
  parameter int SRC_W = 8,
  parameter int WGT_W = 8
) (
  input  wire logic                          clk,
  input  wire logic                          rst_n,
  input  wire logic                          clear,
  input  wire logic                          start,
  input  wire logic                          fast,
  input  wire logic [LOG_UOP_BUFF_DEPTH-1:0] uop_bgn,
  input  wire logic [LOG_UOP_BUFF_DEPTH:0]   uop_end,
  input  wire logic [LOOP_ITER_W-1:0]        iter_out,
  input  wire logic [LOOP_ITER_W-1:0]        iter_in,
  input  wire logic [DST_W-1:0]              dst_factor_out,
  input  wire logic [DST_W-1:0]              dst_factor_in,
  input  wire logic [SRC_W-1:0]              src_factor_out,
  input  wire logic [SRC_W-1:0]              src_factor_in,
  input  wire logic [WGT_W-1:0]              wgt_factor_out,
  input  wire logic [WGT_W-1:0]              wgt_factor_in,
  output logic                               it_valid,
  output logic [LOG_UOP_BUFF_DEPTH-1:0]      uop_idx,
  output logic [LOG_UOP_BUFF_DEPTH-1:0]      uop_idx_next,
  output logic [DST_W-1:0]                   dst_off,
  output logic [SRC_W-1:0]                   src_off,
  output logic [WGT_W-1:0]                   wgt_off,
  output logic                               busy
);
  localparam int UW = LOG_UOP_BUFF_DEPTH;
  localparam int II_MAX = II > II_FAST ? II : II_FAST;
  localparam int IIW = II_MAX > 1 ? $clog2(II_MAX) : 1;

  if (II < 1) begin : g_bad_ii
    $fatal(1, "vdla_uop_loop: II = %0d must be at least 1", II);
  end
  if (II_FAST < 1) begin : g_bad_ii_fast
    $fatal(1, "vdla_uop_loop: II_FAST = %0d must be at least 1", II_FAST);
  end

  logic [LOOP_ITER_W-1:0] i0, i1;
  logic [UW:0]            u, u_next;
  logic [DST_W-1:0]       dst_o, dst_i;  // i0*dst_factor_out, i1*dst_factor_in
  logic [SRC_W-1:0]       src_o, src_i;
  logic [WGT_W-1:0]       wgt_o, wgt_i;
  logic [IIW-1:0]         wait_cnt;
  // last_u = (u + 1 == uop_end), last_i1 = (i1 + 1 == iter_in), last_i0 = (i0 + 1 == iter_out)
  // are flops, set a step ahead (from `+ 2`: the position after the next one is the end),
  // and `*_one`, registered at start, is the flag a wrapped counter starts with: the wrap
  // decisions select registers, not an adder and a compare on the instruction's fields
  // (the ECP5 build's critical paths ran through them, docs/fpga_ecp5.md). f_uop_last states it.
  logic                   last_u, last_i1, last_i0;
  logic                   u_one, i1_one;  // a range of one micro-op, an inner loop of one

  assign it_valid = busy && wait_cnt == '0;
  assign uop_idx  = UW'(u);
  assign dst_off  = dst_o + dst_i;
  assign src_off  = src_o + src_i;
  assign wgt_off  = wgt_o + wgt_i;
  // u's next value, for every case but reset/clear (after which no iteration comes without a
  // start): idle or wrapping -> uop_bgn, stepping -> u + 1, waiting -> u.
  assign u_next       = busy && !(it_valid && last_u) ? (it_valid ? u + 1'b1 : u) : (UW + 1)'(uop_bgn);
  assign uop_idx_next = UW'(u_next);

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      busy     <= 1'b0;
      wait_cnt <= '0;
      u        <= '0;
      i0       <= '0;
      i1       <= '0;
      {dst_o, dst_i, src_o, src_i, wgt_o, wgt_i} <= '0;
    end else if (start) begin
      busy     <= (UW + 1)'(uop_bgn) < uop_end && iter_out != '0 && iter_in != '0;
      wait_cnt <= '0;
      u        <= u_next;  // uop_bgn
      i0       <= '0;
      i1       <= '0;
      last_u   <= (UW + 1)'(uop_bgn) + 1'b1 == uop_end;
      last_i1  <= iter_in == LOOP_ITER_W'(1);
      last_i0  <= iter_out == LOOP_ITER_W'(1);
      u_one    <= (UW + 1)'(uop_bgn) + 1'b1 == uop_end;
      i1_one   <= iter_in == LOOP_ITER_W'(1);
      {dst_o, dst_i, src_o, src_i, wgt_o, wgt_i} <= '0;
    end else if (busy) begin
      wait_cnt <= wait_cnt == (fast ? IIW'(II_FAST - 1) : IIW'(II - 1)) ? '0 : wait_cnt + 1'b1;
      u        <= u_next;
      if (it_valid) begin
        last_u <= last_u ? u_one : u + (UW + 1)'(2) == uop_end;
        if (last_u) begin
          if (!last_i1) begin
            last_i1 <= i1 + LOOP_ITER_W'(2) == iter_in;
            i1    <= i1 + 1'b1;
            dst_i <= dst_i + dst_factor_in;
            src_i <= src_i + src_factor_in;
            wgt_i <= wgt_i + wgt_factor_in;
          end else begin
            last_i1 <= i1_one;
            last_i0 <= i0 + LOOP_ITER_W'(2) == iter_out;
            i1    <= '0;
            dst_i <= '0;
            src_i <= '0;
            wgt_i <= '0;
            i0    <= i0 + 1'b1;
            dst_o <= dst_o + dst_factor_out;
            src_o <= src_o + src_factor_out;
            wgt_o <= wgt_o + wgt_factor_out;
            if (last_i0) busy <= 1'b0;
          end
        end
      end
    end
  end

`ifdef FORMAL
  // Formal properties (`vdla hw prove`, docs/rtl.md "Formal proofs"). The executor's contract
  // is assumed when the loop is proven alone (VDLA_FORMAL_TOP_UOP_LOOP): a start only while
  // idle, the instruction's fields held while busy, and a legal micro-op range (uop_end <=
  // UOP_BUFF_DEPTH: the static checks establish it for a legal program; vdla_loop_check
  // faults on any other). Proven: every emitted micro-op index lies in [uop_bgn, uop_end), so
  // it never wraps the micro-op buffer (a_uop_range, the former simulation assertion), and
  // the loop terminates: every emitted iteration moves (i0, i1, u) strictly forward inside
  // [0, iter_out) x [0, iter_in) x [uop_bgn, uop_end), one iteration at most II_MAX cycles
  // apart (a ranking function over a finite domain: busy falls after at most
  // iter_out * iter_in * (uop_end - uop_bgn) * II_MAX cycles).
`ifdef VDLA_FORMAL_TOP_UOP_LOOP
  `define VDLA_UOP_LOOP_CONTRACT assume
  initial assume (!rst_n);
`else
  `define VDLA_UOP_LOOP_CONTRACT assert
`endif
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  localparam int PW = 2 * LOOP_ITER_W + UW + 1;
  logic [PW-1:0] f_pos, f_pos_q;  // (i0, i1, u), compared lexicographically
  logic          f_emitted;       // an iteration was emitted in the previous cycle
  assign f_pos = {i0, i1, u};
  always_ff @(posedge clk) begin
    f_pos_q   <= f_pos;
    f_emitted <= rst_n && !clear && !start && it_valid;
  end
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      if (start) a_uop_loop_idle: `VDLA_UOP_LOOP_CONTRACT (!busy);
      if (start || busy) a_uop_legal: `VDLA_UOP_LOOP_CONTRACT (32'(uop_end) <= UOP_BUFF_DEPTH);
      if (f_past && $past(rst_n && !clear && (start || busy)) && busy)
        a_uop_loop_held: `VDLA_UOP_LOOP_CONTRACT ($stable(uop_bgn) && $stable(uop_end) && $stable(iter_out)
            && $stable(iter_in) && $stable(fast) && $stable(dst_factor_out) && $stable(dst_factor_in)
            && $stable(src_factor_out) && $stable(src_factor_in) && $stable(wgt_factor_out) && $stable(wgt_factor_in));

      // the micro-op read stays in the instruction's range, so never wraps the buffer
      if (it_valid) a_uop_range: assert ((UW + 1)'(uop_bgn) <= u && u < uop_end && 32'(u) < UOP_BUFF_DEPTH);
      // the wrap decisions, registered a step ahead, are those of the current position
      if (busy) f_uop_last: assert (last_u == (u + 1'b1 == uop_end) && last_i1 == (i1 + 1'b1 == iter_in)
          && last_i0 == (i0 + 1'b1 == iter_out) && u_one == ((UW + 1)'(uop_bgn) + 1'b1 == uop_end)
          && i1_one == (iter_in == LOOP_ITER_W'(1)));
      // the loop state stays inside the instruction's bounds while busy
      if (busy) f_uop_bounds: assert (i0 < iter_out && i1 < iter_in && (UW + 1)'(uop_bgn) <= u && u < uop_end
          && 32'(wait_cnt) < (fast ? II_FAST : II));
      // the look-ahead index is the index of the next cycle's iteration (the SRAM read a cycle early)
      if (f_past && $past(rst_n && !clear) && it_valid) a_uop_next: assert (uop_idx == $past(uop_idx_next));
      // termination: each emitted iteration moves strictly forward, or ends the loop
      if (f_emitted) f_uop_progress: assert (!busy || f_pos > f_pos_q);
      // ... and between two iterations only the wait counter moves
      if (f_past && $past(rst_n && !clear && busy && !it_valid && !start)) f_uop_wait: assert (busy && f_pos == f_pos_q);
    end
  end
`undef VDLA_UOP_LOOP_CONTRACT
`endif
endmodule

`default_nettype wire
