// The modules that carry RTL assertions, side by side with every port driven by the test,
// so one build serves every "broken stimulus trips the assertion" case (asserts_cocotb.py).
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

/* verilator lint_off PINCONNECTEMPTY */
module tb_asserts (
  input  wire logic                          clk,
  input  wire logic                          rst_n,
  // vdla_fifo (WIDTH 8, DEPTH 2, strict push and pop)
  input  wire logic                          f_in_valid,
  output logic                               f_in_ready,
  input  wire logic [7:0]                    f_in_data,
  output logic                               f_out_valid,
  input  wire logic                          f_out_ready,
  // vdla_fifo (WIDTH 8, DEPTH 1, a producer that waits for in_ready, like the command queues')
  input  wire logic                          q_in_valid,
  output logic                               q_in_ready,
  input  wire logic [7:0]                    q_in_data,
  // vdla_skid (WIDTH 8, its output never taken)
  input  wire logic                          s_in_valid,
  output logic                               s_in_ready,
  input  wire logic [7:0]                    s_in_data,
  // vdla_dep_gate (both neighbours)
  input  wire logic                          g_cmd_valid,
  output logic                               g_cmd_ready,
  input  wire logic [INSN_BITS-1:0]          g_cmd_insn,
  output logic                               g_exec_start,
  input  wire logic                          g_exec_done,
  input  wire logic                          g_pop_prev_valid,
  output logic                               g_pop_prev_ready,
  // vdla_tile_loader (the input buffer's)
  input  wire logic                          t_start,
  input  wire logic [INSN_BITS-1:0]          t_insn,
  // vdla_uop_loop
  input  wire logic                          u_start,
  input  wire logic [LOG_UOP_BUFF_DEPTH-1:0] u_bgn,
  input  wire logic [LOG_UOP_BUFF_DEPTH:0]   u_end,
  // vdla_addr_window (the input buffer's element size; the engine always ready)
  input  wire logic                          w_valid,
  input  wire logic [AXI_ADDR_WIDTH-1:0]     w_addr,
  input  wire logic [SIZE_W-1:0]             w_count,
  input  wire logic [AXI_ADDR_WIDTH+1:0]     w_span_end,
  input  wire logic                          w_in_window,
  // vdla_axi_check
  input  wire logic                          x_ar_valid,
  input  wire logic                          x_ar_ready,
  input  wire logic [AXI_ADDR_WIDTH-1:0]     x_ar_addr,
  input  wire logic [7:0]                    x_ar_len,
  input  wire logic                          x_aw_valid,
  input  wire logic                          x_aw_ready,
  input  wire logic [AXI_ADDR_WIDTH-1:0]     x_aw_addr,
  input  wire logic [7:0]                    x_aw_len,
  input  wire logic                          x_w_valid,
  input  wire logic                          x_w_ready,
  input  wire logic [BUS_WIDTH-1:0]          x_w_data,
  input  wire logic                          x_w_last
);
  vdla_fifo #(.WIDTH(8), .DEPTH(2), .STRICT_PUSH(1'b1), .STRICT_POP(1'b1)) u_fifo (
    .clk, .rst_n, .clear(1'b0), .in_valid(f_in_valid), .in_ready(f_in_ready), .in_data(f_in_data),
    .out_valid(f_out_valid), .out_ready(f_out_ready), .out_data(), .count()
  );

  vdla_fifo #(.WIDTH(8), .DEPTH(1)) u_queue (
    .clk, .rst_n, .clear(1'b0), .in_valid(q_in_valid), .in_ready(q_in_ready), .in_data(q_in_data),
    .out_valid(), .out_ready(1'b0), .out_data(), .count()
  );

  vdla_skid #(.WIDTH(8)) u_skid (
    .clk, .rst_n, .clear(1'b0), .in_valid(s_in_valid), .in_ready(s_in_ready), .in_data(s_in_data),
    .out_valid(), .out_ready(1'b0), .out_data()
  );

  vdla_dep_gate #(.HAS_PREV(1'b1), .HAS_NEXT(1'b1)) u_gate (
    .clk, .rst_n, .clear(1'b0), .cmd_valid(g_cmd_valid), .cmd_ready(g_cmd_ready), .cmd_insn(g_cmd_insn),
    .exec_start(g_exec_start), .insn(), .exec_done(g_exec_done),
    .pop_prev_valid(g_pop_prev_valid), .pop_prev_ready(g_pop_prev_ready), .pop_next_valid(1'b0), .pop_next_ready(),
    .push_prev_valid(), .push_prev_ready(1'b1), .push_next_valid(), .push_next_ready(1'b1), .busy()
  );

  vdla_tile_loader #(.ELEM_BITS(INP_ELEM_BITS), .DEPTH(INP_BUFF_DEPTH)) u_loader (
    .clk, .rst_n, .clear(1'b0), .start(t_start), .insn(vdla_pkg::mem_insn_t'(t_insn)), .done(), .busy(),
    .dma_valid(), .dma_ready(1'b0), .dma_addr(), .dma_end(), .dma_count(),
    .dma_in_window(), .win_base('0), .win_limit('0),
    .el_valid(1'b0), .el_ready(), .el_data('0), .wr_en(), .wr_addr(), .wr_data()
  );

  vdla_uop_loop #(.II(1), .DST_W(4), .SRC_W(4), .WGT_W(4)) u_loop (
    .clk, .rst_n, .clear(1'b0), .start(u_start), .fast(1'b0), .uop_bgn(u_bgn), .uop_end(u_end), .iter_out(LOOP_ITER_W'(1)),
    .iter_in(LOOP_ITER_W'(1)), .dst_factor_out('0), .dst_factor_in('0), .src_factor_out('0), .src_factor_in('0),
    .wgt_factor_out('0), .wgt_factor_in('0), .it_valid(), .uop_idx(), .dst_off(), .src_off(), .wgt_off(), .busy()
  );

  vdla_addr_window #(.LOG_EB(LOG_INP_ELEM_BYTES)) u_window (
    .clk, .rst_n, .clear(1'b0), .in_valid(w_valid), .in_ready(), .addr(w_addr), .count(w_count), .span_end(w_span_end),
    .in_window(w_in_window), .out_valid(), .out_ready(1'b1), .base('0), .limit('1), .halt(1'b0), .fault()
  );

  vdla_axi_check u_axi (
    .clk, .rst_n, .clear(1'b0),
    .ar_valid(x_ar_valid), .ar_ready(x_ar_ready), .ar_addr(x_ar_addr), .ar_len(x_ar_len),
    .aw_valid(x_aw_valid), .aw_ready(x_aw_ready), .aw_addr(x_aw_addr), .aw_len(x_aw_len),
    .w_valid(x_w_valid), .w_ready(x_w_ready), .w_data(x_w_data), .w_strb('1), .w_last(x_w_last)
  );
endmodule
/* verilator lint_on PINCONNECTEMPTY */

`default_nettype wire
