// Formal harness (vdla hw prove, tasks "live_*"): the micro-op SRAM, holding only the entries the
// program writes. The live tasks put it in place of vdla_compute's u_uop_sram after elaboration
// (yosys `chtype`; vdla_hw/formal/tasks.py, live_tasks): the ports and read timing of that
// vdla_sram instance (UOP_BITS wide, UOP_BUFF_DEPTH deep, OUT_REG), but entries at or past KEEP (the
// include file, derived from the program's LOAD UOPs) are not stored, and a read of one returns a
// value the solver picks, every read anew.
//
// Sound for the live tasks' safety properties: every run of the real machine is a run of this
// one (a kept entry behaves as vdla_sram's; any other read returns what the real SRAM would -- its
// power-up value or a later write -- as one choice of the free value), so a bound that holds here
// holds for vdla_sram. A machine that reads an entry the program never wrote would fail here with
// that read in the counterexample, not pass. What it saves: the 2^LOG_UOP_BUFF_DEPTH x 32 bits of
// free power-up memory the solver otherwise carries through every frame.
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

// No parameters: the cell it replaces is an elaborated instance, which carries none.
module vdla_formal_uop_sram (
  input  wire logic                              clk,
  input  wire logic                              rd_en,
  input  wire logic [$clog2(UOP_BUFF_DEPTH)-1:0] rd_addr,
  output logic      [UOP_BITS-1:0]               rd_data,
  input  wire logic                              wr_en,
  input  wire logic [$clog2(UOP_BUFF_DEPTH)-1:0] wr_addr,
  input  wire logic [UOP_BITS-1:0]               wr_data
);
`include "vdla_formal_uop_sram_keep.svh"
  localparam int WIDTH = UOP_BITS;
  localparam int KW = KEEP > 1 ? $clog2(KEEP) : 1;

  logic [WIDTH-1:0] mem [KEEP];
  logic [WIDTH-1:0] q, rd_now;
  (* anyseq *) logic [WIDTH-1:0] free;

  always_ff @(posedge clk) begin
    if (wr_en && 32'(wr_addr) < KEEP) mem[KW'(wr_addr)] <= wr_data;
    if (rd_en) q <= 32'(rd_addr) < KEEP ? mem[KW'(rd_addr)] : free;
  end

  // vdla_compute's instance: no write-through, the output register (OUT_REG)
  assign rd_now = q;
  always_ff @(posedge clk) rd_data <= rd_now;
endmodule

`default_nettype wire
