// The fault collector: latches the first fault any checker reports (vdla_addr_window,
// vdla_sram_range, vdla_loop_check) into the FAULT registers, and raises `halt`, which stops
// fetch and every command queue and holds back every new DMA command: the machine freezes
// with no transaction outside the window ever issued, while DMA commands already accepted
// (all inside the window) run to their end. Of several faults in one cycle the one of the
// lowest instruction index wins. `clear` (a new start) forgets the fault.
//
// Timing: `halt` and `fault_new` follow the sources in the same cycle (only an OR of the
// valids), but choosing the winner (a 32-bit compare per source) is done one cycle later from
// a registered copy of that cycle's sources, as a tree of pairwise compares: the FAULT registers
// settle one cycle after `halt` rises. Chained after the window checks, the serial priority
// chain was the ULX3S SoC's critical path (57 ns, docs/fpga_ulx3s.md); the host reads FAULT
// registers only after it has seen STATUS done, many cycles later.
//
// It also counts the DRAM transactions in flight (read beats requested and not yet
// returned, write bursts not yet acknowledged): `bus_busy` keeps a new start from clearing
// the datapath under a burst still in flight after a fault.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_fault #(
  parameter int N = 4
) (
  input  wire logic                clk,
  input  wire logic                rst_n,
  input  wire logic                clear,
  input  wire logic [N-1:0]        src_valid,
  input  wire logic [N-1:0][7:0]   src_cause,
  input  wire logic [N-1:0][31:0]  src_insn,
  input  wire logic [N-1:0][31:0]  src_addr,
  input  wire logic [N-1:0][31:0]  src_iter,
  output logic                     halt,
  output logic                     fault_new,   // one cycle: the fault is latched now
  output logic [7:0]               cause,
  output logic [31:0]              insn,
  output logic [31:0]              addr,
  output logic [31:0]              iter,
  // the AXI4 master, observed
  input  wire logic                ar_fire,
  input  wire logic [7:0]          ar_len,
  input  wire logic                r_fire,
  input  wire logic                aw_fire,
  input  wire logic                b_fire,
  input  wire logic                pending_req,  // an AR/AW/W valid not yet accepted
  output logic                     bus_busy
);
  // The cycle of the fault: halt now, keep that cycle's sources for the choice.
  logic               any, pending;
  logic [N-1:0]       s_valid;
  logic [N-1:0][7:0]  s_cause;
  logic [N-1:0][31:0] s_insn, s_addr, s_iter;

  assign any       = |src_valid;
  assign fault_new = any && !halt && !clear;

  // The next cycle: the lowest instruction index among the kept sources, pairwise in a tree;
  // of equal indices the lower source wins (the left operand of every compare), as in a
  // serial scan from source 0.
  localparam int LEVELS = N > 1 ? $clog2(N) : 1;
  localparam int W = 1 << LEVELS;
  logic [W-1:0]        t_valid;
  logic [W-1:0][31:0]  t_insn;
  logic [W-1:0][LEVELS-1:0] t_pick;
  int                  pick;

  always_comb begin
    for (int k = 0; k < W; k++) begin
      t_valid[k] = k < N ? s_valid[k] : 1'b0;
      t_insn[k]  = k < N ? s_insn[k] : '1;
      t_pick[k]  = LEVELS'(k);
    end
    for (int lv = 0; lv < LEVELS; lv++) begin
      for (int k = 0; k < W; k += 2 << lv) begin
        if (t_valid[k + (1 << lv)] && (!t_valid[k] || t_insn[k + (1 << lv)] < t_insn[k])) begin
          t_valid[k] = 1'b1;
          t_insn[k]  = t_insn[k + (1 << lv)];
          t_pick[k]  = t_pick[k + (1 << lv)];
        end
      end
    end
    pick = int'(t_pick[0]);
  end

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      halt    <= 1'b0;
      pending <= 1'b0;
      cause   <= '0;
      insn    <= '0;
      addr    <= '0;
      iter    <= '0;
    end else begin
      pending <= fault_new;
      if (fault_new) halt <= 1'b1;
      if (pending) begin
        cause <= s_cause[pick];
        insn  <= s_insn[pick];
        addr  <= s_addr[pick];
        iter  <= s_iter[pick];
      end
    end
  end

  // The sources need no reset: they are read only in the cycle after a fault (`pending`). They
  // are kept every cycle, not only on `fault_new`: as an enable, fault_new fanned out to the
  // ~800 flip-flops here, which made the checks' OR a long path (docs/fpga_ecp5.md).
  always_ff @(posedge clk) begin
    s_valid <= src_valid;
    s_cause <= src_cause;
    s_insn  <= src_insn;
    s_addr  <= src_addr;
    s_iter  <= src_iter;
  end

  // Transactions in flight (not reset by `clear`: the bus does not forget its bursts).
  logic [31:0] rd_beats, wr_bursts;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      rd_beats  <= '0;
      wr_bursts <= '0;
    end else begin
      rd_beats  <= rd_beats + (ar_fire ? 32'(ar_len) + 32'd1 : 32'd0) - 32'(r_fire);
      wr_bursts <= wr_bursts + 32'(aw_fire) - 32'(b_fire);
    end
  end
  assign bus_busy = rd_beats != '0 || wr_bursts != '0 || pending_req;
endmodule

`default_nettype wire
