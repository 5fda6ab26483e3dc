// One vdla_lut_mul per multiplier value: for the x on the input, p_all holds x * y for
// every y in [0, 2^YW) (as unsigned bit patterns), PW bits each, y = 0 in the low bits.
`default_nettype none

module tb_lut_mul #(
  parameter int XW = 8,
  parameter int YW = 8
) (
  input  wire logic [XW-1:0]                  x,
  output logic      [(2**YW)*(XW+YW)-1:0]     p_all
);
  for (genvar y = 0; y < 2 ** YW; y++) begin : g_y
    vdla_lut_mul #(.XW(XW), .YW(YW)) u_mul (.x, .y(YW'(y)), .p(p_all[y * (XW + YW) +: XW + YW]));
  end
endmodule

`default_nettype wire
