// Index check of a GEMM/ALU micro-op loop, beside the executor: it follows the loop's
// iterations by the micro-op reads (one read per iteration, in i0/i1/uop order) and, when
// the micro-op arrives from its SRAM a cycle later, adds the loop offsets to its fields
// without wrapping. `fault` pulses at the first iteration with an operand past its buffer:
// the destination (ACC) first, then the source (INP for GEMM, ACC for ALU; none for a GEMM
// reset or an ALU immediate), then the weight (GEMM only) -- the order fsim and the cycle
// model report in. `buf` names the buffer (BUF_* of vdla_pkg), `elem` the unwrapped element
// index and `iter` the iteration's number from 0. A micro-op range [uop_bgn, uop_end) past the
// micro-op buffer faults first (buffer UOP, `elem` = uop_end).
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_loop_check #(
  parameter int W = 32
) (
  input  wire logic                          clk,
  input  wire logic                          rst_n,
  input  wire logic                          clear,
  input  wire logic                          start,     // exec_start of a GEMM or ALU
  input  wire logic                          is_gemm,   // held for the instruction
  input  wire logic                          check_src,
  input  wire logic                          check_wgt,
  input  wire logic [LOG_UOP_BUFF_DEPTH-1:0] uop_bgn,
  input  wire logic [LOG_UOP_BUFF_DEPTH:0]   uop_end,
  input  wire logic [LOOP_ITER_W-1:0]        iter_in,
  input  wire logic [W-1:0]                  dst_factor_out,
  input  wire logic [W-1:0]                  dst_factor_in,
  input  wire logic [W-1:0]                  src_factor_out,
  input  wire logic [W-1:0]                  src_factor_in,
  input  wire logic [W-1:0]                  wgt_factor_out,
  input  wire logic [W-1:0]                  wgt_factor_in,
  input  wire logic                          uop_rd_en,
  input  wire logic [UOP_BITS-1:0]           uop_rd_data,
  output logic                               fault,
  output logic [3:0]                         buf_id,
  output logic [W-1:0]                       elem,
  output logic [W-1:0]                       iter
);
  localparam int UW = LOG_UOP_BUFF_DEPTH;

  logic [UW:0]            u;
  logic [LOOP_ITER_W-1:0] i1;
  logic [W-1:0]           dst_o, dst_i, src_o, src_i, wgt_o, wgt_i, n;
  logic                   pend, seen, uop_bad;  // uop_bad: the range [bgn, end) runs past the micro-op buffer
  logic [W-1:0]           p_dst, p_src, p_wgt, p_iter;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      pend    <= 1'b0;
      seen    <= 1'b0;
      uop_bad <= 1'b0;
      u       <= '0;
      i1   <= '0;
      n    <= '0;
      {dst_o, dst_i, src_o, src_i, wgt_o, wgt_i} <= '0;
    end else if (start) begin
      pend    <= 1'b0;
      seen    <= 1'b0;
      uop_bad <= 32'(uop_end) > 32'(UOP_BUFF_DEPTH);
      u       <= (UW + 1)'(uop_bgn);
      i1   <= '0;
      n    <= '0;
      {dst_o, dst_i, src_o, src_i, wgt_o, wgt_i} <= '0;
    end else begin
      pend    <= uop_rd_en;
      uop_bad <= 1'b0;
      if (fault) seen <= 1'b1;
      if (uop_rd_en) begin
        p_dst  <= dst_o + dst_i;
        p_src  <= src_o + src_i;
        p_wgt  <= wgt_o + wgt_i;
        p_iter <= n;
        n      <= n + 1'b1;
        if (u + 1'b1 != uop_end) begin
          u <= u + 1'b1;
        end else begin
          u <= (UW + 1)'(uop_bgn);
          if (i1 + 1'b1 != iter_in) begin
            i1    <= i1 + 1'b1;
            dst_i <= dst_i + dst_factor_in;
            src_i <= src_i + src_factor_in;
            wgt_i <= wgt_i + wgt_factor_in;
          end else begin
            i1    <= '0;
            dst_i <= '0;
            src_i <= '0;
            wgt_i <= '0;
            dst_o <= dst_o + dst_factor_out;
            src_o <= src_o + src_factor_out;
            wgt_o <= wgt_o + wgt_factor_out;
          end
        end
      end
    end
  end

  // The micro-op read in the previous cycle arrives now.
  /* verilator lint_off UNUSEDSIGNAL */  // the reserved bits
  vdla_pkg::uop_t uop;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [W-1:0]   dst, src, wgt, src_depth;
  logic           bad_dst, bad_src, bad_wgt;
  assign uop       = vdla_pkg::uop_t'(uop_rd_data);
  assign dst       = W'(uop.dst) + p_dst;
  assign src       = W'(uop.src) + p_src;
  assign wgt       = W'(uop.wgt) + p_wgt;
  assign src_depth = is_gemm ? W'(INP_BUFF_DEPTH) : W'(ACC_BUFF_DEPTH);
  assign bad_dst   = dst >= W'(ACC_BUFF_DEPTH);
  assign bad_src   = check_src && src >= src_depth;
  assign bad_wgt   = check_wgt && wgt >= W'(WGT_BUFF_DEPTH);

  assign fault  = !seen && !start && (uop_bad || (pend && (bad_dst || bad_src || bad_wgt)));
  assign buf_id = uop_bad ? BUF_UOP : bad_dst ? BUF_ACC : bad_src ? (is_gemm ? BUF_INP : BUF_ACC) : BUF_WGT;
  assign elem   = uop_bad ? W'(uop_end) : bad_dst ? dst : bad_src ? src : wgt;
  assign iter   = uop_bad ? '0 : p_iter;
endmodule

`default_nettype wire
