// The load module: runs LOAD INP / LOAD WGT from its command queue, moving 2D strided
// blocks from DRAM into the input and weight SRAMs with zero padding.
//
// Each memory type has its own tile loader and DRAM read client (their element widths
// differ). Tokens: pop_next pops compute->load (c2l), push_next pushes load->compute
// (l2c); load has no previous stage.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_load (
  input  wire logic                           clk,
  input  wire logic                           rst_n,
  input  wire logic                           clear,
  input  wire logic                           cmd_valid,
  output logic                                cmd_ready,
  input  wire logic [INSN_BITS-1:0]           cmd_insn,
  // tokens
  input  wire logic                           c2l_valid,
  output logic                                c2l_ready,
  output logic                                l2c_valid,
  input  wire logic                           l2c_ready,
  output logic                                busy,
  // DRAM reads: inp, wgt
  output logic      [1:0]                     dma_valid,
  input  wire logic [1:0]                     dma_ready,
  output logic      [1:0][AXI_ADDR_WIDTH-1:0] dma_addr,
  output logic      [1:0][AXI_ADDR_WIDTH+1:0] dma_end,  // each command's end byte (vdla_addr_window)
  output logic      [1:0][SIZE_W-1:0]         dma_count,
  output logic      [1:0]                     dma_in_window,  // each command's window verdict (vdla_addr_window)
  input  wire logic [AXI_ADDR_WIDTH-1:0]      win_base,
  input  wire logic [AXI_ADDR_WIDTH-1:0]      win_limit,
  input  wire logic                           inp_el_valid,
  output logic                                inp_el_ready,
  input  wire logic [INP_ELEM_BITS-1:0]       inp_el_data,
  input  wire logic                           wgt_el_valid,
  output logic                                wgt_el_ready,
  input  wire logic [WGT_ELEM_BITS-1:0]       wgt_el_data,
  // SRAM write ports
  output logic                                inp_wr_en,
  output logic [LOG_INP_BUFF_DEPTH-1:0]       inp_wr_addr,
  output logic [INP_ELEM_BITS-1:0]            inp_wr_data,
  output logic                                wgt_wr_en,
  output logic [LOG_WGT_BUFF_DEPTH-1:0]       wgt_wr_addr,
  output logic [WGT_ELEM_BITS-1:0]            wgt_wr_data,
  // a LOAD block past its SRAM buffer (pulse; vdla_fault): the buffer and the element
  output logic                                fault,
  output logic [3:0]                          fault_buf,
  output logic [31:0]                         fault_elem
);
  logic                 exec_start, exec_done, inp_done, wgt_done, inp_busy, wgt_busy, gate_busy;
  logic [INSN_BITS-1:0] insn_bits;
  vdla_pkg::mem_insn_t  insn;
  logic                 is_inp, is_wgt;
  logic                 inp_oob, wgt_oob;
  logic [31:0]          inp_oob_elem, wgt_oob_elem;

  /* verilator lint_off PINCONNECTEMPTY */  // outputs this module does not need are left open
  vdla_dep_gate #(.HAS_PREV(1'b0), .HAS_NEXT(1'b1)) u_gate (
    .clk, .rst_n, .clear,
    .cmd_valid, .cmd_ready, .cmd_insn,
    .exec_start, .insn(insn_bits), .exec_done,
    .pop_prev_valid(1'b0), .pop_prev_ready(),
    .pop_next_valid(c2l_valid), .pop_next_ready(c2l_ready),
    .push_prev_valid(), .push_prev_ready(1'b0),
    .push_next_valid(l2c_valid), .push_next_ready(l2c_ready),
    .busy(gate_busy)
  );

  assign insn   = vdla_pkg::mem_insn_t'(insn_bits);
  assign is_inp = insn.mem_type == MEM_INP;
  assign is_wgt = insn.mem_type == MEM_WGT;
  assign busy   = gate_busy || inp_busy || wgt_busy;

  // Fetch sends only INP/WGT loads here; anything else completes in the next cycle.
  logic other_done;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) other_done <= 1'b0;
    else other_done <= exec_start && !is_inp && !is_wgt;
  end
  assign exec_done = inp_done || wgt_done || other_done;

  vdla_tile_loader #(.ELEM_BITS(INP_ELEM_BITS), .DEPTH(INP_BUFF_DEPTH)) u_inp (
    .clk, .rst_n, .clear,
    .start(exec_start && is_inp), .insn, .done(inp_done), .busy(inp_busy),
    .dma_valid(dma_valid[0]), .dma_ready(dma_ready[0]), .dma_addr(dma_addr[0]), .dma_end(dma_end[0]), .dma_count(dma_count[0]),
    .dma_in_window(dma_in_window[0]), .win_base, .win_limit,
    .el_valid(inp_el_valid), .el_ready(inp_el_ready), .el_data(inp_el_data),
    .wr_en(inp_wr_en), .wr_addr(inp_wr_addr), .wr_data(inp_wr_data), .oob(inp_oob), .oob_elem(inp_oob_elem)
  );

  vdla_tile_loader #(.ELEM_BITS(WGT_ELEM_BITS), .DEPTH(WGT_BUFF_DEPTH)) u_wgt (
    .clk, .rst_n, .clear,
    .start(exec_start && is_wgt), .insn, .done(wgt_done), .busy(wgt_busy),
    .dma_valid(dma_valid[1]), .dma_ready(dma_ready[1]), .dma_addr(dma_addr[1]), .dma_end(dma_end[1]), .dma_count(dma_count[1]),
    .dma_in_window(dma_in_window[1]), .win_base, .win_limit,
    .el_valid(wgt_el_valid), .el_ready(wgt_el_ready), .el_data(wgt_el_data),
    .wr_en(wgt_wr_en), .wr_addr(wgt_wr_addr), .wr_data(wgt_wr_data), .oob(wgt_oob), .oob_elem(wgt_oob_elem)
  );
  assign fault      = inp_oob || wgt_oob;
  assign fault_buf  = inp_oob ? BUF_INP : BUF_WGT;
  assign fault_elem = inp_oob ? inp_oob_elem : wgt_oob_elem;
  /* verilator lint_on PINCONNECTEMPTY */
endmodule

`default_nettype wire
