// vdla_fetch with its DRAM read engine on an AXI4 read port for the test's AXI RAM.
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module tb_fetch (
  input  wire logic                      clk,
  input  wire logic                      rst_n,
  input  wire logic                      start,
  input  wire logic [AXI_ADDR_WIDTH-1:0] insn_addr,
  input  wire logic [31:0]               insn_count,
  output logic                           load_valid,
  input  wire logic                      load_ready,
  output logic                           compute_valid,
  input  wire logic                      compute_ready,
  output logic                           store_valid,
  input  wire logic                      store_ready,
  output logic [INSN_BITS-1:0]           insn,
  output logic [AXI_ID_WIDTH-1:0]        m_axi_arid,
  output logic [AXI_ADDR_WIDTH-1:0]      m_axi_araddr,
  output logic [7:0]                     m_axi_arlen,
  output logic [2:0]                     m_axi_arsize,
  output logic [1:0]                     m_axi_arburst,
  output logic                           m_axi_arvalid,
  input  wire logic                      m_axi_arready,
  /* verilator lint_off UNUSEDSIGNAL */
  input  wire logic [AXI_ID_WIDTH-1:0]   m_axi_rid,
  input  wire logic [1:0]                m_axi_rresp,
  input  wire logic                      m_axi_rlast,
  /* verilator lint_on UNUSEDSIGNAL */
  input  wire logic [BUS_WIDTH-1:0]      m_axi_rdata,
  input  wire logic                      m_axi_rvalid,
  output logic                           m_axi_rready
);
  logic dma_valid, dma_ready, el_valid, el_ready;
  logic [AXI_ADDR_WIDTH-1:0] dma_addr;
  logic [SIZE_W-1:0] dma_count;
  logic [INSN_BITS-1:0] el_data;

  vdla_fetch u_fetch (
    .clk, .rst_n, .clear(1'b0), .start, .insn_addr, .insn_count,
    .dma_valid, .dma_ready, .dma_addr, .dma_count, .dma_in_window(), .win_base('0), .win_limit('0), .el_valid, .el_ready, .el_data,
    .load_valid, .load_ready, .compute_valid, .compute_ready, .store_valid, .store_ready, .insn
  );
  vdla_dma_rd #(.ELEM_BITS(INSN_BITS)) u_rd (
    .clk, .rst_n, .clear(1'b0), .cmd_valid(dma_valid), .cmd_ready(dma_ready), .cmd_addr(dma_addr), .cmd_count(dma_count),
    .ar_valid(m_axi_arvalid), .ar_ready(m_axi_arready), .ar_addr(m_axi_araddr), .ar_len(m_axi_arlen),
    .r_valid(m_axi_rvalid), .r_ready(m_axi_rready), .r_data(m_axi_rdata), .el_valid, .el_ready, .el_data
  );
  assign m_axi_arid = '0;
  assign m_axi_arsize = 3'(LOG_BUS_BYTES);
  assign m_axi_arburst = 2'b01;
endmodule

`default_nettype wire
