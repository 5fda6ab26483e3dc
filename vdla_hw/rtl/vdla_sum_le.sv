// `a + b <= lim` for unsigned W-bit operands, as one carry-save layer and one carry chain: the
// sum is never formed and then compared (two carry chains in series). a + b + ~lim, taken at
// W + 1 bits, is a + b - lim - 1 + 2^(W+1); it is below 2^(W+1) -- its bit W + 1 is clear --
// exactly when a + b <= lim. The three operands are first reduced to two (per bit: the sum
// a ^ b ^ c and the carry maj(a, b, c), one LUT level), then added.
// Used where the address window's verdict on a DMA command's end byte must be a register
// loaded in the same cycle as the command (vdla_tile_loader, vdla_store, vdla_fetch).
`default_nettype none

module vdla_sum_le #(
  parameter int W = 32
) (
  input  wire logic [W-1:0] a,
  input  wire logic [W-1:0] b,
  input  wire logic [W-1:0] lim,
  output logic              le
);
  localparam int N = W + 1;
  logic [N-1:0] x, y, z, s, k;
  logic [N:0]   sum;
  assign x   = {1'b0, a};
  assign y   = {1'b0, b};
  assign z   = ~{1'b0, lim};
  assign s   = x ^ y ^ z;
  assign k   = (x & y) | (x & z) | (y & z);
  assign sum = {1'b0, s} + {k, 1'b0};
  assign le  = !sum[N];
endmodule

`default_nettype wire
