// vdla_alu with its micro-op and accumulator SRAMs and a test back door (as tb_gemm).
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module tb_alu (
  input  wire logic                     clk,
  input  wire logic                     rst_n,
  input  wire logic                     start,
  input  wire logic [INSN_BITS-1:0]     insn,
  output logic                          done,
  input  wire logic                     tb_we,
  /* verilator lint_off UNUSEDSIGNAL */  // same back door as tb_gemm: only uop (0) and acc (3) exist here
  input  wire logic [1:0]               tb_sel,
  input  wire logic [15:0]              tb_addr,
  input  wire logic [ACC_ELEM_BITS-1:0] tb_data,
  /* verilator lint_on UNUSEDSIGNAL */
  input  wire logic                     tb_acc_re,
  output logic [ACC_ELEM_BITS-1:0]      tb_acc_q
);
  logic acc_re, acc_we;
  logic [LOG_UOP_BUFF_DEPTH-1:0] uop_addr;
  logic [LOG_ACC_BUFF_DEPTH-1:0] acc_raddr, acc_waddr;
  logic [UOP_BITS-1:0] uop_q;
  logic [ACC_ELEM_BITS-1:0] acc_q, acc_wdata;

  /* verilator lint_off PINCONNECTEMPTY */  // uop_rd_en is for vdla_compute's loop check
  vdla_alu u_alu (
    .clk, .rst_n, .clear(1'b0), .start, .insn(vdla_pkg::alu_insn_t'(insn)), .done,
    .uop_rd_en(), .uop_rd_addr_next(uop_addr), .uop_rd_data(uop_q),
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
  vdla_sram #(.WIDTH(ACC_ELEM_BITS), .DEPTH(ACC_BUFF_DEPTH), .WRITE_THROUGH(1'b1)) u_acc (
    .clk, .rd_en(acc_re || tb_acc_re), .rd_addr(tb_acc_re ? LOG_ACC_BUFF_DEPTH'(tb_addr) : acc_raddr), .rd_data(acc_q),
    .wr_en(acc_we || (tb_we && tb_sel == 2'd3)), .wr_addr(acc_we ? acc_waddr : LOG_ACC_BUFF_DEPTH'(tb_addr)),
    .wr_data(acc_we ? acc_wdata : tb_data)
  );
endmodule

`default_nettype wire
