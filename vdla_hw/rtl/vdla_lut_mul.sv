// A signed XW x YW multiplier that synthesis builds from LUTs, never from a DSP slice.
//
// Synthesis (`SYNTHESIS` defined: yosys's read_verilog defines it, as do the usual FPGA
// tools) sees shift-and-add over pairs of multiplier bits: no `*`, so neither yosys (which
// has no per-operator DSP attribute) nor any other tool infers a DSP for it. Rows 2j and
// 2j+1 share one adder (x or 2x selected by two bits of y); the top bit of y weighs
// -2^(YW-1); the pair sums are added as a balanced tree.
//
// Simulation sees the same product as one `*`: Verilator evaluates the shift-and-add as
// dozens of wide operations per product, which made the whole-design model of `default`
// (96 such products) ~3x slower per cycle. The two bodies are proven equal for every pair
// of YW = XW = 8 operands by tests/rtl/modules/lut_mul, which simulates the synthesis body
// (built with +define+SYNTHESIS).
`default_nettype none

module vdla_lut_mul #(
  parameter int XW = 8,
  parameter int YW = 8   // even: the multiplier bits are taken in pairs
) (
  input  wire logic [XW-1:0]    x,
  input  wire logic [YW-1:0]    y,
  output logic      [XW+YW-1:0] p   // x * y, both signed (two's complement), exact
);
  localparam int PW = XW + YW;

  if (XW < 1 || YW < 2 || YW % 2 != 0) begin : g_bad_width
    $fatal(1, "vdla_lut_mul: XW = %0d, YW = %0d; XW must be >= 1 and YW even and >= 2", XW, YW);
  end

`ifdef SYNTHESIS
  localparam int NPAIR = YW / 2;
  function automatic logic [PW-1:0] lut_product(input logic [XW-1:0] a, input logic [YW-1:0] b);
    logic signed [XW+1:0]     a1, a2, pair;
    logic [NPAIR-1:0][PW-1:0] part;
    a1 = (XW + 2)'($signed(a));
    a2 = a1 <<< 1;
    for (int j = 0; j < NPAIR; j++) begin
      if (j < NPAIR - 1) pair = (b[2 * j] ? a1 : '0) + (b[2 * j + 1] ? a2 : '0);
      else pair = (b[2 * j] ? a1 : '0) - (b[2 * j + 1] ? a2 : '0);
      part[j] = PW'(pair);  // sign-extended
    end
    for (int step = 1; step < NPAIR; step *= 2)
      for (int j = 0; j + step < NPAIR; j += 2 * step) part[j] = part[j] + (part[j + step] << (2 * step));
    lut_product = part[0];
  endfunction

  assign p = lut_product(x, y);
`else
  assign p = PW'($signed(x) * $signed(y));
`endif
endmodule

`default_nettype wire
