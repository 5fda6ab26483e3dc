// VDLA self-test top for the ULX3S (ECP5-85F): the accelerator, its DRAM as on-chip block
// RAM holding a program image, a small AXI-lite master that starts the program, and a
// checker that compares the whole RAM with the image the functional simulator computed.
//
// At configuration (and whenever button F1 is pressed) the design resets, writes
// WINDOW_LIMIT (the RAM's size: the accelerator may touch all of it), INSN_ADDR and INSN_COUNT, starts the accelerator, polls STATUS until done, then reads
// every RAM word and compares it with the expected image. LEDs:
//   led[0] done    the check has finished
//   led[1] pass    every word matched (and no fault)
//   led[2] fail    a word differed
//   led[3] fault   a DRAM access fell outside the RAM, the accelerator stopped on a fault
//                  (STATUS.fault), or the program did not finish within TIMEOUT_CYCLES
//   led[7:4]       the controller state (a hang shows where it stopped)
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_ulx3s_top #(
  parameter int    MEM_WORDS = 1024,               // bus words of on-chip DRAM
  parameter int    INSN_ADDR = 0,                  // byte address of the first instruction
  parameter int    INSN_COUNT = 1,
  parameter int    TIMEOUT_CYCLES = 1 << 24,
  parameter logic [31:0] BUILD_ID = '0,             // the bitstream's build id (bitstream.json)
  parameter DRAM_FILE = "selftest_dram.hex",
  parameter EXPECT_FILE = "selftest_expect.hex"
) (
  input  wire logic       clk_25mhz,
  input  wire logic [6:0] btn,        // btn[0] is PWRn (active low); btn[1] is F1 (active high)
  output logic      [7:0] led,
  output logic            wifi_gpio0  // held high so the ESP32 does not take the board over
);
  localparam int AW = $clog2(MEM_WORDS);
  typedef enum logic [3:0] {
    S_RESET, S_WR_LIMIT, S_WR_ADDR, S_WR_COUNT, S_WR_START, S_POLL, S_POLL_WAIT, S_CHECK, S_DONE,
    S_DRAIN  // last, so the other states keep their LED codes
  } state_t;

  logic clk;
  assign clk = clk_25mhz;
  assign wifi_gpio0 = 1'b1;

  // ---- reset: held for 16 cycles after configuration and while F1 is pressed --------------
  logic [4:0] por = '0;
  logic       rst_n;
  always_ff @(posedge clk) begin
    if (btn[1]) por <= '0;
    else if (!por[4]) por <= por + 1'b1;
  end
  assign rst_n = por[4];

  // ---- the accelerator -----------------------------------------------------------------
  logic [AXIL_ADDR_WIDTH-1:0] awaddr, araddr;
  logic [AXIL_DATA_WIDTH-1:0] wdata, rdata;
  logic awvalid, awready, wvalid, wready, bvalid, bready, arvalid, arready, rvalid, rready;
  logic [1:0] bresp, rresp;

  logic [AXI_ADDR_WIDTH-1:0] m_awaddr, m_araddr;
  logic [7:0]                m_awlen, m_arlen;
  logic                      m_awvalid, m_awready, m_wvalid, m_wready, m_wlast, m_bvalid, m_bready;
  logic                      m_arvalid, m_arready, m_rvalid, m_rready, m_rlast;
  logic [AXI_DATA_WIDTH-1:0] m_wdata, m_rdata;
  logic [AXI_DATA_WIDTH/8-1:0] m_wstrb;

  /* verilator lint_off PINCONNECTEMPTY */  // IDs, sizes and burst types are fixed by vdla_top
  vdla_top #(.BUILD_ID(BUILD_ID)) u_vdla (
    .clk, .rst_n,
    .s_axil_awaddr(awaddr), .s_axil_awvalid(awvalid), .s_axil_awready(awready),
    .s_axil_wdata(wdata), .s_axil_wstrb(4'hf), .s_axil_wvalid(wvalid), .s_axil_wready(wready),
    .s_axil_bresp(bresp), .s_axil_bvalid(bvalid), .s_axil_bready(bready),
    .s_axil_araddr(araddr), .s_axil_arvalid(arvalid), .s_axil_arready(arready),
    .s_axil_rdata(rdata), .s_axil_rresp(rresp), .s_axil_rvalid(rvalid), .s_axil_rready(rready),
    .m_axi_awid(), .m_axi_awaddr(m_awaddr), .m_axi_awlen(m_awlen), .m_axi_awsize(), .m_axi_awburst(),
    .m_axi_awvalid(m_awvalid), .m_axi_awready(m_awready),
    .m_axi_wdata(m_wdata), .m_axi_wstrb(m_wstrb), .m_axi_wlast(m_wlast), .m_axi_wvalid(m_wvalid),
    .m_axi_wready(m_wready),
    .m_axi_bid('0), .m_axi_bresp(2'b00), .m_axi_bvalid(m_bvalid), .m_axi_bready(m_bready),
    .m_axi_arid(), .m_axi_araddr(m_araddr), .m_axi_arlen(m_arlen), .m_axi_arsize(), .m_axi_arburst(),
    .m_axi_arvalid(m_arvalid), .m_axi_arready(m_arready),
    .m_axi_rid('0), .m_axi_rresp(2'b00), .m_axi_rdata(m_rdata), .m_axi_rlast(m_rlast),
    .m_axi_rvalid(m_rvalid), .m_axi_rready(m_rready),
    .done(), .irq()
  );
  /* verilator lint_on PINCONNECTEMPTY */

  // ---- DRAM as block RAM, and the expected final image --------------------------------
  logic          chk_en, fault;
  logic [AW-1:0] chk_addr;
  logic [AXI_DATA_WIDTH-1:0] chk_data, expect_q;

  vdla_axi_bram #(.WORDS(MEM_WORDS), .INIT_FILE(DRAM_FILE)) u_ram (
    .clk, .rst_n,
    .awaddr(m_awaddr), .awlen(m_awlen), .awvalid(m_awvalid), .awready(m_awready),
    .wdata(m_wdata), .wstrb(m_wstrb), .wlast(m_wlast), .wvalid(m_wvalid), .wready(m_wready),
    .bvalid(m_bvalid), .bready(m_bready),
    .araddr(m_araddr), .arlen(m_arlen), .arvalid(m_arvalid), .arready(m_arready),
    .rdata(m_rdata), .rlast(m_rlast), .rvalid(m_rvalid), .rready(m_rready),
    .fault, .chk_en, .chk_addr, .chk_data
  );

  (* ram_style = "block" *) logic [AXI_DATA_WIDTH-1:0] expect_mem [MEM_WORDS];
  initial $readmemh(EXPECT_FILE, expect_mem);
  always_ff @(posedge clk) expect_q <= expect_mem[chk_addr];

  // ---- the host: start the program, wait for done, check the RAM ------------------------
  state_t       state;
  logic         aw_sent, w_sent, ar_sent, mismatch, timed_out, cmp_valid, accel_fault;
  // The compare is a stage of its own: the RAM words and the expected words are registered
  // before the 128-bit compare, so no block RAM's clock-to-out feeds it (the ECP5 build's
  // critical path, docs/fpga_ecp5.md); S_DRAIN waits for the last word.
  logic         word_v;
  logic [AXI_DATA_WIDTH-1:0] word_q, expect_r;
  logic         writing;
  logic [31:0]  wait_cycles;
  logic [AW:0]  next_addr;  // one bit wider: MEM_WORDS is the end of the check

  // One AXI-lite write (address and data together) or read in flight at a time.
  assign writing = state == S_WR_LIMIT || state == S_WR_ADDR || state == S_WR_COUNT || state == S_WR_START;
  assign awvalid = writing && !aw_sent;
  assign wvalid  = writing && !w_sent;
  assign awaddr  = state == S_WR_LIMIT ? REG_WINDOW_LIMIT : state == S_WR_ADDR ? REG_INSN_ADDR
                 : state == S_WR_COUNT ? REG_INSN_COUNT : REG_CONTROL;
  assign wdata   = state == S_WR_LIMIT ? 32'(MEM_WORDS * (AXI_DATA_WIDTH / 8)) : state == S_WR_ADDR ? 32'(INSN_ADDR)
                 : state == S_WR_COUNT ? 32'(INSN_COUNT) : 32'd1;
  assign bready  = 1'b1;
  assign arvalid = state == S_POLL && !ar_sent;
  assign araddr  = REG_STATUS;
  assign rready  = 1'b1;
  assign chk_en  = state == S_CHECK;
  assign chk_addr = next_addr[AW-1:0];

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      state       <= S_RESET;
      aw_sent     <= 1'b0;
      w_sent      <= 1'b0;
      ar_sent     <= 1'b0;
      mismatch    <= 1'b0;
      timed_out   <= 1'b0;
      accel_fault <= 1'b0;
      cmp_valid   <= 1'b0;
      word_v      <= 1'b0;
      wait_cycles <= '0;
      next_addr   <= '0;
    end else begin
      if (awvalid && awready) aw_sent <= 1'b1;
      if (wvalid && wready) w_sent <= 1'b1;
      if (arvalid && arready) ar_sent <= 1'b1;
      if (state == S_POLL || state == S_POLL_WAIT) begin
        wait_cycles <= wait_cycles + 1'b1;
        if (wait_cycles == 32'(TIMEOUT_CYCLES)) begin
          timed_out <= 1'b1;
          state     <= S_DONE;
        end
      end
      // The RAM and the expected image answer one cycle after the address (cmp_valid); both
      // words are registered (word_v), then compared.
      cmp_valid <= state == S_CHECK && next_addr != (AW+1)'(MEM_WORDS);
      word_v    <= cmp_valid;
      word_q    <= chk_data;
      expect_r  <= expect_q;
      if (word_v && word_q != expect_r) mismatch <= 1'b1;
      unique case (state)
        S_RESET: state <= S_WR_LIMIT;
        S_WR_LIMIT, S_WR_ADDR, S_WR_COUNT, S_WR_START: if (bvalid) begin
          aw_sent <= 1'b0;
          w_sent  <= 1'b0;
          state   <= state == S_WR_LIMIT ? S_WR_ADDR : state == S_WR_ADDR ? S_WR_COUNT
                   : state == S_WR_COUNT ? S_WR_START : S_POLL;
        end
        S_POLL: if (rvalid) begin
          ar_sent     <= 1'b0;
          state       <= rdata[STATUS_DONE_BIT] ? S_CHECK : S_POLL_WAIT;
          accel_fault <= rdata[STATUS_FAULT_BIT];
        end
        S_POLL_WAIT: state <= S_POLL;
        S_CHECK: begin
          if (next_addr == (AW+1)'(MEM_WORDS)) state <= S_DRAIN;
          else next_addr <= next_addr + 1'b1;
        end
        S_DRAIN: if (!cmp_valid && !word_v) state <= S_DONE;
        default: ;
      endcase
    end
  end

  // The control slave answers OKAY to these registers; only STATUS.done and .fault are read.
  logic unused_ok;
  assign unused_ok = &{1'b0, bresp, rresp, rdata};

  assign led = {state, fault || timed_out || accel_fault, mismatch,
                state == S_DONE && !mismatch && !fault && !timed_out && !accel_fault,
                state == S_DONE};
endmodule

`default_nettype wire
