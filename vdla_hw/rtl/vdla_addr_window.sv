// The DRAM address window on one DMA command path: a command "COUNT elements of 2^LOG_EB
// bytes from byte ADDR" passes to the DMA engine only when its bytes [ADDR, ADDR + COUNT *
// 2^LOG_EB) lie in [base, limit) -- the rule fsim and the cycle model apply; otherwise it is
// held back (never issued) and `fault` is high while it waits. `halt` holds back every
// new command (the machine stopped on a fault); one the engine was already offered stays
// offered until taken, as valid/ready requires (it is inside the window).
//
// The engines round a command out to whole bus beats (vdla_dma_rd/wr; writes strobe only the
// command's bytes), so with a BUS_BYTES-aligned window, as drivers set it, no burst touches a
// byte outside the window either. The sum is two bits wider than the address, so a span that
// wraps past the top of the address space faults instead of wrapping into the window.
//
// Timing: the client gives the command's end byte (`span_end` = ADDR + COUNT * 2^LOG_EB, two
// bits wider) and the verdict itself (`in_window` = ADDR >= base && span_end <= limit) from
// registers it loads with the command (vdla_fetch, vdla_tile_loader, vdla_store), so the
// verdict that gates `in_ready` -- which enables the client's command registers -- is one
// flop, not two 34-bit compares (the ECP5 build's critical path before, docs/fpga_ecp5.md).
// Same cycles: the client computes the verdict for the values its command registers take in
// the cycle they take them (its end check one carry-save compare, vdla_sum_le, from registers
// kept one command ahead). base/limit are constant while the machine runs (vdla_ctrl,
// f_ctrl_window_fixed); the loaders and the store hold their verdict between commands, fetch
// recomputes its own every cycle. A window written while the machine is idle therefore meets
// no stale verdict that matters: no loader or store command is offered while idle unless the
// machine is halted, and under `halt` a verdict only keeps a command already offered offered
// (a run starts with `clear`, which resets every verdict). Simulation checks both client
// registers against the window while the machine may act on them (a_window_span_end,
// a_window_verdict).
// `fault` is registered (it rises the cycle after a command outside the window is
// presented). The command is held back either way, and its address and instruction stay on
// the client's lines while it waits, so the fault collector latches the same ones a cycle
// later. Unregistered, the 34-bit sum and compare ran on through the collector's OR into
// `halt` and the control block's `done` (the ECP5 build's critical path, docs/fpga_ecp5.md).
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_addr_window #(
  /* verilator lint_off UNUSEDPARAM */  // like `count`: only the simulation checks read it
  parameter int LOG_EB = 0,
  /* verilator lint_on UNUSEDPARAM */
  parameter int CNT_W = SIZE_W
) (
  input  wire logic                      clk,
  input  wire logic                      rst_n,
  input  wire logic                      clear,
  input  wire logic                      in_valid,
  output logic                           in_ready,
  /* verilator lint_off UNUSEDSIGNAL */  // only the simulation checks read them
  input  wire logic [AXI_ADDR_WIDTH-1:0] addr,
  input  wire logic [CNT_W-1:0]          count,
  input  wire logic [AXI_ADDR_WIDTH+1:0] span_end,
  /* verilator lint_on UNUSEDSIGNAL */
  input  wire logic                      in_window,  // the client's registered verdict on the command
  output logic                           out_valid,
  input  wire logic                      out_ready,
  /* verilator lint_off UNUSEDSIGNAL */  // only the simulation checks read them
  input  wire logic [AXI_ADDR_WIDTH-1:0] base,
  input  wire logic [AXI_ADDR_WIDTH-1:0] limit,
  /* verilator lint_on UNUSEDSIGNAL */
  input  wire logic                      halt,
  output logic                           fault
);
  /* verilator lint_off UNUSEDPARAM */  // only the simulation checks read it
  localparam int W = AXI_ADDR_WIDTH + 2;
  /* verilator lint_on UNUSEDPARAM */

  logic shown, pass;  // shown: offered to the engine last cycle and not taken
  assign pass      = in_window && (!halt || shown);
  assign out_valid = in_valid && pass;
  assign in_ready  = out_ready && pass;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      shown <= 1'b0;
      fault <= 1'b0;
    end else begin
      shown <= out_valid && !out_ready;
      fault <= in_valid && !in_window && !halt;
    end
  end

`ifndef SYNTHESIS
  always_ff @(posedge clk)
    if (rst_n && !clear && in_valid)
      a_window_span_end: assert (span_end == W'(addr) + (W'(count) << LOG_EB))
        else $error("vdla_addr_window a_window_span_end: the client's span end %0h is not addr %0h + %0d elements of 2^%0d bytes",
                    span_end, addr, count, LOG_EB);
  // The client's verdict is the window's rule on its command (while the machine may act on it:
  // under halt a verdict only keeps an offered command offered, see the header).
  always_ff @(posedge clk)
    if (rst_n && !clear && in_valid && !halt)
      a_window_verdict: assert (in_window == (addr >= base && span_end <= W'(limit)))
        else $error("vdla_addr_window a_window_verdict: the client's verdict %0d on [%0h, %0h) is not the window [%0h, %0h)'s",
                    in_window, addr, span_end, base, limit);
`endif
endmodule

`default_nettype wire
