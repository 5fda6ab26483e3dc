// One SRAM buffer: one synchronous read port and one write port (simple dual port),
// written so that synthesis infers block RAM.
//
// With WRITE_THROUGH, a read of the address written in the same cycle returns the new
// data (a bypass register beside the RAM). The accumulator buffer uses it so that a
// GEMM or ALU micro-op reading an accumulator the previous micro-op writes in that very
// cycle sees the sequential result without stalling.
//
// With OUT_REG, the read data is registered once more (valid two cycles after rd_en): on an
// ECP5 a block RAM's clock-to-out is ~5.6 ns before any logic sees the word, so a buffer whose
// word feeds adders (the micro-op buffer: GEMM and ALU add the loop offsets to its indices)
// hands them a flop's output instead. Its reader presents each address a cycle earlier to keep
// its latency (vdla_uop_loop's `uop_idx_next`).
`default_nettype none

module vdla_sram #(
  parameter int WIDTH = 8,
  parameter int DEPTH = 16,
  parameter bit WRITE_THROUGH = 1'b0,
  parameter bit OUT_REG = 1'b0,
  parameter bit NO_COLLISION = 1'b0  // no read whose data is used meets a write to its address
) (
  input  wire logic                     clk,
  input  wire logic                     rd_en,
  input  wire logic [$clog2(DEPTH)-1:0] rd_addr,
  output logic      [WIDTH-1:0]         rd_data,   // valid the cycle after rd_en (two with OUT_REG)
  input  wire logic                     wr_en,
  input  wire logic [$clog2(DEPTH)-1:0] wr_addr,
  input  wire logic [WIDTH-1:0]         wr_data
);
  if (DEPTH < 2 || (DEPTH & (DEPTH - 1)) != 0) begin : g_bad_depth
    $fatal(1, "vdla_sram: DEPTH = %0d must be a power of two >= 2", DEPTH);
  end

  logic [WIDTH-1:0] q, rd_now;

  if (WRITE_THROUGH) begin : g_ram_wt
    // The bypass below answers every read of the address written in the same cycle, so what
    // the RAM itself returns then is never used: `no_rw_check` tells yosys so. Without it
    // yosys builds its own soft collision logic beside the block RAM (a second address compare
    // in front of a flop, a 128-bit data register and mux on tiny's accumulator buffer).
    (* no_rw_check *) logic [WIDTH-1:0] mem [DEPTH];
    always_ff @(posedge clk) begin
      if (wr_en) mem[wr_addr] <= wr_data;
      if (rd_en) q <= mem[rd_addr];
    end
  end else if (NO_COLLISION) begin : g_ram_nc
    (* no_rw_check *) logic [WIDTH-1:0] mem [DEPTH];
    always_ff @(posedge clk) begin
      if (wr_en) mem[wr_addr] <= wr_data;
      if (rd_en) q <= mem[rd_addr];
    end
  end else begin : g_ram
    logic [WIDTH-1:0] mem [DEPTH];
    always_ff @(posedge clk) begin
      if (wr_en) mem[wr_addr] <= wr_data;
      if (rd_en) q <= mem[rd_addr];
    end
  end

  if (WRITE_THROUGH) begin : g_bypass
    // The addresses are registered and compared after the clock edge, beside the RAM's own
    // clock-to-out (which the compare beats), not in front of a hit flop: the read address is
    // a sum in the executors (the ALU's micro-op field + loop offset), and sum -> compare ->
    // flop was the ECP5 build's critical path on one seed (docs/fpga_ecp5.md). Same value,
    // same cycle.
    logic                     wr_en_q;
    logic [$clog2(DEPTH)-1:0] wr_addr_q, rd_addr_q;
    logic [WIDTH-1:0]         wr_q;
    always_ff @(posedge clk) begin
      if (rd_en) begin
        wr_en_q   <= wr_en;
        wr_addr_q <= wr_addr;
        rd_addr_q <= rd_addr;
        wr_q      <= wr_data;
      end
    end
    assign rd_now = wr_en_q && wr_addr_q == rd_addr_q ? wr_q : q;
  end else begin : g_plain
    assign rd_now = q;
  end

  if (OUT_REG) begin : g_out_reg
    always_ff @(posedge clk) rd_data <= rd_now;
  end else begin : g_no_out_reg
    assign rd_data = rd_now;
  end
endmodule

`default_nettype wire
