// Two dependency gates joined by two token queues: A (like load: a next stage only) and
// B (like compute: a previous stage only). The executors are driven by the test.
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module tb_dep_queue (
  input  wire logic                 clk,
  input  wire logic                 rst_n,
  input  wire logic                 a_cmd_valid,
  output logic                      a_cmd_ready,
  input  wire logic [INSN_BITS-1:0] a_cmd_insn,
  output logic                      a_exec_start,
  input  wire logic                 a_exec_done,
  input  wire logic                 b_cmd_valid,
  output logic                      b_cmd_ready,
  input  wire logic [INSN_BITS-1:0] b_cmd_insn,
  output logic                      b_exec_start,
  input  wire logic                 b_exec_done
);
  logic a2b_push, a2b_ready, a2b_valid, a2b_pop, b2a_push, b2a_ready, b2a_valid, b2a_pop;
  /* verilator lint_off PINCONNECTEMPTY */
  vdla_dep_gate #(.HAS_PREV(1'b0), .HAS_NEXT(1'b1)) u_a (
    .clk, .rst_n, .clear(1'b0), .cmd_valid(a_cmd_valid), .cmd_ready(a_cmd_ready), .cmd_insn(a_cmd_insn),
    .exec_start(a_exec_start), .insn(), .exec_done(a_exec_done),
    .pop_prev_valid(1'b0), .pop_prev_ready(), .pop_next_valid(b2a_valid), .pop_next_ready(b2a_pop),
    .push_prev_valid(), .push_prev_ready(1'b0), .push_next_valid(a2b_push), .push_next_ready(a2b_ready), .busy()
  );
  vdla_dep_gate #(.HAS_PREV(1'b1), .HAS_NEXT(1'b0)) u_b (
    .clk, .rst_n, .clear(1'b0), .cmd_valid(b_cmd_valid), .cmd_ready(b_cmd_ready), .cmd_insn(b_cmd_insn),
    .exec_start(b_exec_start), .insn(), .exec_done(b_exec_done),
    .pop_prev_valid(a2b_valid), .pop_prev_ready(a2b_pop), .pop_next_valid(1'b0), .pop_next_ready(),
    .push_prev_valid(b2a_push), .push_prev_ready(b2a_ready), .push_next_valid(), .push_next_ready(1'b0), .busy()
  );
  vdla_fifo #(.WIDTH(1), .DEPTH(DEP_QUEUE_DEPTH)) u_a2b (
    .clk, .rst_n, .clear(1'b0), .in_valid(a2b_push), .in_ready(a2b_ready), .in_data(1'b1),
    .out_valid(a2b_valid), .out_ready(a2b_pop), .out_data(), .count()
  );
  vdla_fifo #(.WIDTH(1), .DEPTH(DEP_QUEUE_DEPTH)) u_b2a (
    .clk, .rst_n, .clear(1'b0), .in_valid(b2a_push), .in_ready(b2a_ready), .in_data(1'b1),
    .out_valid(b2a_valid), .out_ready(b2a_pop), .out_data(), .count()
  );
  /* verilator lint_on PINCONNECTEMPTY */
endmodule

`default_nettype wire
