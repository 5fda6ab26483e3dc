// Formal harness (vdla hw prove, task "window_wr_*"): the store's DRAM write path as vdla_top
// wires it, the address window (vdla_addr_window) in front of the write engine (vdla_dma_wr).
//
// As vdla_formal_window.sv does for reads: the window's base and limit are any BUS_BYTES-aligned
// values, constant during the run; commands are any legal ones (COUNT > 0, element-aligned,
// held until taken), inside the window or not; `halt` is free; the element stream holds each
// element until taken; the AXI slave answers only bursts it accepted. Proven: every AW burst
// lies inside [base, limit) (a_axi_aw_in_window), and so does every W beat: each W beat is
// counted against the open AW burst it belongs to (a_axi_w_in_window), so none is sent
// beyond a burst inside the window. The engine's own properties hold behind the window.
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_formal_window_wr #(
  parameter int ELEM_BITS = 32
) (
  input wire logic                      clk,
  input wire logic                      rst_n,
  input wire logic                      clear,
  input wire logic                      cmd_valid,
  input wire logic [AXI_ADDR_WIDTH-1:0] cmd_addr,
  input wire logic [SIZE_W-1:0]         cmd_count,
  input wire logic                      halt,
  input wire logic                      el_valid,
  input wire logic [ELEM_BITS-1:0]      el_data,
  input wire logic                      aw_ready,
  input wire logic                      w_ready,
  input wire logic                      b_valid_now
);
  localparam int LOG_EB = $clog2(ELEM_BITS / 8);
  (* anyconst *) logic [AXI_ADDR_WIDTH-1:0] base;
  (* anyconst *) logic [AXI_ADDR_WIDTH-1:0] limit;
  logic [AXI_ADDR_WIDTH+1:0] cmd_end;  // the command's end byte
  assign cmd_end = (AXI_ADDR_WIDTH+2)'(cmd_addr) + ((AXI_ADDR_WIDTH+2)'(cmd_count) << LOG_EB);
  logic cmd_ready, win_valid, win_ready, fault, el_ready, aw_valid, w_valid, w_last, b_valid, b_ready, idle;
  logic [AXI_ADDR_WIDTH-1:0] aw_addr;
  logic [7:0] aw_len;
  logic [BUS_WIDTH-1:0] w_data;
  logic [BUS_BYTES-1:0] w_strb;

  vdla_addr_window #(.LOG_EB(LOG_EB)) u_window (
    .clk, .rst_n, .clear, .in_valid(cmd_valid), .in_ready(cmd_ready), .addr(cmd_addr), .count(cmd_count),
    // the client's end byte, a register in vdla_top's clients (their contract, a_window_span_end)
    .span_end(cmd_end),
    // the client's verdict on it, a register in vdla_top's clients (their contract, a_window_verdict)
    .in_window(cmd_addr >= base && cmd_end <= (AXI_ADDR_WIDTH+2)'(limit)),
    .out_valid(win_valid), .out_ready(win_ready), .base, .limit, .halt, .fault);
  vdla_dma_wr #(.ELEM_BITS(ELEM_BITS)) u_dma (
    .clk, .rst_n, .clear, .cmd_valid(win_valid), .cmd_ready(win_ready), .cmd_addr, .cmd_count,
    .el_valid, .el_ready, .el_data, .aw_valid, .aw_ready, .aw_addr, .aw_len, .w_valid, .w_ready, .w_data,
    .w_strb, .w_last, .b_valid, .b_ready, .idle);

  // The slave answers only bursts it accepted.
  logic [7:0] b_owed;
  assign b_valid = b_valid_now && b_owed != '0;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) b_owed <= '0;
    else b_owed <= b_owed + 8'(aw_valid && aw_ready) - 8'(b_valid && b_ready);
  end

`ifdef FORMAL
  initial assume (!rst_n);
  localparam int AW2 = AXI_ADDR_WIDTH + 1;
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  // The bursts on AW whose W beats are not all sent, oldest first (a queue as deep as the bursts
  // the engine may have open). A burst's W beats follow its AW in order (AXI4, one ID), so the
  // beat being sent belongs to the oldest open burst; f_beat is its address.
  localparam int QD = 16;  // > DMA_MAX_BURSTS of every preset (the engine's len FIFO bounds it)
  logic [AW2-1:0] f_q_start [QD];
  logic [AW2-1:0] f_q_end [QD];
  logic [3:0]     f_head, f_tail;
  logic [4:0]     f_open;
  logic [AW2-1:0] f_beat;
  logic           f_first_beat;  // the next W beat opens the oldest burst
  logic [AW2-1:0] f_cur_beat;    // the address of the W beat offered now
  assign f_cur_beat = f_first_beat ? f_q_start[f_head] : f_beat;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      {f_head, f_tail, f_open, f_beat} <= '0;
      f_first_beat <= 1'b1;
    end else begin
      if (aw_valid && aw_ready) begin
        f_q_start[f_tail] <= AW2'(aw_addr);
        f_q_end[f_tail]   <= AW2'(aw_addr) + ((AW2'(aw_len) + 1'b1) << LOG_BUS_BYTES);
        f_tail <= f_tail + 1'b1;
      end
      f_open <= f_open + 5'(aw_valid && aw_ready) - 5'(w_valid && w_ready && w_last);
      if (w_valid && w_ready) begin
        f_beat       <= f_cur_beat + AW2'(BUS_BYTES);
        f_first_beat <= w_last;
        if (w_last) f_head <= f_head + 1'b1;
      end
    end
  end
  always_ff @(posedge clk) begin
    assume (base[LOG_BUS_BYTES-1:0] == '0 && limit[LOG_BUS_BYTES-1:0] == '0);
    if (rst_n && !clear) begin
      if (cmd_valid) assume (cmd_count != '0 && (LOG_EB == 0 || 32'(cmd_addr) % (1 << LOG_EB) == 0));
      if (f_past && $past(rst_n && !clear && cmd_valid && !cmd_ready))
        assume (cmd_valid && $stable(cmd_addr) && $stable(cmd_count));
      if (f_past && $past(rst_n && !clear && el_valid && !el_ready))
        assume (el_valid && $stable(el_data));
      // the AXI master writes only inside the window: every byte of every AW burst ...
      if (aw_valid) a_axi_aw_in_window: assert (aw_addr >= base
          && {1'b0, aw_addr} + (((AXI_ADDR_WIDTH+1)'(aw_len) + 1'b1) << LOG_BUS_BYTES) <= {1'b0, limit});
      // ... and every W beat, at the address its burst gives it
      if (w_valid) a_axi_w_in_window: assert (f_open != '0 && 32'(f_open) <= QD && f_cur_beat >= AW2'(base)
          && f_cur_beat + AW2'(BUS_BYTES) <= f_q_end[f_head] && f_q_end[f_head] <= AW2'(limit));
    end
  end
`endif
endmodule

`default_nettype wire
