// Formal harness (vdla hw prove, task "tokens"): two dependency gates joined by two real
// token queues, as load and compute (or compute and store) are in vdla_top.
//
// The producer P pushes "next" tokens into q_fwd, which the consumer C pops as "prev"
// tokens; C pushes "prev" tokens into q_back, which P pops as "next". Commands and the
// executors' latencies are free (any instruction flags, any delay): the commands only
// keep the valid/ready contract and an executor reports done only while it runs. Proven
// here, beside the gates' and FIFOs' own properties, which this harness turns from
// assumptions into assertions: tokens are conserved, pushed = popped + in the queue.
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_formal_tokens (
  input wire logic                 clk,
  input wire logic                 rst_n,
  input wire logic                 clear,
  input wire logic                 p_cmd_valid,
  input wire logic [INSN_BITS-1:0] p_cmd_insn,
  input wire logic                 p_done_now,
  input wire logic                 c_cmd_valid,
  input wire logic [INSN_BITS-1:0] c_cmd_insn,
  input wire logic                 c_done_now
);
  localparam int CW = $clog2(DEP_QUEUE_DEPTH + 1);
  logic p_cmd_ready, c_cmd_ready, p_start, c_start, p_done, c_done, p_run, c_run;
  logic fwd_in_valid, fwd_in_ready, fwd_out_valid, fwd_out_ready;
  logic back_in_valid, back_in_ready, back_out_valid, back_out_ready;
  logic [CW-1:0] fwd_count, back_count;
  /* verilator lint_off PINCONNECTEMPTY */
  vdla_dep_gate #(.HAS_PREV(1'b0), .HAS_NEXT(1'b1)) u_p (
    .clk, .rst_n, .clear, .cmd_valid(p_cmd_valid), .cmd_ready(p_cmd_ready), .cmd_insn(p_cmd_insn),
    .exec_start(p_start), .insn(), .exec_done(p_done),
    .pop_prev_valid(1'b0), .pop_prev_ready(), .pop_next_valid(back_out_valid), .pop_next_ready(back_out_ready),
    .push_prev_valid(), .push_prev_ready(1'b0), .push_next_valid(fwd_in_valid), .push_next_ready(fwd_in_ready),
    .busy());
  vdla_dep_gate #(.HAS_PREV(1'b1), .HAS_NEXT(1'b0)) u_c (
    .clk, .rst_n, .clear, .cmd_valid(c_cmd_valid), .cmd_ready(c_cmd_ready), .cmd_insn(c_cmd_insn),
    .exec_start(c_start), .insn(), .exec_done(c_done),
    .pop_prev_valid(fwd_out_valid), .pop_prev_ready(fwd_out_ready), .pop_next_valid(1'b0), .pop_next_ready(),
    .push_prev_valid(back_in_valid), .push_prev_ready(back_in_ready), .push_next_valid(), .push_next_ready(1'b0),
    .busy());
  vdla_fifo #(.WIDTH(1), .DEPTH(DEP_QUEUE_DEPTH)) u_fwd (
    .clk, .rst_n, .clear, .in_valid(fwd_in_valid), .in_ready(fwd_in_ready), .in_data(1'b1),
    .out_valid(fwd_out_valid), .out_ready(fwd_out_ready), .out_data(), .count(fwd_count));
  vdla_fifo #(.WIDTH(1), .DEPTH(DEP_QUEUE_DEPTH)) u_back (
    .clk, .rst_n, .clear, .in_valid(back_in_valid), .in_ready(back_in_ready), .in_data(1'b1),
    .out_valid(back_out_valid), .out_ready(back_out_ready), .out_data(), .count(back_count));
  /* verilator lint_on PINCONNECTEMPTY */

  // Executors of any latency >= 1: done only while running.
  assign p_done = p_run && p_done_now;
  assign c_done = c_run && c_done_now;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      p_run <= 1'b0;
      c_run <= 1'b0;
    end else begin
      if (p_start) p_run <= 1'b1; else if (p_done) p_run <= 1'b0;
      if (c_start) c_run <= 1'b1; else if (c_done) c_run <= 1'b0;
    end
  end

`ifdef FORMAL
  initial assume (!rst_n);
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  // The command queues keep the valid/ready contract (vdla_fifo's own proof).
  always_ff @(posedge clk) begin
    if (f_past && rst_n && !clear && $past(rst_n && !clear)) begin
      if ($past(p_cmd_valid && !p_cmd_ready)) assume (p_cmd_valid && $stable(p_cmd_insn));
      if ($past(c_cmd_valid && !c_cmd_ready)) assume (c_cmd_valid && $stable(c_cmd_insn));
    end
  end

  // Tokens pushed and popped through each queue since the last clear (modulo 2^8).
  logic [7:0] f_fwd_push, f_fwd_pop, f_back_push, f_back_pop;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      {f_fwd_push, f_fwd_pop, f_back_push, f_back_pop} <= '0;
    end else begin
      f_fwd_push  <= f_fwd_push + 8'(fwd_in_valid && fwd_in_ready);
      f_fwd_pop   <= f_fwd_pop + 8'(fwd_out_valid && fwd_out_ready);
      f_back_push <= f_back_push + 8'(back_in_valid && back_in_ready);
      f_back_pop  <= f_back_pop + 8'(back_out_valid && back_out_ready);
    end
  end
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      // conserved: every token pushed is popped or still queued, none made up, none lost
      f_tok_conserved: assert (f_fwd_push - f_fwd_pop == 8'(fwd_count) && f_back_push - f_back_pop == 8'(back_count));
    end
  end
`endif
endmodule

`default_nettype wire
