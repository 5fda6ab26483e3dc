// Formal harness (vdla hw prove, tasks "fifo_pushes_*"): a FIFO holds exactly the entries pushed
// into it and not yet popped -- count == pushes - pops since reset or clear -- so it never holds
// more than it was pushed. Step 1 of "the live tasks' reduced queues never fill" (docs/rtl.md,
// "The reduced queues, compositionally"): a queue that receives at most DEPTH pushes in a run
// therefore has room for every one of them.
//
// The FIFO's producer/consumer contract is assumed (VDLA_FORMAL_TOP_FIFO, as in the fifo_* tasks):
// an offer is held until taken; the strict sides never push into a full / pop an empty FIFO.
`default_nettype none

module vdla_formal_fifo_count #(
  parameter int DEPTH = 8,
  parameter bit STRICT_PUSH = 1'b0,
  parameter bit STRICT_POP = 1'b0
) (
  input wire logic       clk,
  input wire logic       rst_n,
  input wire logic       clear,
  input wire logic       in_valid,
  input wire logic [3:0] in_data,
  input wire logic       out_ready
);
  localparam int CNT_W = $clog2(DEPTH + 1);
  logic             in_ready, out_valid;
  logic [3:0]       out_data;
  logic [CNT_W-1:0] count;

  vdla_fifo #(.WIDTH(4), .DEPTH(DEPTH), .STRICT_PUSH(STRICT_PUSH), .STRICT_POP(STRICT_POP)) u_fifo (
    .clk, .rst_n, .clear, .in_valid, .in_ready, .in_data, .out_valid, .out_ready, .out_data, .count
  );

  // Handshakes since reset or clear, counted at 32 bits (a run pushes far fewer entries).
  logic [31:0] f_pushes, f_pops;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      f_pushes <= '0;
      f_pops   <= '0;
    end else begin
      f_pushes <= f_pushes + 32'(in_valid && in_ready);
      f_pops   <= f_pops + 32'(out_valid && out_ready);
    end
  end
  always_ff @(posedge clk) begin
    // modulo 2^32 (the counters wrap, a run does not come near): count = pushes - pops <= pushes
    if (rst_n && !clear) f_fifo_pushes: assert (32'(count) == f_pushes - f_pops);
  end
endmodule

`default_nettype wire
