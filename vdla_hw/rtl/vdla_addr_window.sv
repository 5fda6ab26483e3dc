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
// bits wider) from a register it updates with the command (vdla_fetch, vdla_tile_loader,
// vdla_store), so the verdict is two compares of flops with the window's registers: it gates
// `in_ready`, which enables the client's command registers, and with the sum here it was the
// ECP5 build's critical path. Simulation checks the client's sum (a_window_span_end).
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
  /* verilator lint_off UNUSEDPARAM */  // like `count`: only the simulation check reads it
  parameter int LOG_EB = 0,
  /* verilator lint_on UNUSEDPARAM */
  parameter int CNT_W = SIZE_W
) (
  input  wire logic                      clk,
  input  wire logic                      rst_n,
  input  wire logic                      clear,
  input  wire logic                      in_valid,
  output logic                           in_ready,
  input  wire logic [AXI_ADDR_WIDTH-1:0] addr,
  /* verilator lint_off UNUSEDSIGNAL */  // only the simulation check reads it
  input  wire logic [CNT_W-1:0]          count,
  /* verilator lint_on UNUSEDSIGNAL */
  input  wire logic [AXI_ADDR_WIDTH+1:0] span_end,
  output logic                           out_valid,
  input  wire logic                      out_ready,
  input  wire logic [AXI_ADDR_WIDTH-1:0] base,
  input  wire logic [AXI_ADDR_WIDTH-1:0] limit,
  input  wire logic                      halt,
  output logic                           fault
);
  localparam int W = AXI_ADDR_WIDTH + 2;

  logic in_window;
  assign in_window = addr >= base && span_end <= W'(limit);

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
`endif
endmodule

`default_nettype wire
