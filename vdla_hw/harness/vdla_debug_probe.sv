// Debug probe for simulation: what fetch, load, compute and store are working on.
//
// Bound into vdla_top by the testbenches (`bind vdla_top vdla_debug_probe u_probe (...)`,
// see vdla_debug_bind.sv), so the synthesizable design carries no debug logic. The
// harness's watchdog and the cocotb system tests read the dbg_* signals when a run does
// not finish and name the instruction each module is stuck on
// (vdla_hw/harness/hang.py). Counters restart with the datapath (`clear`).
`default_nettype none

module vdla_debug_probe #(
  parameter int CMD_W = 1,  // width of a command-queue count
  parameter int TOK_W = 1   // width of a token-queue count
) (
  input wire logic             clk,
  input wire logic             rst_n,
  input wire logic             clear,
  // fetch -> command queue handshakes
  input wire logic             fl_fire,
  input wire logic             fc_fire,
  input wire logic             fs_fire,
  // command queue -> module handshakes
  input wire logic             lq_fire,
  input wire logic             cq_fire,
  input wire logic             sq_fire,
  // dependency-gate states (0 idle, 1 pop, 2 exec, 3 push)
  input wire logic [1:0]       load_state,
  input wire logic [1:0]       compute_state,
  input wire logic [1:0]       store_state,
  // queue occupancies
  input wire logic [CMD_W-1:0] cmd_load,
  input wire logic [CMD_W-1:0] cmd_compute,
  input wire logic [CMD_W-1:0] cmd_store,
  input wire logic [TOK_W-1:0] tok_l2c,
  input wire logic [TOK_W-1:0] tok_c2l,
  input wire logic [TOK_W-1:0] tok_c2s,
  input wire logic [TOK_W-1:0] tok_s2c
);
  logic [31:0] dbg_fetch_count   /* verilator public_flat_rd */;
  logic [31:0] dbg_load_count    /* verilator public_flat_rd */;
  logic [31:0] dbg_compute_count /* verilator public_flat_rd */;
  logic [31:0] dbg_store_count   /* verilator public_flat_rd */;
  logic [1:0]  dbg_load_state    /* verilator public_flat_rd */;
  logic [1:0]  dbg_compute_state /* verilator public_flat_rd */;
  logic [1:0]  dbg_store_state   /* verilator public_flat_rd */;
  logic [31:0] dbg_cmd_load      /* verilator public_flat_rd */;
  logic [31:0] dbg_cmd_compute   /* verilator public_flat_rd */;
  logic [31:0] dbg_cmd_store     /* verilator public_flat_rd */;
  logic [31:0] dbg_tok_l2c       /* verilator public_flat_rd */;
  logic [31:0] dbg_tok_c2l       /* verilator public_flat_rd */;
  logic [31:0] dbg_tok_c2s       /* verilator public_flat_rd */;
  logic [31:0] dbg_tok_s2c       /* verilator public_flat_rd */;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      dbg_fetch_count   <= '0;
      dbg_load_count    <= '0;
      dbg_compute_count <= '0;
      dbg_store_count   <= '0;
    end else begin
      dbg_fetch_count   <= dbg_fetch_count + 32'(fl_fire) + 32'(fc_fire) + 32'(fs_fire);
      dbg_load_count    <= dbg_load_count + 32'(lq_fire);
      dbg_compute_count <= dbg_compute_count + 32'(cq_fire);
      dbg_store_count   <= dbg_store_count + 32'(sq_fire);
    end
  end

  assign dbg_load_state    = load_state;
  assign dbg_compute_state = compute_state;
  assign dbg_store_state   = store_state;
  assign dbg_cmd_load      = 32'(cmd_load);
  assign dbg_cmd_compute   = 32'(cmd_compute);
  assign dbg_cmd_store     = 32'(cmd_store);
  assign dbg_tok_l2c       = 32'(tok_l2c);
  assign dbg_tok_c2l       = 32'(tok_c2l);
  assign dbg_tok_c2s       = 32'(tok_c2s);
  assign dbg_tok_s2c       = 32'(tok_s2c);
endmodule

`default_nettype wire
