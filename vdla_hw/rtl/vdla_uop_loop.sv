// The two-level affine micro-op loop shared by GEMM and ALU.
//
// For i0 < iter_out, i1 < iter_in and each micro-op index u in [uop_bgn, uop_end) (in
// that order) it emits one iteration every II cycles: the micro-op index to read and
// the loop offsets i0*factor_out + i1*factor_in of the three operands, kept as running
// sums so no multiplier is needed. An empty loop emits nothing. `busy` stays high until
// the last iteration has been emitted. With `fast` (held for the whole instruction) the
// interval is II_FAST instead.
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
  logic [UW:0]            u;
  logic [DST_W-1:0]       dst_o, dst_i;  // i0*dst_factor_out, i1*dst_factor_in
  logic [SRC_W-1:0]       src_o, src_i;
  logic [WGT_W-1:0]       wgt_o, wgt_i;
  logic [IIW-1:0]         wait_cnt;
  logic                   last_u, last_i1, last_i0;

  assign it_valid = busy && wait_cnt == '0;
  assign uop_idx  = UW'(u);
  assign dst_off  = dst_o + dst_i;
  assign src_off  = src_o + src_i;
  assign wgt_off  = wgt_o + wgt_i;
  assign last_u   = u + 1'b1 == uop_end;
  assign last_i1  = i1 + 1'b1 == iter_in;
  assign last_i0  = i0 + 1'b1 == iter_out;

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
      u        <= (UW + 1)'(uop_bgn);
      i0       <= '0;
      i1       <= '0;
      {dst_o, dst_i, src_o, src_i, wgt_o, wgt_i} <= '0;
    end else if (busy) begin
      wait_cnt <= wait_cnt == (fast ? IIW'(II_FAST - 1) : IIW'(II - 1)) ? '0 : wait_cnt + 1'b1;
      if (it_valid) begin
        if (!last_u) begin
          u <= u + 1'b1;
        end else begin
          u <= (UW + 1)'(uop_bgn);
          if (!last_i1) begin
            i1    <= i1 + 1'b1;
            dst_i <= dst_i + dst_factor_in;
            src_i <= src_i + src_factor_in;
            wgt_i <= wgt_i + wgt_factor_in;
          end else begin
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

endmodule

`default_nettype wire
