// A valid/ready FIFO on one simple-dual-port memory with a registered output.
//
// Used for the three command queues and the four dependency-token queues (WIDTH 1),
// and inside the DMA engines. The memory is read synchronously into the output
// register, so it infers block RAM (or LUT RAM when small). An entry pushed in cycle t
// is visible at the output in cycle t+2. `count` counts every entry held, including
// the one in the output register; the FIFO accepts while count < DEPTH, so it holds
// exactly DEPTH entries as the queue depths of the config say.
//
// STRICT_PUSH / STRICT_POP declare that the producer only pushes when there is room and
// the consumer only pops when there is an entry (they keep count themselves); the
// simulation-only assertions then flag a push into a full FIFO (overflow) or a pop of an
// empty one (underflow). See docs/rtl.md, "Assertions".
`default_nettype none

module vdla_fifo #(
  parameter int WIDTH = 8,
  parameter int DEPTH = 4,
  /* verilator lint_off UNUSEDPARAM */  // read only by the simulation-only assertions
  parameter bit STRICT_PUSH = 1'b0,
  parameter bit STRICT_POP = 1'b0
  /* verilator lint_on UNUSEDPARAM */
) (
  input  wire logic                       clk,
  input  wire logic                       rst_n,
  input  wire logic                       clear,      // drop every entry (synchronous)
  input  wire logic                       in_valid,
  output logic                            in_ready,
  input  wire logic [WIDTH-1:0]           in_data,
  output logic                            out_valid,
  input  wire logic                       out_ready,
  output logic [WIDTH-1:0]                out_data,
  output logic [$clog2(DEPTH+1)-1:0]      count
);
  localparam int CNT_W = $clog2(DEPTH + 1);
  localparam int PTR_W = DEPTH > 1 ? $clog2(DEPTH) : 1;

  if (WIDTH < 1) begin : g_bad_width
    $fatal(1, "vdla_fifo: WIDTH = %0d must be at least 1", WIDTH);
  end
  if (DEPTH < 1) begin : g_bad_depth
    $fatal(1, "vdla_fifo: DEPTH = %0d must be at least 1", DEPTH);
  end

  (* no_rw_check *) logic [WIDTH-1:0] mem [DEPTH];
  logic [PTR_W-1:0] wptr, rptr;
  logic [CNT_W-1:0] stored;  // entries in the memory, not yet in the output register
  logic push, load;

  function automatic logic [PTR_W-1:0] next_ptr(input logic [PTR_W-1:0] p);
    next_ptr = (p == PTR_W'(DEPTH - 1)) ? '0 : p + 1'b1;
  endfunction

  assign count    = stored + CNT_W'(out_valid);
  assign in_ready = count < CNT_W'(DEPTH);
  assign push     = in_valid && in_ready;
  // Refill the output register whenever it is empty or being emptied.
  assign load     = stored != '0 && (!out_valid || out_ready);

  // The memory is never read and written at the same address in one cycle: when
  // wptr == rptr it is either empty (no load) or holds DEPTH entries (no push).
  always_ff @(posedge clk) begin
    if (push) mem[wptr] <= in_data;
    if (load) out_data <= mem[rptr];
  end

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      wptr      <= '0;
      rptr      <= '0;
      stored    <= '0;
      out_valid <= 1'b0;
    end else begin
      if (push) wptr <= next_ptr(wptr);
      if (load) rptr <= next_ptr(rptr);
      stored <= stored + CNT_W'(push) - CNT_W'(load);
      if (load) out_valid <= 1'b1;
      else if (out_ready) out_valid <= 1'b0;
    end
  end

`ifndef SYNTHESIS
  // Simulation-only invariants (Verilator --assert; yosys defines SYNTHESIS).
  a_fifo_overflow: assert property (@(posedge clk) disable iff (!rst_n || clear) STRICT_PUSH && in_valid |-> in_ready)
    else $error("vdla_fifo a_fifo_overflow: push into a full FIFO (%0d/%0d entries) whose producer relies on room", count, DEPTH);
  a_fifo_underflow: assert property (@(posedge clk) disable iff (!rst_n || clear) STRICT_POP && out_ready |-> out_valid)
    else $error("vdla_fifo a_fifo_underflow: pop of an empty FIFO whose consumer relies on an entry");
  a_fifo_in_stable: assert property (@(posedge clk) disable iff (!rst_n || clear)
                                     in_valid && !in_ready |=> in_valid && $stable(in_data))
    else $error("vdla_fifo a_fifo_in_stable: the producer withdrew or changed a push before the FIFO accepted it");
  a_fifo_count: assert property (@(posedge clk) disable iff (!rst_n || clear) count <= CNT_W'(DEPTH) && stored <= CNT_W'(DEPTH))
    else $error("vdla_fifo a_fifo_count: the FIFO counts %0d entries, more than its depth %0d", count, DEPTH);
`endif

`ifdef FORMAL
  // Formal properties (`vdla hw prove`, docs/rtl.md "Formal proofs"): immediate assertions,
  // the subset yosys's read_verilog -formal accepts. The producer/consumer contract is
  // assumed when the FIFO is proven alone (VDLA_FORMAL_TOP_FIFO) and asserted where a
  // parent instantiates it, so a parent's proof shows it keeps the contract.
`ifdef VDLA_FORMAL_TOP_FIFO
  `define VDLA_FIFO_CONTRACT assume
  initial assume (!rst_n);
`else
  `define VDLA_FIFO_CONTRACT assert
`endif
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  logic [PTR_W:0] f_wptr_expect;
  assign f_wptr_expect = (PTR_W+1)'((32'(rptr) + 32'(stored)) % DEPTH);

  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      if (STRICT_PUSH) a_fifo_overflow: `VDLA_FIFO_CONTRACT (!in_valid || in_ready);
      if (STRICT_POP) a_fifo_underflow: `VDLA_FIFO_CONTRACT (!out_ready || out_valid);
      if (f_past && $past(rst_n && !clear && in_valid && !in_ready))
        a_fifo_in_stable: `VDLA_FIFO_CONTRACT (in_valid && $stable(in_data));
      // summed at full width: `count` itself would wrap to 0 when DEPTH + 1 is a power of two
      a_fifo_count: assert (32'(stored) + 32'(out_valid) <= DEPTH);
      // the pointers agree with the count (what makes the count invariant inductive)
      f_fifo_ptrs: assert (32'(wptr) < DEPTH && 32'(rptr) < DEPTH && {1'b0, wptr} == f_wptr_expect);
    end
  end
`undef VDLA_FIFO_CONTRACT
`endif
endmodule

`default_nettype wire
