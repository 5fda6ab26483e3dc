// Simulation bench for vdla_ulx3s_top under Verilator (--binary --timing): the board's 25 MHz
// clock, no button pressed, run until led[0] (done) or a cycle limit, then print the LEDs in
// one line that ecp5_flow parses ("LEDS <binary> CYCLES <n>").
`timescale 1ns / 1ps
`default_nettype none

module tb_ulx3s;
  parameter longint MAX_CYCLES = 64'd50_000_000;
  parameter int MEM_WORDS = 1024;
  parameter int INSN_ADDR = 0;
  parameter int INSN_COUNT = 1;
  logic clk = 1'b0;
  logic [7:0] led;
  logic wifi_gpio0;
  longint cycles = 0;

  vdla_ulx3s_top #(.MEM_WORDS(MEM_WORDS), .INSN_ADDR(INSN_ADDR), .INSN_COUNT(INSN_COUNT)) dut (.clk_25mhz(clk), .btn(7'b0000001), .led, .wifi_gpio0);

  always #20 clk = ~clk;

  always @(posedge clk) begin
    cycles <= cycles + 1;
    if (led[0] || cycles == MAX_CYCLES) begin
      $display("LEDS %b CYCLES %0d", led, cycles);
      $finish;
    end
  end
endmodule

`default_nettype wire
