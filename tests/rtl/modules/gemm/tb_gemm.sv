// vdla_gemm with its four SRAMs; the test fills them and reads accumulators back through
// a back door while the core is idle.
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module tb_gemm (
  input  wire logic                     clk,
  input  wire logic                     rst_n,
  input  wire logic                     start,
  input  wire logic [INSN_BITS-1:0]     insn,
  output logic                          done,
  input  wire logic                     tb_we,
  input  wire logic [1:0]               tb_sel,     // 0 uop, 1 inp, 2 wgt, 3 acc
  input  wire logic [15:0]              tb_addr,
  input  wire logic [WGT_ELEM_BITS-1:0] tb_data,
  input  wire logic                     tb_acc_re,
  output logic [ACC_ELEM_BITS-1:0]      tb_acc_q
);
  logic inp_en, wgt_en, acc_re, acc_we;
  logic [LOG_UOP_BUFF_DEPTH-1:0] uop_addr;
  logic [LOG_INP_BUFF_DEPTH-1:0] inp_addr;
  logic [LOG_WGT_BUFF_DEPTH-1:0] wgt_addr;
  logic [LOG_ACC_BUFF_DEPTH-1:0] acc_raddr, acc_waddr;
  logic [UOP_BITS-1:0] uop_q;
  logic [INP_ELEM_BITS-1:0] inp_q;
  logic [WGT_ELEM_BITS-1:0] wgt_q;
  logic [ACC_ELEM_BITS-1:0] acc_q, acc_wdata;

  /* verilator lint_off PINCONNECTEMPTY */  // uop_rd_en is for vdla_compute's loop check
  vdla_gemm u_gemm (
    .clk, .rst_n, .clear(1'b0), .start, .insn(vdla_pkg::gemm_insn_t'(insn)), .done,
    .uop_rd_en(), .uop_rd_addr_next(uop_addr), .uop_rd_data(uop_q),
    .inp_rd_en(inp_en), .inp_rd_addr(inp_addr), .inp_rd_data(inp_q),
    .wgt_rd_en(wgt_en), .wgt_rd_addr(wgt_addr), .wgt_rd_data(wgt_q),
    .acc_rd_en(acc_re), .acc_rd_addr(acc_raddr), .acc_rd_data(acc_q),
    .acc_wr_en(acc_we), .acc_wr_addr(acc_waddr), .acc_wr_data(acc_wdata)
  );
  /* verilator lint_on PINCONNECTEMPTY */
  assign tb_acc_q = acc_q;

  // as in vdla_compute: a registered read port, read every cycle a cycle ahead
  vdla_sram #(.WIDTH(UOP_BITS), .DEPTH(UOP_BUFF_DEPTH), .OUT_REG(1'b1)) u_uop (
    .clk, .rd_en(1'b1), .rd_addr(uop_addr), .rd_data(uop_q),
    .wr_en(tb_we && tb_sel == 2'd0), .wr_addr(LOG_UOP_BUFF_DEPTH'(tb_addr)), .wr_data(tb_data[UOP_BITS-1:0])
  );
  vdla_sram #(.WIDTH(INP_ELEM_BITS), .DEPTH(INP_BUFF_DEPTH)) u_inp (
    .clk, .rd_en(inp_en), .rd_addr(inp_addr), .rd_data(inp_q),
    .wr_en(tb_we && tb_sel == 2'd1), .wr_addr(LOG_INP_BUFF_DEPTH'(tb_addr)), .wr_data(tb_data[INP_ELEM_BITS-1:0])
  );
  vdla_sram #(.WIDTH(WGT_ELEM_BITS), .DEPTH(WGT_BUFF_DEPTH)) u_wgt (
    .clk, .rd_en(wgt_en), .rd_addr(wgt_addr), .rd_data(wgt_q),
    .wr_en(tb_we && tb_sel == 2'd2), .wr_addr(LOG_WGT_BUFF_DEPTH'(tb_addr)), .wr_data(tb_data)
  );
  vdla_sram #(.WIDTH(ACC_ELEM_BITS), .DEPTH(ACC_BUFF_DEPTH), .WRITE_THROUGH(1'b1)) u_acc (
    .clk, .rd_en(acc_re || tb_acc_re), .rd_addr(tb_acc_re ? LOG_ACC_BUFF_DEPTH'(tb_addr) : acc_raddr), .rd_data(acc_q),
    .wr_en(acc_we || (tb_we && tb_sel == 2'd3)), .wr_addr(acc_we ? acc_waddr : LOG_ACC_BUFF_DEPTH'(tb_addr)),
    .wr_data(acc_we ? acc_wdata : tb_data[ACC_ELEM_BITS-1:0])
  );
endmodule

`default_nettype wire
