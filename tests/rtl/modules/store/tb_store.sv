// vdla_store with its DRAM write engine and an AXI4 write port for the test's AXI RAM; the
// test writes accumulators through the snoop port compute would drive.
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module tb_store (
  input  wire logic                          clk,
  input  wire logic                          rst_n,
  input  wire logic                          cmd_valid,
  output logic                               cmd_ready,
  input  wire logic [INSN_BITS-1:0]          cmd_insn,
  input  wire logic                          c2s_valid,
  output logic                               c2s_ready,
  output logic                               s2c_valid,
  input  wire logic                          s2c_ready,
  output logic                               busy,
  input  wire logic                          acc_wr_en,
  input  wire logic [LOG_ACC_BUFF_DEPTH-1:0] acc_wr_addr,
  input  wire logic [ACC_ELEM_BITS-1:0]      acc_wr_data,
  output logic [AXI_ID_WIDTH-1:0]            m_axi_awid,
  output logic [AXI_ADDR_WIDTH-1:0]          m_axi_awaddr,
  output logic [7:0]                         m_axi_awlen,
  output logic [2:0]                         m_axi_awsize,
  output logic [1:0]                         m_axi_awburst,
  output logic                               m_axi_awvalid,
  input  wire logic                          m_axi_awready,
  output logic [BUS_WIDTH-1:0]               m_axi_wdata,
  output logic [BUS_BYTES-1:0]               m_axi_wstrb,
  output logic                               m_axi_wlast,
  output logic                               m_axi_wvalid,
  input  wire logic                          m_axi_wready,
  /* verilator lint_off UNUSEDSIGNAL */
  input  wire logic [AXI_ID_WIDTH-1:0]       m_axi_bid,
  input  wire logic [1:0]                    m_axi_bresp,
  /* verilator lint_on UNUSEDSIGNAL */
  input  wire logic                          m_axi_bvalid,
  output logic                               m_axi_bready
);
  logic dma_valid, dma_ready, el_valid, el_ready, idle;
  logic [AXI_ADDR_WIDTH-1:0] dma_addr;
  logic [SIZE_W-1:0] dma_count;
  logic [OUT_ELEM_BITS-1:0] el_data;

  vdla_store u_store (
    .clk, .rst_n, .clear(1'b0), .cmd_valid, .cmd_ready, .cmd_insn, .c2s_valid, .c2s_ready, .s2c_valid, .s2c_ready, .busy,
    .acc_wr_en, .acc_wr_addr, .acc_wr_data, .dma_valid, .dma_ready, .dma_addr, .dma_count, .dma_in_window(), .win_base('0), .win_limit('0),
    .el_valid, .el_ready, .el_data, .dma_idle(idle)
  );
  vdla_dma_wr #(.ELEM_BITS(OUT_ELEM_BITS)) u_wr (
    .clk, .rst_n, .clear(1'b0), .cmd_valid(dma_valid), .cmd_ready(dma_ready), .cmd_addr(dma_addr), .cmd_count(dma_count),
    .el_valid, .el_ready, .el_data,
    .aw_valid(m_axi_awvalid), .aw_ready(m_axi_awready), .aw_addr(m_axi_awaddr), .aw_len(m_axi_awlen),
    .w_valid(m_axi_wvalid), .w_ready(m_axi_wready), .w_data(m_axi_wdata), .w_strb(m_axi_wstrb), .w_last(m_axi_wlast),
    .b_valid(m_axi_bvalid), .b_ready(m_axi_bready), .idle
  );
  assign m_axi_awid = '0;
  assign m_axi_awsize = 3'(LOG_BUS_BYTES);
  assign m_axi_awburst = 2'b01;
endmodule

`default_nettype wire
