// The fault collector: latches the first fault any checker reports (vdla_addr_window,
// vdla_sram_range, vdla_loop_check) into the FAULT registers, and raises `halt`, which stops
// fetch and every command queue and holds back every new DMA command: the machine freezes
// with no transaction outside the window ever issued, while DMA commands already accepted
// (all inside the window) run to their end. Of several faults in one cycle the one of the
// lowest instruction index wins. `clear` (a new start) forgets the fault.
//
// It also counts the DRAM transactions in flight (read beats requested and not yet
// returned, write bursts not yet acknowledged): `bus_busy` keeps a new start from clearing
// the datapath under a burst still in flight after a fault.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_fault #(
  parameter int N = 4
) (
  input  wire logic                clk,
  input  wire logic                rst_n,
  input  wire logic                clear,
  input  wire logic [N-1:0]        src_valid,
  input  wire logic [N-1:0][7:0]   src_cause,
  input  wire logic [N-1:0][31:0]  src_insn,
  input  wire logic [N-1:0][31:0]  src_addr,
  input  wire logic [N-1:0][31:0]  src_iter,
  output logic                     halt,
  output logic                     fault_new,   // one cycle: the fault is latched now
  output logic [7:0]               cause,
  output logic [31:0]              insn,
  output logic [31:0]              addr,
  output logic [31:0]              iter,
  // the AXI4 master, observed
  input  wire logic                ar_fire,
  input  wire logic [7:0]          ar_len,
  input  wire logic                r_fire,
  input  wire logic                aw_fire,
  input  wire logic                b_fire,
  input  wire logic                pending_req,  // an AR/AW/W valid not yet accepted
  output logic                     bus_busy
);
  logic        any;
  logic [31:0] best;
  int          pick;

  always_comb begin
    any  = 1'b0;
    best = '1;
    pick = 0;
    for (int k = 0; k < N; k++) begin
      if (src_valid[k] && (!any || src_insn[k] < best)) begin
        any  = 1'b1;
        best = src_insn[k];
        pick = k;
      end
    end
  end

  assign fault_new = any && !halt && !clear;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      halt  <= 1'b0;
      cause <= '0;
      insn  <= '0;
      addr  <= '0;
      iter  <= '0;
    end else if (fault_new) begin
      halt  <= 1'b1;
      cause <= src_cause[pick];
      insn  <= src_insn[pick];
      addr  <= src_addr[pick];
      iter  <= src_iter[pick];
    end
  end

  // Transactions in flight (not reset by `clear`: the bus does not forget its bursts).
  logic [31:0] rd_beats, wr_bursts;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      rd_beats  <= '0;
      wr_bursts <= '0;
    end else begin
      rd_beats  <= rd_beats + (ar_fire ? 32'(ar_len) + 32'd1 : 32'd0) - 32'(r_fire);
      wr_bursts <= wr_bursts + 32'(aw_fire) - 32'(b_fire);
    end
  end
  assign bus_busy = rd_beats != '0 || wr_bursts != '0 || pending_req;
endmodule

`default_nettype wire
