// VDLA top level: the AXI-lite control slave, fetch, the three command queues, the four
// dependency-token queues, load / compute / store, the input and weight SRAMs, and one
// AXI4 master to DRAM shared by the DRAM clients.
//
// DRAM is a flat byte space from address 0. Five read clients (instructions, input,
// weight, micro-op and accumulator tiles) share the read channels through a
// round-robin arbiter; store is the only writer. Every burst uses ID 0, INCR, full bus
// width, and stays within one DRAM_BURST_BYTES-aligned block (hence within a 4 KiB
// page). `done` / `irq` follow STATUS.done.
// Every DMA command passes the address window (vdla_addr_window) and the SRAM walks and
// micro-op loops are range-checked; the first fault halts the machine (vdla_fault, docs/rtl.md "Faults"). BUILD_ID is what the BUILD_ID register reads
// (a bitstream flow may stamp it; 0 in simulation).
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_top #(
  parameter logic [AXIL_DATA_WIDTH-1:0] BUILD_ID = '0
) (
  input  wire logic                         clk,
  input  wire logic                         rst_n,
  // AXI-lite control slave
  input  wire logic [AXIL_ADDR_WIDTH-1:0]   s_axil_awaddr,
  input  wire logic                         s_axil_awvalid,
  output logic                              s_axil_awready,
  input  wire logic [AXIL_DATA_WIDTH-1:0]   s_axil_wdata,
  input  wire logic [AXIL_DATA_WIDTH/8-1:0] s_axil_wstrb,
  input  wire logic                         s_axil_wvalid,
  output logic                              s_axil_wready,
  output logic [1:0]                        s_axil_bresp,
  output logic                              s_axil_bvalid,
  input  wire logic                         s_axil_bready,
  input  wire logic [AXIL_ADDR_WIDTH-1:0]   s_axil_araddr,
  input  wire logic                         s_axil_arvalid,
  output logic                              s_axil_arready,
  output logic [AXIL_DATA_WIDTH-1:0]        s_axil_rdata,
  output logic [1:0]                        s_axil_rresp,
  output logic                              s_axil_rvalid,
  input  wire logic                         s_axil_rready,
  // AXI4 master to DRAM
  output logic [AXI_ID_WIDTH-1:0]           m_axi_awid,
  output logic [AXI_ADDR_WIDTH-1:0]         m_axi_awaddr,
  output logic [7:0]                        m_axi_awlen,
  output logic [2:0]                        m_axi_awsize,
  output logic [1:0]                        m_axi_awburst,
  output logic                              m_axi_awvalid,
  input  wire logic                         m_axi_awready,
  output logic [AXI_DATA_WIDTH-1:0]         m_axi_wdata,
  output logic [AXI_DATA_WIDTH/8-1:0]       m_axi_wstrb,
  output logic                              m_axi_wlast,
  output logic                              m_axi_wvalid,
  input  wire logic                         m_axi_wready,
  /* verilator lint_off UNUSEDSIGNAL */  // IDs are all 0 and the DRAM is trusted: responses are not checked
  input  wire logic [AXI_ID_WIDTH-1:0]      m_axi_bid,
  input  wire logic [1:0]                   m_axi_bresp,
  /* verilator lint_on UNUSEDSIGNAL */
  input  wire logic                         m_axi_bvalid,
  output logic                              m_axi_bready,
  output logic [AXI_ID_WIDTH-1:0]           m_axi_arid,
  output logic [AXI_ADDR_WIDTH-1:0]         m_axi_araddr,
  output logic [7:0]                        m_axi_arlen,
  output logic [2:0]                        m_axi_arsize,
  output logic [1:0]                        m_axi_arburst,
  output logic                              m_axi_arvalid,
  input  wire logic                         m_axi_arready,
  /* verilator lint_off UNUSEDSIGNAL */  // as above
  input  wire logic [AXI_ID_WIDTH-1:0]      m_axi_rid,
  input  wire logic [1:0]                   m_axi_rresp,
  /* verilator lint_on UNUSEDSIGNAL */
  input  wire logic [AXI_DATA_WIDTH-1:0]    m_axi_rdata,
  input  wire logic                         m_axi_rlast,
  input  wire logic                         m_axi_rvalid,
  output logic                              m_axi_rready,
  output logic                              done,
  output logic                              irq
);
  localparam logic [1:0] BURST_INCR = 2'b01;
  // Read clients of the arbiter.
  localparam int RD_FETCH = 0;
  localparam int RD_INP = 1;
  localparam int RD_WGT = 2;
  localparam int RD_UOP = 3;
  localparam int RD_ACC = 4;
  localparam int N_RD = 5;

  if (!STRUCT_WIDTHS_OK) begin : g_bad_pkg
    $fatal(1, "vdla_top: an instruction struct of vdla_pkg is not INSN_BITS / UOP_BITS wide; regenerate the package with `vdla hw gen-pkg`");
  end
  if (AXI_DATA_WIDTH != BUS_WIDTH || BUS_WIDTH < 32 || BUS_WIDTH > 1024) begin : g_bad_bus
    $fatal(1, "vdla_top: the AXI data width (%0d) must equal the config's bus width and lie in 32..1024", AXI_DATA_WIDTH);
  end

  // ---- control --------------------------------------------------------------------------
  logic                            clear, start, finish;
  logic [AXIL_DATA_WIDTH-1:0]      insn_count;
  logic [AXI_ADDR_WIDTH-1:0]       insn_addr;
  // the address window and the fault state (vdla_fault, below)
  logic [AXI_ADDR_WIDTH-1:0]       window_base, window_limit;
  logic                            halt, fault_new, bus_busy;
  logic [7:0]                      fault_cause;
  logic [31:0]                     fault_insn, fault_addr, fault_iter;

  vdla_ctrl #(.BUILD_ID(BUILD_ID)) u_ctrl (
    .clk, .rst_n,
    .s_axil_awaddr, .s_axil_awvalid, .s_axil_awready, .s_axil_wdata, .s_axil_wstrb, .s_axil_wvalid,
    .s_axil_wready, .s_axil_bresp, .s_axil_bvalid, .s_axil_bready, .s_axil_araddr, .s_axil_arvalid,
    .s_axil_arready, .s_axil_rdata, .s_axil_rresp, .s_axil_rvalid, .s_axil_rready,
    .clear, .start, .insn_count, .insn_addr, .finish, .done,
    .window_base, .window_limit, .fault_new, .faulted(halt), .fault_cause, .fault_insn, .fault_addr, .fault_iter,
    .bus_busy
  );
  assign irq = done;

  // ---- DRAM read clients and the arbiter ----------------------------------------------------
  logic [N_RD-1:0]                     ar_valid, ar_ready, r_valid, r_ready;
  logic [N_RD-1:0][AXI_ADDR_WIDTH-1:0] ar_addr;
  logic [N_RD-1:0][7:0]                ar_len;
  logic [N_RD-1:0]                     cmd_valid, cmd_ready;
  logic [N_RD-1:0][AXI_ADDR_WIDTH-1:0] cmd_addr;
  logic [N_RD-1:0][AXI_ADDR_WIDTH+1:0] cmd_end;  // each command's end byte, a register of its client
  logic [N_RD-1:0][SIZE_W-1:0]         cmd_count;
  logic [N_RD-1:0]                     cmd_ok;   // each command's window verdict, a register of its client
  // The clients' DMA commands (c_*), each through the address window before its engine.
  logic [N_RD-1:0]                     c_valid, c_ready, win_fault;
  // log2 element bytes of each read client, client RD_FETCH in the low byte (flat: yosys 0.70
  // reads neither unpacked nor multi-dimensional array parameters)
  localparam logic [8*N_RD-1:0] RD_LOG_EB = {8'(LOG_ACC_ELEM_BYTES), 8'(LOG_UOP_ELEM_BYTES), 8'(LOG_WGT_ELEM_BYTES),
                                                8'(LOG_INP_ELEM_BYTES), 8'(LOG_INSN_BYTES)};
  for (genvar k = 0; k < N_RD; k++) begin : g_rd_window
    vdla_addr_window #(.LOG_EB(int'(RD_LOG_EB[8*k +: 8]))) u_window (
      .clk, .rst_n, .clear,
      .in_valid(c_valid[k]), .in_ready(c_ready[k]), .addr(cmd_addr[k]), .count(cmd_count[k]), .span_end(cmd_end[k]),
      .in_window(cmd_ok[k]), .out_valid(cmd_valid[k]), .out_ready(cmd_ready[k]),
      .base(window_base), .limit(window_limit), .halt, .fault(win_fault[k])
    );
  end

  logic [BUS_WIDTH-1:0] rd_data;  // read data out of the arbiter (its optional R slice)
  vdla_axi_rd_arb #(.N(N_RD)) u_rd_arb (
    .clk, .rst_n, .clear,
    .ar_valid, .ar_ready, .ar_addr, .ar_len, .r_valid, .r_ready, .r_data(rd_data),
    .m_arvalid(m_axi_arvalid), .m_arready(m_axi_arready), .m_araddr(m_axi_araddr), .m_arlen(m_axi_arlen),
    .m_rvalid(m_axi_rvalid), .m_rready(m_axi_rready), .m_rdata(m_axi_rdata), .m_rlast(m_axi_rlast)
  );
  assign m_axi_arid    = '0;
  assign m_axi_arsize  = 3'(LOG_BUS_BYTES);
  assign m_axi_arburst = BURST_INCR;

  logic                     insn_el_valid, insn_el_ready, inp_el_valid, inp_el_ready, wgt_el_valid, wgt_el_ready;
  logic                     uop_el_valid, uop_el_ready, acc_el_valid, acc_el_ready;
  logic [INSN_BITS-1:0]     insn_el_data;
  logic [INP_ELEM_BITS-1:0] inp_el_data;
  logic [WGT_ELEM_BITS-1:0] wgt_el_data;
  logic [UOP_ELEM_BITS-1:0] uop_el_data;
  logic [ACC_ELEM_BITS-1:0] acc_el_data;

  vdla_dma_rd #(.ELEM_BITS(INSN_BITS)) u_rd_fetch (
    .clk, .rst_n, .clear,
    .cmd_valid(cmd_valid[RD_FETCH]), .cmd_ready(cmd_ready[RD_FETCH]), .cmd_addr(cmd_addr[RD_FETCH]), .cmd_count(cmd_count[RD_FETCH]),
    .ar_valid(ar_valid[RD_FETCH]), .ar_ready(ar_ready[RD_FETCH]), .ar_addr(ar_addr[RD_FETCH]), .ar_len(ar_len[RD_FETCH]),
    .r_valid(r_valid[RD_FETCH]), .r_ready(r_ready[RD_FETCH]), .r_data(rd_data),
    .el_valid(insn_el_valid), .el_ready(insn_el_ready), .el_data(insn_el_data)
  );
  vdla_dma_rd #(.ELEM_BITS(INP_ELEM_BITS)) u_rd_inp (
    .clk, .rst_n, .clear,
    .cmd_valid(cmd_valid[RD_INP]), .cmd_ready(cmd_ready[RD_INP]), .cmd_addr(cmd_addr[RD_INP]), .cmd_count(cmd_count[RD_INP]),
    .ar_valid(ar_valid[RD_INP]), .ar_ready(ar_ready[RD_INP]), .ar_addr(ar_addr[RD_INP]), .ar_len(ar_len[RD_INP]),
    .r_valid(r_valid[RD_INP]), .r_ready(r_ready[RD_INP]), .r_data(rd_data),
    .el_valid(inp_el_valid), .el_ready(inp_el_ready), .el_data(inp_el_data)
  );
  vdla_dma_rd #(.ELEM_BITS(WGT_ELEM_BITS)) u_rd_wgt (
    .clk, .rst_n, .clear,
    .cmd_valid(cmd_valid[RD_WGT]), .cmd_ready(cmd_ready[RD_WGT]), .cmd_addr(cmd_addr[RD_WGT]), .cmd_count(cmd_count[RD_WGT]),
    .ar_valid(ar_valid[RD_WGT]), .ar_ready(ar_ready[RD_WGT]), .ar_addr(ar_addr[RD_WGT]), .ar_len(ar_len[RD_WGT]),
    .r_valid(r_valid[RD_WGT]), .r_ready(r_ready[RD_WGT]), .r_data(rd_data),
    .el_valid(wgt_el_valid), .el_ready(wgt_el_ready), .el_data(wgt_el_data)
  );
  vdla_dma_rd #(.ELEM_BITS(UOP_ELEM_BITS)) u_rd_uop (
    .clk, .rst_n, .clear,
    .cmd_valid(cmd_valid[RD_UOP]), .cmd_ready(cmd_ready[RD_UOP]), .cmd_addr(cmd_addr[RD_UOP]), .cmd_count(cmd_count[RD_UOP]),
    .ar_valid(ar_valid[RD_UOP]), .ar_ready(ar_ready[RD_UOP]), .ar_addr(ar_addr[RD_UOP]), .ar_len(ar_len[RD_UOP]),
    .r_valid(r_valid[RD_UOP]), .r_ready(r_ready[RD_UOP]), .r_data(rd_data),
    .el_valid(uop_el_valid), .el_ready(uop_el_ready), .el_data(uop_el_data)
  );
  vdla_dma_rd #(.ELEM_BITS(ACC_ELEM_BITS)) u_rd_acc (
    .clk, .rst_n, .clear,
    .cmd_valid(cmd_valid[RD_ACC]), .cmd_ready(cmd_ready[RD_ACC]), .cmd_addr(cmd_addr[RD_ACC]), .cmd_count(cmd_count[RD_ACC]),
    .ar_valid(ar_valid[RD_ACC]), .ar_ready(ar_ready[RD_ACC]), .ar_addr(ar_addr[RD_ACC]), .ar_len(ar_len[RD_ACC]),
    .r_valid(r_valid[RD_ACC]), .r_ready(r_ready[RD_ACC]), .r_data(rd_data),
    .el_valid(acc_el_valid), .el_ready(acc_el_ready), .el_data(acc_el_data)
  );

  // ---- fetch and the command queues ------------------------------------------------------
  logic [INSN_BITS-1:0] fetch_insn, load_insn, compute_insn, store_insn;
  logic                 fl_valid, fl_ready, fc_valid, fc_ready, fs_valid, fs_ready;
  logic                 lq_valid, lq_ready, cq_valid, cq_ready, sq_valid, sq_ready;
  logic [$clog2(CMD_QUEUE_DEPTH+1)-1:0] lq_count, sq_count;
  // Each queued instruction carries the low IDX_W bits of its index in the program: enough
  // to rebuild the whole index when a module takes it, as no more instructions than the
  // queues and modules hold lie between it and the latest dispatched.
  localparam int IDX_W = $clog2(3 * CMD_QUEUE_DEPTH + 8) + 1;
  logic [31:0]          dispatched;  // instructions dispatched since start
  logic [IDX_W-1:0]     lq_idx, cq_idx, sq_idx;
  logic                 fl_go, fc_go, fs_go, lq_take, cq_take, sq_take;
  logic                 fl_shown, fc_shown, fs_shown;
  logic [31:0]          load_idx, compute_idx, store_idx;  // the instruction each module runs
  logic [31:0]          compute_idx_q;  // compute's instruction one cycle ago: the loop check reports a cycle late
  // After a fault fetch dispatches nothing more; an instruction already offered to a full
  // queue stays offered (valid/ready: an offer is never withdrawn). The modules run on through
  // what their queues hold: their DMA commands are held back at the window (halt), so they
  // stop at their next LOAD/STORE, and GEMM/ALU only touch SRAM.
  assign fl_go = fl_valid && (!halt || fl_shown);
  assign fc_go = fc_valid && (!halt || fc_shown);
  assign fs_go = fs_valid && (!halt || fs_shown);

  function automatic logic [31:0] full_index(input logic [31:0] latest, input logic [IDX_W-1:0] low);
    logic [IDX_W-1:0] back;  // how far back it was dispatched, modulo 2^IDX_W
    back = latest[IDX_W-1:0] - low;
    full_index = latest - 32'(back);
  endfunction

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      {fl_shown, fc_shown, fs_shown} <= '0;
      dispatched  <= '0;
      load_idx    <= '0;
      compute_idx <= '0;
      compute_idx_q <= '0;
      store_idx   <= '0;
    end else begin
      compute_idx_q <= compute_idx;
      fl_shown   <= fl_go && !fl_ready;
      fc_shown   <= fc_go && !fc_ready;
      fs_shown   <= fs_go && !fs_ready;
      dispatched <= dispatched + 32'((fl_go && fl_ready) || (fc_go && fc_ready) || (fs_go && fs_ready));
      if (lq_take) load_idx    <= full_index(dispatched, lq_idx);
      if (cq_take) compute_idx <= full_index(dispatched, cq_idx);
      if (sq_take) store_idx   <= full_index(dispatched, sq_idx);
    end
  end

  vdla_fetch u_fetch (
    .clk, .rst_n, .clear, .start, .insn_addr, .insn_count,
    .dma_valid(c_valid[RD_FETCH]), .dma_ready(c_ready[RD_FETCH]), .dma_addr(cmd_addr[RD_FETCH]), .dma_end(cmd_end[RD_FETCH]),
    .dma_count(cmd_count[RD_FETCH]), .dma_in_window(cmd_ok[RD_FETCH]), .win_base(window_base), .win_limit(window_limit),
    .el_valid(insn_el_valid), .el_ready(insn_el_ready), .el_data(insn_el_data),
    .load_valid(fl_valid), .load_ready(fl_ready && fl_go), .compute_valid(fc_valid), .compute_ready(fc_ready && fc_go),
    .store_valid(fs_valid), .store_ready(fs_ready && fs_go), .insn(fetch_insn)
  );

  vdla_fifo #(.WIDTH(IDX_W + INSN_BITS), .DEPTH(CMD_QUEUE_DEPTH)) u_load_queue (
    .clk, .rst_n, .clear, .in_valid(fl_go), .in_ready(fl_ready), .in_data({dispatched[IDX_W-1:0], fetch_insn}),
    .out_valid(lq_valid), .out_ready(lq_take), .out_data({lq_idx, load_insn}), .count(lq_count)
  );
  /* verilator lint_off PINCONNECTEMPTY */  // outputs this module does not need are left open
  vdla_fifo #(.WIDTH(IDX_W + INSN_BITS), .DEPTH(CMD_QUEUE_DEPTH)) u_compute_queue (
    .clk, .rst_n, .clear, .in_valid(fc_go), .in_ready(fc_ready), .in_data({dispatched[IDX_W-1:0], fetch_insn}),
    .out_valid(cq_valid), .out_ready(cq_take), .out_data({cq_idx, compute_insn}), .count()
  );
  vdla_fifo #(.WIDTH(IDX_W + INSN_BITS), .DEPTH(CMD_QUEUE_DEPTH)) u_store_queue (
    .clk, .rst_n, .clear, .in_valid(fs_go), .in_ready(fs_ready), .in_data({dispatched[IDX_W-1:0], fetch_insn}),
    .out_valid(sq_valid), .out_ready(sq_take), .out_data({sq_idx, store_insn}), .count(sq_count)
  );
  assign lq_take = lq_valid && lq_ready;
  assign cq_take = cq_valid && cq_ready;
  assign sq_take = sq_valid && sq_ready;

  // ---- dependency-token queues (a token carries no data) ------------------------------------
  logic l2c_push, l2c_push_ready, l2c_pop_valid, l2c_pop;
  logic c2l_push, c2l_push_ready, c2l_pop_valid, c2l_pop;
  logic c2s_push, c2s_push_ready, c2s_pop_valid, c2s_pop;
  logic s2c_push, s2c_push_ready, s2c_pop_valid, s2c_pop;

  vdla_fifo #(.WIDTH(1), .DEPTH(DEP_QUEUE_DEPTH)) u_l2c (
    .clk, .rst_n, .clear, .in_valid(l2c_push), .in_ready(l2c_push_ready), .in_data(1'b1),
    .out_valid(l2c_pop_valid), .out_ready(l2c_pop), .out_data(), .count()
  );
  vdla_fifo #(.WIDTH(1), .DEPTH(DEP_QUEUE_DEPTH)) u_c2l (
    .clk, .rst_n, .clear, .in_valid(c2l_push), .in_ready(c2l_push_ready), .in_data(1'b1),
    .out_valid(c2l_pop_valid), .out_ready(c2l_pop), .out_data(), .count()
  );
  vdla_fifo #(.WIDTH(1), .DEPTH(DEP_QUEUE_DEPTH)) u_c2s (
    .clk, .rst_n, .clear, .in_valid(c2s_push), .in_ready(c2s_push_ready), .in_data(1'b1),
    .out_valid(c2s_pop_valid), .out_ready(c2s_pop), .out_data(), .count()
  );
  vdla_fifo #(.WIDTH(1), .DEPTH(DEP_QUEUE_DEPTH)) u_s2c (
    .clk, .rst_n, .clear, .in_valid(s2c_push), .in_ready(s2c_push_ready), .in_data(1'b1),
    .out_valid(s2c_pop_valid), .out_ready(s2c_pop), .out_data(), .count()
  );

  // ---- the input and weight SRAMs (written by load, read by compute) ------------------------
  logic                          inp_wr_en, wgt_wr_en, inp_rd_en, wgt_rd_en;
  logic [LOG_INP_BUFF_DEPTH-1:0] inp_wr_addr, inp_rd_addr;
  logic [LOG_WGT_BUFF_DEPTH-1:0] wgt_wr_addr, wgt_rd_addr;
  logic [INP_ELEM_BITS-1:0]      inp_wr_data, inp_rd_data;
  logic [WGT_ELEM_BITS-1:0]      wgt_wr_data, wgt_rd_data;

  vdla_sram #(.WIDTH(INP_ELEM_BITS), .DEPTH(INP_BUFF_DEPTH)) u_inp_sram (
    .clk, .rd_en(inp_rd_en), .rd_addr(inp_rd_addr), .rd_data(inp_rd_data),
    .wr_en(inp_wr_en), .wr_addr(inp_wr_addr), .wr_data(inp_wr_data)
  );
  vdla_sram #(.WIDTH(WGT_ELEM_BITS), .DEPTH(WGT_BUFF_DEPTH)) u_wgt_sram (
    .clk, .rd_en(wgt_rd_en), .rd_addr(wgt_rd_addr), .rd_data(wgt_rd_data),
    .wr_en(wgt_wr_en), .wr_addr(wgt_wr_addr), .wr_data(wgt_wr_data)
  );

  // ---- load / compute / store ----------------------------------------------------------------
  logic load_busy, store_busy, drained;
  logic load_fault, compute_fault, store_fault;
  logic [3:0] load_fault_buf, compute_fault_class, compute_fault_buf;
  logic [31:0] load_fault_elem, compute_fault_elem, compute_fault_iter, store_fault_elem;
  logic                          acc_wr_en;
  logic [LOG_ACC_BUFF_DEPTH-1:0] acc_wr_addr;
  logic [ACC_ELEM_BITS-1:0]      acc_wr_data;

  vdla_load u_load (
    .clk, .rst_n, .clear,
    .cmd_valid(lq_valid), .cmd_ready(lq_ready), .cmd_insn(load_insn),
    .c2l_valid(c2l_pop_valid), .c2l_ready(c2l_pop), .l2c_valid(l2c_push), .l2c_ready(l2c_push_ready),
    .busy(load_busy),
    .dma_valid(c_valid[RD_WGT:RD_INP]), .dma_ready(c_ready[RD_WGT:RD_INP]),
    .dma_addr(cmd_addr[RD_WGT:RD_INP]), .dma_end(cmd_end[RD_WGT:RD_INP]), .dma_count(cmd_count[RD_WGT:RD_INP]),
    .dma_in_window(cmd_ok[RD_WGT:RD_INP]), .win_base(window_base), .win_limit(window_limit),
    .inp_el_valid, .inp_el_ready, .inp_el_data, .wgt_el_valid, .wgt_el_ready, .wgt_el_data,
    .inp_wr_en, .inp_wr_addr, .inp_wr_data, .wgt_wr_en, .wgt_wr_addr, .wgt_wr_data,
    .fault(load_fault), .fault_buf(load_fault_buf), .fault_elem(load_fault_elem)
  );

  // FINISH may retire once load and store have run everything fetch gave them.
  assign drained = !load_busy && !lq_valid && lq_count == '0 && !store_busy && !sq_valid && sq_count == '0;

  vdla_compute u_compute (
    .clk, .rst_n, .clear,
    .cmd_valid(cq_valid), .cmd_ready(cq_ready), .cmd_insn(compute_insn),
    .l2c_valid(l2c_pop_valid), .l2c_ready(l2c_pop), .s2c_valid(s2c_pop_valid), .s2c_ready(s2c_pop),
    .c2l_valid(c2l_push), .c2l_ready(c2l_push_ready), .c2s_valid(c2s_push), .c2s_ready(c2s_push_ready),
    .drained, .finish,
    .dma_valid(c_valid[RD_ACC:RD_UOP]), .dma_ready(c_ready[RD_ACC:RD_UOP]),
    .dma_addr(cmd_addr[RD_ACC:RD_UOP]), .dma_end(cmd_end[RD_ACC:RD_UOP]), .dma_count(cmd_count[RD_ACC:RD_UOP]),
    .dma_in_window(cmd_ok[RD_ACC:RD_UOP]), .win_base(window_base), .win_limit(window_limit),
    .uop_el_valid, .uop_el_ready, .uop_el_data, .acc_el_valid, .acc_el_ready, .acc_el_data,
    .inp_rd_en, .inp_rd_addr, .inp_rd_data, .wgt_rd_en, .wgt_rd_addr, .wgt_rd_data,
    .acc_wr_en, .acc_wr_addr, .acc_wr_data,
    .fault(compute_fault), .fault_class(compute_fault_class), .fault_buf(compute_fault_buf),
    .fault_elem(compute_fault_elem), .fault_iter(compute_fault_iter)
  );

  logic                     st_cmd_valid, st_cmd_ready, st_cmd_ok, st_el_valid, st_el_ready, st_idle;
  logic [AXI_ADDR_WIDTH-1:0] st_cmd_addr;
  logic [AXI_ADDR_WIDTH+1:0] st_cmd_end;
  logic [SIZE_W-1:0]        st_cmd_count;
  logic [OUT_ELEM_BITS-1:0] st_el_data;

  vdla_store u_store (
    .clk, .rst_n, .clear,
    .cmd_valid(sq_valid), .cmd_ready(sq_ready), .cmd_insn(store_insn),
    .c2s_valid(c2s_pop_valid), .c2s_ready(c2s_pop), .s2c_valid(s2c_push), .s2c_ready(s2c_push_ready),
    .busy(store_busy), .acc_wr_en, .acc_wr_addr, .acc_wr_data,
    .dma_valid(st_cmd_valid), .dma_ready(st_cmd_ready), .dma_addr(st_cmd_addr), .dma_end(st_cmd_end), .dma_count(st_cmd_count),
    .dma_in_window(st_cmd_ok), .win_base(window_base), .win_limit(window_limit),
    .el_valid(st_el_valid), .el_ready(st_el_ready), .el_data(st_el_data), .dma_idle(st_idle),
    .fault(store_fault), .fault_elem(store_fault_elem)
  );

  // The store's DRAM commands through the address window.
  logic                      st_win_valid, st_win_ready, st_win_fault;
  vdla_addr_window #(.LOG_EB(LOG_OUT_ELEM_BYTES)) u_store_window (
    .clk, .rst_n, .clear,
    .in_valid(st_cmd_valid), .in_ready(st_cmd_ready), .addr(st_cmd_addr), .count(st_cmd_count), .span_end(st_cmd_end), .in_window(st_cmd_ok),
    .out_valid(st_win_valid), .out_ready(st_win_ready),
    .base(window_base), .limit(window_limit), .halt, .fault(st_win_fault)
  );

  vdla_dma_wr #(.ELEM_BITS(OUT_ELEM_BITS)) u_wr_store (
    .clk, .rst_n, .clear,
    .cmd_valid(st_win_valid), .cmd_ready(st_win_ready), .cmd_addr(st_cmd_addr), .cmd_count(st_cmd_count),
    .el_valid(st_el_valid), .el_ready(st_el_ready), .el_data(st_el_data),
    .aw_valid(m_axi_awvalid), .aw_ready(m_axi_awready), .aw_addr(m_axi_awaddr), .aw_len(m_axi_awlen),
    .w_valid(m_axi_wvalid), .w_ready(m_axi_wready), .w_data(m_axi_wdata), .w_strb(m_axi_wstrb), .w_last(m_axi_wlast),
    .b_valid(m_axi_bvalid), .b_ready(m_axi_bready), .idle(st_idle)
  );
  assign m_axi_awid    = '0;
  assign m_axi_awsize  = 3'(LOG_BUS_BYTES);
  assign m_axi_awburst = BURST_INCR;
  /* verilator lint_on PINCONNECTEMPTY */

  // ---- faults --------------------------------------------------------------------------------
  localparam int N_FAULT = 8;
  localparam logic [4*N_RD-1:0] RD_BUF = {BUF_ACC, BUF_UOP, BUF_WGT, BUF_INP, BUF_INSN};
  logic [N_FAULT-1:0]       f_valid;
  logic [N_FAULT-1:0][7:0]  f_cause;
  logic [N_FAULT-1:0][31:0] f_insn, f_addr, f_iter;
  logic [31:0]              fetch_idx;  // first instruction of the chunk fetch asks for
  assign fetch_idx = 32'((cmd_addr[RD_FETCH] - insn_addr) >> LOG_INSN_BYTES);
  always_comb begin
    for (int k = 0; k < N_RD; k++) begin
      f_valid[k] = win_fault[k];
      f_cause[k] = {RD_BUF[4*k +: 4], k == RD_FETCH ? FAULT_FETCH_WINDOW : FAULT_DRAM_WINDOW};
      f_insn[k]  = k == RD_FETCH ? fetch_idx : (k == RD_INP || k == RD_WGT) ? load_idx : compute_idx;
      f_addr[k]  = 32'(cmd_addr[k]);
      f_iter[k]  = '0;
    end
    f_valid[5] = st_win_fault;
    f_cause[5] = {BUF_OUT, FAULT_DRAM_WINDOW};
    f_insn[5]  = store_idx;
    f_addr[5]  = 32'(st_cmd_addr);
    f_iter[5]  = '0;
    f_valid[6] = load_fault || store_fault;
    f_cause[6] = load_fault ? {load_fault_buf, FAULT_SRAM_RANGE} : {BUF_OUT, FAULT_SRAM_RANGE};
    f_insn[6]  = load_fault ? load_idx : store_idx;
    f_addr[6]  = load_fault ? load_fault_elem : store_fault_elem;
    f_iter[6]  = '0;
    f_valid[7] = compute_fault;
    f_cause[7] = {compute_fault_buf, compute_fault_class};
    f_insn[7]  = compute_fault_class == FAULT_LOOP_INDEX ? compute_idx_q : compute_idx;
    f_addr[7]  = compute_fault_elem;
    f_iter[7]  = compute_fault_iter;
  end

  vdla_fault #(.N(N_FAULT)) u_fault (
    .clk, .rst_n, .clear,
    .src_valid(f_valid), .src_cause(f_cause), .src_insn(f_insn), .src_addr(f_addr), .src_iter(f_iter),
    .halt, .fault_new, .cause(fault_cause), .insn(fault_insn), .addr(fault_addr), .iter(fault_iter),
    .ar_fire(m_axi_arvalid && m_axi_arready), .ar_len(m_axi_arlen), .r_fire(m_axi_rvalid && m_axi_rready),
    .aw_fire(m_axi_awvalid && m_axi_awready), .b_fire(m_axi_bvalid && m_axi_bready),
    .pending_req(m_axi_arvalid || m_axi_awvalid || m_axi_wvalid), .bus_busy
  );

`ifndef SYNTHESIS
  // The AXI burst rules above, checked in every simulation (docs/rtl.md, "Assertions").
  vdla_axi_check u_axi_check (
    .clk, .rst_n, .clear,
    .ar_valid(m_axi_arvalid), .ar_ready(m_axi_arready), .ar_addr(m_axi_araddr), .ar_len(m_axi_arlen),
    .aw_valid(m_axi_awvalid), .aw_ready(m_axi_awready), .aw_addr(m_axi_awaddr), .aw_len(m_axi_awlen),
    .w_valid(m_axi_wvalid), .w_ready(m_axi_wready), .w_data(m_axi_wdata), .w_strb(m_axi_wstrb), .w_last(m_axi_wlast)
  );
`endif

`ifdef FORMAL
`ifdef VDLA_FORMAL_LIVE_ROOM
  // The whole-machine liveness tasks (vdla_hw/formal/liveness.py, live_config) elaborate this
  // module with command and token queues sized to their program rather than the config's. That
  // is invisible only if no queue ever fills: then every queue's in_ready stays high, as it does
  // at the config's larger depths, and the run is cycle for cycle the config's (docs/rtl.md,
  // "Controller-level liveness"). Checked here, in the same run as the liveness properties.
  always_ff @(posedge clk) begin
    if (rst_n) begin
      a_live_room_cmd: assert (fl_ready && fc_ready && fs_ready);
      a_live_room_dep: assert (l2c_push_ready && c2l_push_ready && c2s_push_ready && s2c_push_ready);
    end
  end
`endif
`endif
endmodule

`default_nettype wire
