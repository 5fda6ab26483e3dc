// Range check of a sequential SRAM walk: an instruction that writes (LOAD) or reads (STORE)
// consecutive elements from `base` steps once per `step`; the walk's element index is kept
// unwrapped, and `fault` pulses at the first step whose index is DEPTH or more (the SRAM
// address itself wraps there). `elem` holds that index.
`default_nettype none

module vdla_sram_range #(
  parameter int DEPTH = 16,
  parameter int BASE_W = 16,
  parameter int W = 34
) (
  input  wire logic              clk,
  input  wire logic              rst_n,
  input  wire logic              clear,
  input  wire logic              start,
  input  wire logic [BASE_W-1:0] base,
  input  wire logic              step,
  output logic                   fault,
  output logic [W-1:0]           elem
);
  logic [W-1:0] at;
  logic         seen;  // this walk already faulted: report only its first bad element

  assign fault = step && at >= W'(DEPTH) && !seen;
  assign elem  = at;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      at   <= '0;
      seen <= 1'b0;
    end else if (start) begin
      at   <= W'(base);
      seen <= 1'b0;
    end else if (step) begin
      at <= at + 1'b1;
      if (fault) seen <= 1'b1;
    end
  end
endmodule

`default_nettype wire
