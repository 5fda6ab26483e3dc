// Index check of a GEMM/ALU micro-op loop, beside the executor: it follows the loop's
// iterations by the micro-op reads (one read per iteration, in i0/i1/uop order) and, when
// the micro-op arrives from its SRAM a cycle later, adds the loop offsets to its fields
// without wrapping. `fault` pulses at the first iteration with an operand past its buffer:
// the destination (ACC) first, then the source (INP for GEMM, ACC for ALU; none for a GEMM
// reset or an ALU immediate), then the weight (GEMM only) -- the order fsim and the cycle
// model report in. `buf` names the buffer (BUF_* of vdla_pkg), `elem` the unwrapped element
// index and `iter` the iteration's number from 0. A micro-op range [uop_bgn, uop_end) past the
// micro-op buffer faults first (buffer UOP, `elem` = uop_end).
//
// Timing: the micro-op word comes from the SRAM's output register now (vdla_compute), but the
// check still keeps 32-bit adders off it (it shares the word with the executors' index adders). When an iteration's micro-op is read, its loop offsets are known:
// the room left in each buffer past them (`*_room` = depth - offset, narrow) and whether the
// offset alone is already past it (`*_over`) are registered then, and the micro-op's field is
// only compared with that room when it arrives. The verdict is registered once more (the
// fault, its buffer and the operand's field and offset): `fault` rises one cycle after the
// iteration's micro-op arrives, still naming that iteration and that element (its unwrapped
// index is the sum of the registered field and offset), and a fault is never lost to the
// next instruction's `start`. The ECP5 build's critical path ran from the micro-op SRAM
// through the sums and compares into the fault collector's halt (docs/fpga_ecp5.md).
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
  // wide enough for every micro-op field, every buffer depth and uop_end
  localparam int NW0 = UOP_DST_W > UOP_SRC_W ? UOP_DST_W : UOP_SRC_W;
  localparam int NW1 = NW0 > UOP_WGT_W ? NW0 : UOP_WGT_W;
  localparam int NW2 = NW1 > LOG_ACC_BUFF_DEPTH + 1 ? NW1 : LOG_ACC_BUFF_DEPTH + 1;
  localparam int NW3 = NW2 > LOG_INP_BUFF_DEPTH + 1 ? NW2 : LOG_INP_BUFF_DEPTH + 1;
  localparam int NW4 = NW3 > LOG_WGT_BUFF_DEPTH + 1 ? NW3 : LOG_WGT_BUFF_DEPTH + 1;
  localparam int NW  = NW4 > UW + 1 ? NW4 : UW + 1;

  // The loop position as counts of what is left (not u and i1 counting up), with the "last"
  // decisions as flops: the wrap of u and i1 at each micro-op read is a mux of registers, not
  // `u + 1 != uop_end` and `i1 + 1 != iter_in` on the instruction's decoded fields (an adder
  // and a compare in series in front of every loop register: the ECP5 build's critical path
  // on two seeds, docs/fpga_ecp5.md). u_left = uop_end - 1 - u, i1_left = iter_in - 1 - i1;
  // the span of each, less one, is registered at `start` for the reloads.
  logic [UW:0]            u_left, u_span;      // u_span = uop_end - 1 - uop_bgn
  logic [LOOP_ITER_W-1:0] i1_left, i1_span;    // i1_span = iter_in - 1
  logic                   u_last, i1_last;     // u_left == 0, i1_left == 0
  logic                   u_one, i1_one;       // u_span == 0, i1_span == 0
  logic [W-1:0]           dst_o, dst_i, src_o, src_i, wgt_o, wgt_i, n;
  logic                   pend, seen, uop_bad;  // uop_bad: the range [bgn, end) runs past the micro-op buffer
  logic [W-1:0]           p_dst, p_src, p_wgt, p_iter;
  logic [W-1:0]           s_dst, s_src, s_wgt, src_depth;  // the offsets of the iteration read now
  logic [NW-1:0]          dst_room, src_room, wgt_room;    // depth - offset, when not over
  logic                   dst_over, src_over, wgt_over;    // offset >= depth
  logic                   bad_dst, bad_src, bad_wgt, fault_now;
  assign s_dst     = dst_o + dst_i;
  assign s_src     = src_o + src_i;
  assign s_wgt     = wgt_o + wgt_i;
  assign src_depth = is_gemm ? W'(INP_BUFF_DEPTH) : W'(ACC_BUFF_DEPTH);

  logic [UW:0]            u_span_in;
  logic [LOOP_ITER_W-1:0] i1_span_in;
  assign u_span_in  = uop_end - 1'b1 - (UW + 1)'(uop_bgn);
  assign i1_span_in = iter_in - 1'b1;
  // Read only after a start has loaded them, so no reset.
  always_ff @(posedge clk) begin
    if (start) begin
      u_span  <= u_span_in;
      u_one   <= u_span_in == '0;
      i1_span <= i1_span_in;
      i1_one  <= iter_in == LOOP_ITER_W'(1);
    end
  end

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      pend    <= 1'b0;
      seen    <= 1'b0;
      uop_bad <= 1'b0;
      u_left  <= '0;
      u_last  <= 1'b0;
      i1_left <= '0;
      i1_last <= 1'b0;
      n    <= '0;
      {dst_o, dst_i, src_o, src_i, wgt_o, wgt_i} <= '0;
    end else if (start) begin
      pend    <= 1'b0;
      seen    <= 1'b0;
      uop_bad <= 32'(uop_end) > 32'(UOP_BUFF_DEPTH);
      // (an empty range or loop reads no micro-op, so these are never used then)
      u_left  <= u_span_in;
      u_last  <= u_span_in == '0;
      i1_left <= i1_span_in;
      i1_last <= iter_in == LOOP_ITER_W'(1);
      n    <= '0;
      {dst_o, dst_i, src_o, src_i, wgt_o, wgt_i} <= '0;
    end else begin
      pend    <= uop_rd_en;
      uop_bad <= 1'b0;
      if (fault_now) seen <= 1'b1;
      if (uop_rd_en) begin
        p_dst    <= s_dst;
        p_src    <= s_src;
        p_wgt    <= s_wgt;
        dst_over <= s_dst >= W'(ACC_BUFF_DEPTH);
        src_over <= s_src >= src_depth;
        wgt_over <= s_wgt >= W'(WGT_BUFF_DEPTH);
        dst_room <= NW'(W'(ACC_BUFF_DEPTH) - s_dst);
        src_room <= NW'(src_depth - s_src);
        wgt_room <= NW'(W'(WGT_BUFF_DEPTH) - s_wgt);
        p_iter <= n;
        n      <= n + 1'b1;
        if (!u_last) begin
          u_left <= u_left - 1'b1;
          u_last <= u_left == (UW + 1)'(1);
        end else begin
          u_left <= u_span;
          u_last <= u_one;
          if (!i1_last) begin
            i1_left <= i1_left - 1'b1;
            i1_last <= i1_left == LOOP_ITER_W'(1);
            dst_i <= dst_i + dst_factor_in;
            src_i <= src_i + src_factor_in;
            wgt_i <= wgt_i + wgt_factor_in;
          end else begin
            i1_left <= i1_span;
            i1_last <= i1_one;
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

  // The micro-op read in the previous cycle arrives now: field + offset >= depth, without the
  // sum (offset < depth, so the room is positive and fits NW bits).
  /* verilator lint_off UNUSEDSIGNAL */  // the reserved bits
  vdla_pkg::uop_t uop;
  /* verilator lint_on UNUSEDSIGNAL */
  assign uop       = vdla_pkg::uop_t'(uop_rd_data);
  assign bad_dst   = dst_over || NW'(uop.dst) >= dst_room;
  assign bad_src   = check_src && (src_over || NW'(uop.src) >= src_room);
  assign bad_wgt   = check_wgt && (wgt_over || NW'(uop.wgt) >= wgt_room);
  assign fault_now = !seen && !start && (uop_bad || (pend && (bad_dst || bad_src || bad_wgt)));

  // The verdict, registered: the first bad operand's buffer, field and offset.
  logic          r_fault;
  logic [3:0]    r_buf;
  logic [NW-1:0] r_field;
  logic [W-1:0]  r_base, r_iter;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) r_fault <= 1'b0;
    else                 r_fault <= fault_now;
  end
  // Read only while r_fault is set, so no reset.
  always_ff @(posedge clk) begin
    if (fault_now) begin
      r_buf   <= uop_bad ? BUF_UOP : bad_dst ? BUF_ACC : bad_src ? (is_gemm ? BUF_INP : BUF_ACC) : BUF_WGT;
      r_field <= uop_bad ? NW'(uop_end) : bad_dst ? NW'(uop.dst) : bad_src ? NW'(uop.src) : NW'(uop.wgt);
      r_base  <= uop_bad ? '0 : bad_dst ? p_dst : bad_src ? p_src : p_wgt;
      r_iter  <= uop_bad ? '0 : p_iter;
    end
  end
  assign fault  = r_fault;
  assign buf_id = r_buf;
  assign elem   = W'(r_field) + r_base;
  assign iter   = r_iter;
endmodule

`default_nettype wire
