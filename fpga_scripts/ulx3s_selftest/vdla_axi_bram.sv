// The board's DRAM as on-chip block RAM: an AXI4 slave for the accelerator's master port,
// initialised at configuration time from a hex image ($readmemh, one bus word per line).
//
// One single-port RAM serves one burst at a time (writes first); a read beat takes two
// cycles (address, then the registered word), which any AXI master must tolerate. An
// access outside the RAM sets `fault` (sticky until reset; a cycle into the burst) instead of
// wrapping around.
// After the run, the self-test checker reads the RAM through `chk_*` while the AXI side
// is idle (`chk_en` must only be raised then).
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_axi_bram #(
  parameter int    WORDS = 1024,
  parameter INIT_FILE = "selftest_dram.hex"
) (
  input  wire logic                         clk,
  input  wire logic                         rst_n,
  input  wire logic [AXI_ADDR_WIDTH-1:0]    awaddr,
  input  wire logic [7:0]                   awlen,
  input  wire logic                         awvalid,
  output logic                              awready,
  input  wire logic [AXI_DATA_WIDTH-1:0]    wdata,
  input  wire logic [AXI_DATA_WIDTH/8-1:0]  wstrb,
  input  wire logic                         wlast,
  input  wire logic                         wvalid,
  output logic                              wready,
  output logic                              bvalid,
  input  wire logic                         bready,
  input  wire logic [AXI_ADDR_WIDTH-1:0]    araddr,
  input  wire logic [7:0]                   arlen,
  input  wire logic                         arvalid,
  output logic                              arready,
  output logic [AXI_DATA_WIDTH-1:0]         rdata,
  output logic                              rlast,
  output logic                              rvalid,
  input  wire logic                         rready,
  output logic                              fault,
  input  wire logic                         chk_en,
  input  wire logic [$clog2(WORDS)-1:0]     chk_addr,
  output logic [AXI_DATA_WIDTH-1:0]         chk_data
);
  localparam int AW = $clog2(WORDS);
  localparam int NB = AXI_DATA_WIDTH / 8;
  typedef enum logic [2:0] {IDLE, RD_ADDR, RD_BEAT, WR_DATA, WR_RESP} state_t;

  (* ram_style = "block" *) logic [AXI_DATA_WIDTH-1:0] mem [WORDS];
  initial $readmemh(INIT_FILE, mem);

  state_t                    state;
  logic [AXI_ADDR_WIDTH-LOG_BUS_BYTES-1:0] word;  // the burst's current word address
  logic [7:0]                left;                // beats after the current one
  logic [AW-1:0]             addr;
  logic                      we;
  logic [AXI_DATA_WIDTH-1:0] q;

  assign addr = chk_en ? chk_addr : word[AW-1:0];
  assign we = state == WR_DATA && wvalid;
  always_ff @(posedge clk) begin
    for (int b = 0; b < NB; b++)
      if (we && wstrb[b]) mem[addr][8*b +: 8] <= wdata[8*b +: 8];
    q <= mem[addr];
  end
  assign rdata = q;
  assign chk_data = q;

  assign awready = state == IDLE;
  assign arready = state == IDLE && !awvalid;
  assign wready  = state == WR_DATA;
  assign bvalid  = state == WR_RESP;
  assign rvalid  = state == RD_BEAT;
  assign rlast   = left == '0;

  // A burst whose last word lies beyond the RAM is a fault of the program or the accelerator.
  // It is checked from this module's own registers while the burst runs (word + left is the
  // burst's last word in each of its cycles: a beat steps word up and left down), not from
  // AWADDR/AWLEN at the handshake: the master computes AWLEN from its address register, and
  // the sum and compare behind it were the ECP5 build's critical path (docs/fpga_ecp5.md).
  // The fault, sticky anyway, rises a cycle later.
  localparam int EW = AXI_ADDR_WIDTH - LOG_BUS_BYTES + 1;
  logic [EW-1:0] last_word;
  logic          in_burst;
  assign last_word = EW'(word) + EW'(left);
  assign in_burst  = state == WR_DATA || state == RD_ADDR || state == RD_BEAT;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      state <= IDLE;
      fault <= 1'b0;
      word  <= '0;
      left  <= '0;
    end else begin
      if (in_burst && last_word >= EW'(WORDS)) fault <= 1'b1;
      unique case (state)
        IDLE: if (awvalid) begin
          word  <= awaddr[AXI_ADDR_WIDTH-1:LOG_BUS_BYTES];
          left  <= awlen;
          state <= WR_DATA;
        end else if (arvalid) begin
          word  <= araddr[AXI_ADDR_WIDTH-1:LOG_BUS_BYTES];
          left  <= arlen;
          state <= RD_ADDR;
        end
        RD_ADDR: state <= RD_BEAT;
        RD_BEAT: if (rready) begin
          word  <= word + 1'b1;
          left  <= left - 1'b1;
          state <= left == '0 ? IDLE : RD_ADDR;
        end
        WR_DATA: if (wvalid) begin
          word <= word + 1'b1;
          left <= left - 1'b1;
          if (wlast != (left == '0)) fault <= 1'b1;  // burst length and WLAST disagree
          if (wlast) state <= WR_RESP;
        end
        WR_RESP: if (bready) state <= IDLE;
        default: state <= IDLE;
      endcase
    end
  end
endmodule

`default_nettype wire
