// One SRAM buffer: one synchronous read port and one write port (simple dual port),
// written so that synthesis infers block RAM.
//
// With WRITE_THROUGH, a read of the address written in the same cycle returns the new
// data (a bypass register beside the RAM). The accumulator buffer uses it so that a
// GEMM or ALU micro-op reading an accumulator the previous micro-op writes in that very
// cycle sees the sequential result without stalling.
`default_nettype none

module vdla_sram #(
  parameter int WIDTH = 8,
  parameter int DEPTH = 16,
  parameter bit WRITE_THROUGH = 1'b0
) (
  input  wire logic                     clk,
  input  wire logic                     rd_en,
  input  wire logic [$clog2(DEPTH)-1:0] rd_addr,
  output logic      [WIDTH-1:0]         rd_data,   // valid the cycle after rd_en
  input  wire logic                     wr_en,
  input  wire logic [$clog2(DEPTH)-1:0] wr_addr,
  input  wire logic [WIDTH-1:0]         wr_data
);
  if (DEPTH < 2 || (DEPTH & (DEPTH - 1)) != 0) begin : g_bad_depth
    $fatal(1, "vdla_sram: DEPTH = %0d must be a power of two >= 2", DEPTH);
  end

  logic [WIDTH-1:0] mem [DEPTH];
  logic [WIDTH-1:0] q;

  always_ff @(posedge clk) begin
    if (wr_en) mem[wr_addr] <= wr_data;
    if (rd_en) q <= mem[rd_addr];
  end

  if (WRITE_THROUGH) begin : g_bypass
    logic             hit;
    logic [WIDTH-1:0] wr_q;
    always_ff @(posedge clk) begin
      if (rd_en) begin
        hit  <= wr_en && wr_addr == rd_addr;
        wr_q <= wr_data;
      end
    end
    assign rd_data = hit ? wr_q : q;
  end else begin : g_plain
    assign rd_data = q;
  end
endmodule

`default_nettype wire
