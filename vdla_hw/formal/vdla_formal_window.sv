// Formal harness (vdla hw prove, task "window_rd_*"): a DMA command path as vdla_top wires it,
// the address window (vdla_addr_window) in front of a read engine (vdla_dma_rd).
//
// The window's base and limit are any BUS_BYTES-aligned values, constant during the run (a
// driver writes them before start); commands are any legal ones (COUNT > 0, element-aligned,
// held until taken), inside the window or not; `halt` is free. The AXI slave returns only the
// beats requested. Proven: every read burst the engine issues lies inside [base, limit), so
// the AXI master never leaves the window, and the engine's own properties hold behind it.
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_formal_window #(
  parameter int ELEM_BITS = 64
) (
  input wire logic                      clk,
  input wire logic                      rst_n,
  input wire logic                      clear,
  input wire logic                      cmd_valid,
  input wire logic [AXI_ADDR_WIDTH-1:0] cmd_addr,
  input wire logic [SIZE_W-1:0]         cmd_count,
  input wire logic                      halt,
  input wire logic                      ar_ready,
  input wire logic                      r_valid_now,
  input wire logic [BUS_WIDTH-1:0]      r_data,
  input wire logic                      el_ready
);
  localparam int LOG_EB = $clog2(ELEM_BITS / 8);
  (* anyconst *) logic [AXI_ADDR_WIDTH-1:0] base;
  (* anyconst *) logic [AXI_ADDR_WIDTH-1:0] limit;
  logic [AXI_ADDR_WIDTH+1:0] cmd_end;  // the command's end byte
  assign cmd_end = (AXI_ADDR_WIDTH+2)'(cmd_addr) + ((AXI_ADDR_WIDTH+2)'(cmd_count) << LOG_EB);
  logic cmd_ready, w_valid, w_ready, fault, ar_valid, r_valid, r_ready, el_valid;
  logic [AXI_ADDR_WIDTH-1:0] ar_addr;
  logic [7:0] ar_len;
  logic [ELEM_BITS-1:0] el_data;

  vdla_addr_window #(.LOG_EB(LOG_EB)) u_window (
    .clk, .rst_n, .clear, .in_valid(cmd_valid), .in_ready(cmd_ready), .addr(cmd_addr), .count(cmd_count),
    // the client's end byte, a register in vdla_top's clients (their contract, a_window_span_end)
    .span_end(cmd_end),
    // the client's verdict on it, a register in vdla_top's clients (their contract, a_window_verdict)
    .in_window(cmd_addr >= base && cmd_end <= (AXI_ADDR_WIDTH+2)'(limit)),
    .out_valid(w_valid), .out_ready(w_ready), .base, .limit, .halt, .fault);
  vdla_dma_rd #(.ELEM_BITS(ELEM_BITS)) u_dma (
    .clk, .rst_n, .clear, .cmd_valid(w_valid), .cmd_ready(w_ready), .cmd_addr, .cmd_count,
    .ar_valid, .ar_ready, .ar_addr, .ar_len, .r_valid, .r_ready, .r_data, .el_valid, .el_ready, .el_data);

  // The slave returns only beats it was asked for.
  logic [AXI_ADDR_WIDTH:0] owed;
  assign r_valid = r_valid_now && owed != '0;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) owed <= '0;
    else owed <= owed + (ar_valid && ar_ready ? (AXI_ADDR_WIDTH+1)'(ar_len) + 1'b1 : '0) - (AXI_ADDR_WIDTH+1)'(r_valid && r_ready);
  end

`ifdef FORMAL
  initial assume (!rst_n);
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  always_ff @(posedge clk) begin
    assume (base[LOG_BUS_BYTES-1:0] == '0 && limit[LOG_BUS_BYTES-1:0] == '0);
    if (rst_n && !clear) begin
      if (cmd_valid) assume (cmd_count != '0 && (LOG_EB == 0 || 32'(cmd_addr) % (1 << LOG_EB) == 0));
      if (f_past && $past(rst_n && !clear && cmd_valid && !cmd_ready))
        assume (cmd_valid && $stable(cmd_addr) && $stable(cmd_count));
      // the AXI master never leaves the window: every byte of every burst is in [base, limit)
      if (ar_valid) a_axi_in_window: assert (ar_addr >= base
          && {1'b0, ar_addr} + (((AXI_ADDR_WIDTH+1)'(ar_len) + 1'b1) << LOG_BUS_BYTES) <= {1'b0, limit});
    end
  end
`endif
endmodule

`default_nettype wire
