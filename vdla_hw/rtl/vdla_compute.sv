// The compute module: runs LOAD UOP, LOAD ACC, GEMM, ALU and FINISH from its command
// queue, one instruction at a time, and owns the micro-op and accumulator SRAMs.
//
// Tokens: pop_prev pops load->compute (l2c), pop_next pops store->compute (s2c),
// push_prev pushes compute->load (c2l), push_next pushes compute->store (c2s).
// Every accumulator write is also sent out (acc_wr_*) so the store module can keep its
// narrowed copy. FINISH completes once `drained` says load and store have retired every
// instruction fetch gave them; `finish` then pulses and the program is done.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_compute (
  input  wire logic                           clk,
  input  wire logic                           rst_n,
  input  wire logic                           clear,
  input  wire logic                           cmd_valid,
  output logic                                cmd_ready,
  input  wire logic [INSN_BITS-1:0]           cmd_insn,
  // tokens
  input  wire logic                           l2c_valid,
  output logic                                l2c_ready,
  input  wire logic                           s2c_valid,
  output logic                                s2c_ready,
  output logic                                c2l_valid,
  input  wire logic                           c2l_ready,
  output logic                                c2s_valid,
  input  wire logic                           c2s_ready,
  input  wire logic                           drained,
  output logic                                finish,
  // DRAM reads: uop, acc
  output logic      [1:0]                     dma_valid,
  input  wire logic [1:0]                     dma_ready,
  output logic      [1:0][AXI_ADDR_WIDTH-1:0] dma_addr,
  output logic      [1:0][AXI_ADDR_WIDTH+1:0] dma_end,  // each command's end byte (vdla_addr_window)
  output logic      [1:0][SIZE_W-1:0]         dma_count,
  output logic      [1:0]                     dma_in_window,  // each command's window verdict (vdla_addr_window)
  input  wire logic [AXI_ADDR_WIDTH-1:0]      win_base,
  input  wire logic [AXI_ADDR_WIDTH-1:0]      win_limit,
  input  wire logic                           uop_el_valid,
  output logic                                uop_el_ready,
  input  wire logic [UOP_ELEM_BITS-1:0]       uop_el_data,
  input  wire logic                           acc_el_valid,
  output logic                                acc_el_ready,
  input  wire logic [ACC_ELEM_BITS-1:0]       acc_el_data,
  // input / weight SRAM read ports
  output logic                                inp_rd_en,
  output logic [LOG_INP_BUFF_DEPTH-1:0]       inp_rd_addr,
  input  wire logic [INP_ELEM_BITS-1:0]       inp_rd_data,
  output logic                                wgt_rd_en,
  output logic [LOG_WGT_BUFF_DEPTH-1:0]       wgt_rd_addr,
  input  wire logic [WGT_ELEM_BITS-1:0]       wgt_rd_data,
  // every accumulator write, for the store module's output buffer
  output logic                                acc_wr_en,
  output logic [LOG_ACC_BUFF_DEPTH-1:0]       acc_wr_addr,
  output logic [ACC_ELEM_BITS-1:0]            acc_wr_data,
  // a program fault (pulse; vdla_fault): a LOAD UOP/ACC block past its buffer, or a GEMM/ALU
  // loop iteration past a buffer (vdla_loop_check)
  output logic                                fault,
  output logic [3:0]                          fault_class,
  output logic [3:0]                          fault_buf,
  output logic [31:0]                         fault_elem,
  output logic [31:0]                         fault_iter
);
  localparam int UIW = LOG_UOP_BUFF_DEPTH;
  localparam int AIW = LOG_ACC_BUFF_DEPTH;

  logic                 exec_start, exec_done;
  logic [INSN_BITS-1:0] insn_bits;

  /* verilator lint_off PINCONNECTEMPTY */  // outputs this module does not need are left open
  vdla_dep_gate #(.HAS_PREV(1'b1), .HAS_NEXT(1'b1)) u_gate (
    .clk, .rst_n, .clear,
    .cmd_valid, .cmd_ready, .cmd_insn,
    .exec_start, .insn(insn_bits), .exec_done,
    .pop_prev_valid(l2c_valid), .pop_prev_ready(l2c_ready),
    .pop_next_valid(s2c_valid), .pop_next_ready(s2c_ready),
    .push_prev_valid(c2l_valid), .push_prev_ready(c2l_ready),
    .push_next_valid(c2s_valid), .push_next_ready(c2s_ready),
    .busy()
  );

  // ---- decode --------------------------------------------------------------------------
  vdla_pkg::mem_insn_t  mem;
  vdla_pkg::gemm_insn_t gemm;
  vdla_pkg::alu_insn_t  alu;
  logic is_uop, is_acc, is_gemm, is_alu, is_finish, is_other;
  assign mem       = vdla_pkg::mem_insn_t'(insn_bits);
  assign gemm      = vdla_pkg::gemm_insn_t'(insn_bits);
  assign alu       = vdla_pkg::alu_insn_t'(insn_bits);
  assign is_uop    = mem.opcode == OP_LOAD && mem.mem_type == MEM_UOP;
  assign is_acc    = mem.opcode == OP_LOAD && mem.mem_type == MEM_ACC;
  assign is_gemm   = mem.opcode == OP_GEMM;
  assign is_alu    = mem.opcode == OP_ALU;
  assign is_finish = mem.opcode == OP_FINISH;
  assign is_other  = !is_uop && !is_acc && !is_gemm && !is_alu && !is_finish;

  // ---- executors -----------------------------------------------------------------------
  logic uop_done, acc_done, gemm_done, alu_done;
  logic finishing, other_done;

  // uop SRAM ports
  logic                     uop_wr_en, uop_rd_en, g_uop_en, a_uop_en;
  logic [UIW-1:0]           uop_wr_addr, uop_rd_addr_next, g_uop_addr_next, a_uop_addr_next;
  logic [UOP_ELEM_BITS-1:0] uop_wr_data;
  logic [UOP_BITS-1:0]      uop_rd_data;
  // acc SRAM ports
  logic                     acc_rd_en, g_acc_rd_en, a_acc_rd_en, l_acc_wr_en, g_acc_wr_en, a_acc_wr_en;
  logic [AIW-1:0]           acc_rd_addr, g_acc_rd_addr, a_acc_rd_addr, l_acc_wr_addr, g_acc_wr_addr, a_acc_wr_addr;
  logic [ACC_ELEM_BITS-1:0] acc_rd_data, l_acc_wr_data, g_acc_wr_data, a_acc_wr_data;

  vdla_tile_loader #(.ELEM_BITS(UOP_ELEM_BITS), .DEPTH(UOP_BUFF_DEPTH)) u_uop_loader (
    .clk, .rst_n, .clear,
    .start(exec_start && is_uop), .insn(mem), .done(uop_done), .busy(),
    .dma_valid(dma_valid[0]), .dma_ready(dma_ready[0]), .dma_addr(dma_addr[0]), .dma_end(dma_end[0]), .dma_count(dma_count[0]),
    .dma_in_window(dma_in_window[0]), .win_base, .win_limit,
    .el_valid(uop_el_valid), .el_ready(uop_el_ready), .el_data(uop_el_data),
    .wr_en(uop_wr_en), .wr_addr(uop_wr_addr), .wr_data(uop_wr_data), .oob(uop_oob), .oob_elem(uop_oob_elem)
  );

  vdla_tile_loader #(.ELEM_BITS(ACC_ELEM_BITS), .DEPTH(ACC_BUFF_DEPTH)) u_acc_loader (
    .clk, .rst_n, .clear,
    .start(exec_start && is_acc), .insn(mem), .done(acc_done), .busy(),
    .dma_valid(dma_valid[1]), .dma_ready(dma_ready[1]), .dma_addr(dma_addr[1]), .dma_end(dma_end[1]), .dma_count(dma_count[1]),
    .dma_in_window(dma_in_window[1]), .win_base, .win_limit,
    .el_valid(acc_el_valid), .el_ready(acc_el_ready), .el_data(acc_el_data),
    .wr_en(l_acc_wr_en), .wr_addr(l_acc_wr_addr), .wr_data(l_acc_wr_data), .oob(acc_oob), .oob_elem(acc_oob_elem)
  );

  vdla_gemm u_gemm (
    .clk, .rst_n, .clear,
    .start(exec_start && is_gemm), .insn(gemm), .done(gemm_done),
    .uop_rd_en(g_uop_en), .uop_rd_addr_next(g_uop_addr_next), .uop_rd_data,
    .inp_rd_en, .inp_rd_addr, .inp_rd_data,
    .wgt_rd_en, .wgt_rd_addr, .wgt_rd_data,
    .acc_rd_en(g_acc_rd_en), .acc_rd_addr(g_acc_rd_addr), .acc_rd_data,
    .acc_wr_en(g_acc_wr_en), .acc_wr_addr(g_acc_wr_addr), .acc_wr_data(g_acc_wr_data)
  );

  vdla_alu u_alu (
    .clk, .rst_n, .clear,
    .start(exec_start && is_alu), .insn(alu), .done(alu_done),
    .uop_rd_en(a_uop_en), .uop_rd_addr_next(a_uop_addr_next), .uop_rd_data,
    .acc_rd_en(a_acc_rd_en), .acc_rd_addr(a_acc_rd_addr), .acc_rd_data,
    .acc_wr_en(a_acc_wr_en), .acc_wr_addr(a_acc_wr_addr), .acc_wr_data(a_acc_wr_data)
  );

  // One executor runs at a time, so the SRAM ports are plain multiplexers. The micro-op SRAM
  // has an output register (a block RAM's clock-to-out no longer feeds the index adders: the
  // ECP5 build's critical path, docs/fpga_ecp5.md) and reads every cycle at the running
  // executor's look-ahead index, chosen by the held instruction (so no handshake reaches the
  // address): the micro-op still arrives the cycle after its iteration (uop_rd_en), as the
  // executors and the loop check expect, and no cycle is added.
  assign uop_rd_en        = g_uop_en || a_uop_en;
  assign uop_rd_addr_next = is_gemm ? g_uop_addr_next : a_uop_addr_next;
  assign acc_rd_en   = g_acc_rd_en || a_acc_rd_en;
  assign acc_rd_addr = g_acc_rd_en ? g_acc_rd_addr : a_acc_rd_addr;
  assign acc_wr_en   = l_acc_wr_en || g_acc_wr_en || a_acc_wr_en;
  assign acc_wr_addr = g_acc_wr_en ? g_acc_wr_addr : a_acc_wr_en ? a_acc_wr_addr : l_acc_wr_addr;
  assign acc_wr_data = g_acc_wr_en ? g_acc_wr_data : a_acc_wr_en ? a_acc_wr_data : l_acc_wr_data;

  vdla_sram #(.WIDTH(UOP_BITS), .DEPTH(UOP_BUFF_DEPTH), .OUT_REG(1'b1), .NO_COLLISION(1'b1)) u_uop_sram (
    .clk, .rd_en(1'b1), .rd_addr(uop_rd_addr_next), .rd_data(uop_rd_data),
    .wr_en(uop_wr_en), .wr_addr(uop_wr_addr), .wr_data(uop_wr_data)
  );

  vdla_sram #(.WIDTH(ACC_ELEM_BITS), .DEPTH(ACC_BUFF_DEPTH), .WRITE_THROUGH(1'b1)) u_acc_sram (
    .clk, .rd_en(acc_rd_en), .rd_addr(acc_rd_addr), .rd_data(acc_rd_data),
    .wr_en(acc_wr_en), .wr_addr(acc_wr_addr), .wr_data(acc_wr_data)
  );

  // ---- fault checks: SRAM blocks of LOAD UOP/ACC, and the GEMM/ALU loop indices ----------
  localparam int FW = 32;
  logic        uop_oob, acc_oob, loop_fault;
  logic [31:0] uop_oob_elem, acc_oob_elem, loop_elem, loop_iter;
  logic [3:0]  loop_buf;
  vdla_loop_check #(.W(FW)) u_loop_check (
    .clk, .rst_n, .clear,
    .start(exec_start && (is_gemm || is_alu)), .is_gemm,
    .check_src(is_gemm ? !gemm.reset : !alu.use_imm), .check_wgt(is_gemm && !gemm.reset),
    .uop_bgn(is_gemm ? gemm.uop_bgn : alu.uop_bgn), .uop_end(is_gemm ? gemm.uop_end : alu.uop_end),
    .iter_in(is_gemm ? gemm.iter_in : alu.iter_in),
    .dst_factor_out(is_gemm ? FW'(gemm.dst_factor_out) : FW'(alu.dst_factor_out)),
    .dst_factor_in(is_gemm ? FW'(gemm.dst_factor_in) : FW'(alu.dst_factor_in)),
    .src_factor_out(is_gemm ? FW'(gemm.src_factor_out) : FW'(alu.src_factor_out)),
    .src_factor_in(is_gemm ? FW'(gemm.src_factor_in) : FW'(alu.src_factor_in)),
    .wgt_factor_out(is_gemm ? FW'(gemm.wgt_factor_out) : '0),
    .wgt_factor_in(is_gemm ? FW'(gemm.wgt_factor_in) : '0),
    .uop_rd_en, .uop_rd_data,
    .fault(loop_fault), .buf_id(loop_buf), .elem(loop_elem), .iter(loop_iter)
  );
  assign fault       = uop_oob || acc_oob || loop_fault;
  assign fault_class = loop_fault ? FAULT_LOOP_INDEX : FAULT_SRAM_RANGE;
  assign fault_buf   = loop_fault ? loop_buf : uop_oob ? BUF_UOP : BUF_ACC;
  assign fault_elem  = loop_fault ? loop_elem : uop_oob ? uop_oob_elem : acc_oob_elem;
  assign fault_iter  = loop_iter;

  // FINISH waits for the rest of the machine to drain; anything else completes at once.
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      finishing  <= 1'b0;
      other_done <= 1'b0;
    end else begin
      other_done <= exec_start && is_other;
      if (exec_start && is_finish) finishing <= 1'b1;
      else if (finishing && drained) finishing <= 1'b0;
    end
  end
  assign finish    = finishing && drained;
  assign exec_done = uop_done || acc_done || gemm_done || alu_done || finish || other_done;
  /* verilator lint_on PINCONNECTEMPTY */
endmodule

`default_nettype wire
