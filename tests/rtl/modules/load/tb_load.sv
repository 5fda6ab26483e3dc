// vdla_load with its two DRAM read engines, a read arbiter, an AXI4 read port for the
// test's AXI RAM, and the input / weight SRAMs with a back-door read port.
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module tb_load (
  input  wire logic                      clk,
  input  wire logic                      rst_n,
  input  wire logic                      cmd_valid,
  output logic                           cmd_ready,
  input  wire logic [INSN_BITS-1:0]      cmd_insn,
  input  wire logic                      c2l_valid,
  output logic                           c2l_ready,
  output logic                           l2c_valid,
  input  wire logic                      l2c_ready,
  output logic                           busy,
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
  /* verilator lint_on UNUSEDSIGNAL */
  input  wire logic [BUS_WIDTH-1:0]      m_axi_rdata,
  input  wire logic                      m_axi_rlast,
  input  wire logic                      m_axi_rvalid,
  output logic                           m_axi_rready,
  input  wire logic                      tb_re,
  input  wire logic                      tb_sel,   // 0 inp, 1 wgt
  input  wire logic [15:0]               tb_addr,
  output logic [INP_ELEM_BITS-1:0]       tb_inp_q,
  output logic [WGT_ELEM_BITS-1:0]       tb_wgt_q
);
  logic [1:0] dma_valid, dma_ready, ar_valid, ar_ready, r_valid, r_ready;
  logic [1:0][AXI_ADDR_WIDTH-1:0] dma_addr, ar_addr;
  logic [1:0][SIZE_W-1:0] dma_count;
  logic [1:0][7:0] ar_len;
  logic inp_el_valid, inp_el_ready, wgt_el_valid, wgt_el_ready, inp_we, wgt_we;
  logic [INP_ELEM_BITS-1:0] inp_el, inp_wdata;
  logic [WGT_ELEM_BITS-1:0] wgt_el, wgt_wdata;
  logic [LOG_INP_BUFF_DEPTH-1:0] inp_waddr;
  logic [LOG_WGT_BUFF_DEPTH-1:0] wgt_waddr;
  logic [BUS_WIDTH-1:0] rd_data;  // read data out of the arbiter (its optional R slice)

  vdla_load u_load (
    .clk, .rst_n, .clear(1'b0), .cmd_valid, .cmd_ready, .cmd_insn, .c2l_valid, .c2l_ready, .l2c_valid, .l2c_ready, .busy,
    .dma_valid, .dma_ready, .dma_addr, .dma_count, .dma_in_window(), .win_base('0), .win_limit('0),
    .inp_el_valid, .inp_el_ready, .inp_el_data(inp_el), .wgt_el_valid, .wgt_el_ready, .wgt_el_data(wgt_el),
    .inp_wr_en(inp_we), .inp_wr_addr(inp_waddr), .inp_wr_data(inp_wdata),
    .wgt_wr_en(wgt_we), .wgt_wr_addr(wgt_waddr), .wgt_wr_data(wgt_wdata)
  );
  vdla_dma_rd #(.ELEM_BITS(INP_ELEM_BITS)) u_rd_inp (
    .clk, .rst_n, .clear(1'b0), .cmd_valid(dma_valid[0]), .cmd_ready(dma_ready[0]), .cmd_addr(dma_addr[0]), .cmd_count(dma_count[0]),
    .ar_valid(ar_valid[0]), .ar_ready(ar_ready[0]), .ar_addr(ar_addr[0]), .ar_len(ar_len[0]),
    .r_valid(r_valid[0]), .r_ready(r_ready[0]), .r_data(rd_data), .el_valid(inp_el_valid), .el_ready(inp_el_ready), .el_data(inp_el)
  );
  vdla_dma_rd #(.ELEM_BITS(WGT_ELEM_BITS)) u_rd_wgt (
    .clk, .rst_n, .clear(1'b0), .cmd_valid(dma_valid[1]), .cmd_ready(dma_ready[1]), .cmd_addr(dma_addr[1]), .cmd_count(dma_count[1]),
    .ar_valid(ar_valid[1]), .ar_ready(ar_ready[1]), .ar_addr(ar_addr[1]), .ar_len(ar_len[1]),
    .r_valid(r_valid[1]), .r_ready(r_ready[1]), .r_data(rd_data), .el_valid(wgt_el_valid), .el_ready(wgt_el_ready), .el_data(wgt_el)
  );
  vdla_axi_rd_arb #(.N(2)) u_arb (
    .clk, .rst_n, .clear(1'b0), .ar_valid, .ar_ready, .ar_addr, .ar_len, .r_valid, .r_ready, .r_data(rd_data),
    .m_arvalid(m_axi_arvalid), .m_arready(m_axi_arready), .m_araddr(m_axi_araddr), .m_arlen(m_axi_arlen),
    .m_rvalid(m_axi_rvalid), .m_rready(m_axi_rready), .m_rdata(m_axi_rdata), .m_rlast(m_axi_rlast)
  );
  assign m_axi_arid = '0;
  assign m_axi_arsize = 3'(LOG_BUS_BYTES);
  assign m_axi_arburst = 2'b01;

  vdla_sram #(.WIDTH(INP_ELEM_BITS), .DEPTH(INP_BUFF_DEPTH)) u_inp (
    .clk, .rd_en(tb_re && !tb_sel), .rd_addr(LOG_INP_BUFF_DEPTH'(tb_addr)), .rd_data(tb_inp_q),
    .wr_en(inp_we), .wr_addr(inp_waddr), .wr_data(inp_wdata)
  );
  vdla_sram #(.WIDTH(WGT_ELEM_BITS), .DEPTH(WGT_BUFF_DEPTH)) u_wgt (
    .clk, .rd_en(tb_re && tb_sel), .rd_addr(LOG_WGT_BUFF_DEPTH'(tb_addr)), .rd_data(tb_wgt_q),
    .wr_en(wgt_we), .wr_addr(wgt_waddr), .wr_data(wgt_wdata)
  );
endmodule

`default_nettype wire
