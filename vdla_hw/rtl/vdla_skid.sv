// A registered slice (skid buffer) on a valid/ready stream: both the output (valid, data)
// and the input's ready come straight from registers, so neither handshake crosses the
// slice combinationally. It holds two entries: the output register and the skid
// register that catches the word accepted in the cycle the output stalls, so a stream
// keeps one word per cycle. A word accepted in cycle t is at the output in cycle t+1.
`default_nettype none

module vdla_skid #(
  parameter int WIDTH = 8
) (
  input  wire logic             clk,
  input  wire logic             rst_n,
  input  wire logic             clear,
  input  wire logic             in_valid,
  output logic                  in_ready,
  input  wire logic [WIDTH-1:0] in_data,
  output logic                  out_valid,
  input  wire logic             out_ready,
  output logic [WIDTH-1:0]      out_data
);
  logic             skid_valid;
  logic [WIDTH-1:0] skid_data;

  if (WIDTH < 1) begin : g_bad_width
    $fatal(1, "vdla_skid: WIDTH = %0d must be at least 1", WIDTH);
  end

  // Ready while the skid register is free: a word taken now has a place even if the output stalls.
  assign in_ready = !skid_valid;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      out_valid  <= 1'b0;
      skid_valid <= 1'b0;
    end else if (!out_valid || out_ready) begin
      // The output register takes the skid's word first (order), else the input's.
      out_valid  <= skid_valid || in_valid;
      skid_valid <= 1'b0;
    end else if (in_valid && in_ready) begin
      skid_valid <= 1'b1;
    end
  end

  always_ff @(posedge clk) begin
    if (!out_valid || out_ready) out_data <= skid_valid ? skid_data : in_data;
    if (out_valid && !out_ready && in_valid && in_ready) skid_data <= in_data;
  end

`ifndef SYNTHESIS
  // Simulation-only invariants (Verilator --assert; yosys defines SYNTHESIS).
  a_skid_holds_output: assert property (@(posedge clk) disable iff (!rst_n || clear) skid_valid |-> out_valid)
    else $error("vdla_skid a_skid_holds_output: the skid register holds a word while the output is empty");
  a_skid_in_stable: assert property (@(posedge clk) disable iff (!rst_n || clear)
                                     in_valid && !in_ready |=> in_valid && $stable(in_data))
    else $error("vdla_skid a_skid_in_stable: the producer withdrew or changed a word before the slice accepted it");
`endif
endmodule

`default_nettype wire
