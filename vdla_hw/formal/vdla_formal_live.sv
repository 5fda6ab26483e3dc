// Formal harness (vdla hw prove, tasks "live_*"): the whole machine, vdla_top, runs one program
// and must end it in a bounded number of cycles (docs/rtl.md, "Controller-level liveness").
//
// The include file (written by vdla_hw/formal/liveness.py for the task) gives the program (its
// length PROG_LEN, address INSN_ADDR and the function dram_beat: the constant bus beats of the
// instructions and micro-ops, the solver's free data elsewhere), the window, the DRAM latency
// bound LAT, the cycle bound BOUND and the STATUS.fault the run must end with (EXPECT_FAULT).
// The harness is the driver and the DRAM:
//  - AXI-lite: it writes WINDOW_BASE, WINDOW_LIMIT, INSN_ADDR, INSN_COUNT, then CONTROL.start;
//    once `done` rises it reads STATUS.
//  - AXI read slave: one burst at a time; ARREADY, each R beat and nothing else are the solver's
//    choice, but none waits more than LAT cycles (ARREADY within LAT cycles of the slave being
//    free, a beat within LAT cycles of the previous beat or of the AR). RDATA is dram_beat.
//  - AXI write slave: AWREADY and WREADY within LAT cycles of being asked, each B within LAT
//    cycles of its burst's last W beat.
// Asserted: `done` within BOUND cycles of the CONTROL write that starts the run
// (a_live_done), and STATUS.fault as the program expects: clear for a legal program (it ended
// at FINISH), set for the faulting one (a_live_status).
`default_nettype none
/* verilator lint_off IMPORTSTAR */
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_formal_live (
  input wire logic                      clk,
  input wire logic                      rst_n,
  // the DRAM's free choices
  input wire logic                      ar_go,
  input wire logic                      r_go,
  input wire logic [BUS_WIDTH-1:0]      r_free,
  input wire logic                      aw_go,
  input wire logic                      w_go,
  input wire logic                      b_go
);
`include "vdla_formal_live_prog.svh"
  localparam int LW = $clog2(LAT + 1) + 1;
  localparam int CW = $clog2(BOUND + 2) + 1;

  logic [AXIL_ADDR_WIDTH-1:0]   awaddr, araddr;
  logic                         awvalid, awready, wvalid, wready, bvalid, arvalid, arready, rvalid;
  logic [AXIL_DATA_WIDTH-1:0]   wdata, rdata;
  logic [1:0]                   bresp, rresp;

  logic [AXI_ID_WIDTH-1:0]      m_awid, m_arid;
  logic [AXI_ADDR_WIDTH-1:0]    m_awaddr, m_araddr;
  logic [7:0]                   m_awlen, m_arlen;
  logic [2:0]                   m_awsize, m_arsize;
  logic [1:0]                   m_awburst, m_arburst;
  logic                         m_awvalid, m_awready, m_wlast, m_wvalid, m_wready, m_bvalid, m_bready;
  logic                         m_arvalid, m_arready, m_rlast, m_rvalid, m_rready;
  logic [BUS_WIDTH-1:0]         m_wdata, m_rdata;
  logic [BUS_WIDTH/8-1:0]       m_wstrb;
  logic                         done, irq;

  vdla_top u_top (
    .clk, .rst_n,
    .s_axil_awaddr(awaddr), .s_axil_awvalid(awvalid), .s_axil_awready(awready), .s_axil_wdata(wdata),
    .s_axil_wstrb('1), .s_axil_wvalid(wvalid), .s_axil_wready(wready), .s_axil_bresp(bresp), .s_axil_bvalid(bvalid),
    .s_axil_bready(1'b1), .s_axil_araddr(araddr), .s_axil_arvalid(arvalid), .s_axil_arready(arready),
    .s_axil_rdata(rdata), .s_axil_rresp(rresp), .s_axil_rvalid(rvalid), .s_axil_rready(1'b1),
    .m_axi_awid(m_awid), .m_axi_awaddr(m_awaddr), .m_axi_awlen(m_awlen), .m_axi_awsize(m_awsize),
    .m_axi_awburst(m_awburst), .m_axi_awvalid(m_awvalid), .m_axi_awready(m_awready),
    .m_axi_wdata(m_wdata), .m_axi_wstrb(m_wstrb), .m_axi_wlast(m_wlast), .m_axi_wvalid(m_wvalid),
    .m_axi_wready(m_wready), .m_axi_bid('0), .m_axi_bresp(2'b00), .m_axi_bvalid(m_bvalid), .m_axi_bready(m_bready),
    .m_axi_arid(m_arid), .m_axi_araddr(m_araddr), .m_axi_arlen(m_arlen), .m_axi_arsize(m_arsize),
    .m_axi_arburst(m_arburst), .m_axi_arvalid(m_arvalid), .m_axi_arready(m_arready),
    .m_axi_rid('0), .m_axi_rresp(2'b00), .m_axi_rdata(m_rdata), .m_axi_rlast(m_rlast), .m_axi_rvalid(m_rvalid),
    .m_axi_rready(m_rready), .done, .irq
  );

  // ---- the driver: five register writes, then a STATUS read once done ----------------------
  logic [2:0] step;       // register writes done
  logic       started;    // the CONTROL write was taken
  logic       asked;      // the STATUS read was taken
  logic       status_seen;
  logic [AXIL_DATA_WIDTH-1:0] status;
  always_comb begin
    case (step)
      3'd0: begin awaddr = REG_WINDOW_BASE;  wdata = AXIL_DATA_WIDTH'(WIN_BASE); end
      3'd1: begin awaddr = REG_WINDOW_LIMIT; wdata = AXIL_DATA_WIDTH'(WIN_LIMIT); end
      3'd2: begin awaddr = REG_INSN_ADDR;    wdata = AXIL_DATA_WIDTH'(INSN_ADDR); end
      3'd3: begin awaddr = REG_INSN_COUNT;   wdata = AXIL_DATA_WIDTH'(PROG_LEN); end
      default: begin awaddr = REG_CONTROL;   wdata = AXIL_DATA_WIDTH'(1) << CONTROL_START_BIT; end
    endcase
  end
  assign awvalid = step <= 3'd4;
  assign wvalid  = awvalid;
  assign araddr  = REG_STATUS;
  assign arvalid = done && started && !asked;

  logic [CW-1:0] since;   // cycles since the CONTROL write, saturating
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      step <= '0; started <= 1'b0; asked <= 1'b0; status_seen <= 1'b0; status <= '0; since <= '0;
    end else begin
      if (awvalid && awready) begin
        step <= step + 1'b1;
        if (step == 3'd4) started <= 1'b1;
      end
      if (started && since != '1) since <= since + 1'b1;
      if (arvalid && arready) asked <= 1'b1;
      if (rvalid && asked && !status_seen) begin
        status_seen <= 1'b1;
        status      <= rdata;
      end
    end
  end

  // ---- the DRAM: reads, one burst at a time ------------------------------------------------
  logic                      r_busy, r_shown;
  logic [AXI_ADDR_WIDTH-1:0] r_addr;
  logic [8:0]                r_left;
  logic [LW-1:0]             ar_wait, r_wait;
  logic [BUS_WIDTH-1:0]      r_data_q;

  assign m_arready = !r_busy && (ar_go || ar_wait == LW'(LAT - 1));
  assign m_rvalid  = r_shown;
  assign m_rdata   = r_data_q;
  assign m_rlast   = r_left == 9'd1;
  logic present;  // a beat goes up this cycle (the first of a burst, or the next one)
  assign present = r_busy && (!r_shown || m_rready) && !(r_shown && m_rready && r_left == 9'd1)
                   && (r_go || r_wait == LW'(LAT - 1));

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      r_busy <= 1'b0; r_shown <= 1'b0; r_addr <= '0; r_left <= '0; ar_wait <= '0; r_wait <= '0; r_data_q <= '0;
    end else begin
      // counted only while the slave is free: during a burst ARREADY is low by the one-burst rule, and a
      // count run on through it would pass LAT - 1 and wrap, holding the next AR up to 2^LW cycles
      ar_wait <= (m_arvalid && !m_arready && !r_busy) ? ar_wait + 1'b1 : '0;
      if (m_arvalid && m_arready) begin
        r_busy <= 1'b1;
        r_addr <= m_araddr;
        r_left <= {1'b0, m_arlen} + 9'd1;
        r_wait <= '0;
      end else if (r_busy) begin
        if (r_shown && m_rready) begin
          r_addr <= r_addr + AXI_ADDR_WIDTH'(BUS_WIDTH / 8);
          r_left <= r_left - 9'd1;
          if (r_left == 9'd1) r_busy <= 1'b0;
        end
        if (present) begin
          r_shown  <= 1'b1;
          r_wait   <= '0;
          r_data_q <= dram_beat((r_shown && m_rready) ? r_addr + AXI_ADDR_WIDTH'(BUS_WIDTH / 8) : r_addr, r_free);
        end else if (r_shown && m_rready) begin
          r_shown <= 1'b0;
          r_wait  <= '0;
        end else if (!r_shown) begin
          r_wait <= r_wait + 1'b1;
        end
      end
    end
  end

  // ---- the DRAM: writes --------------------------------------------------------------------
  logic [LW-1:0] aw_wait, w_wait, b_wait;
  logic [4:0]    b_owed;  // bursts whose last W beat was taken and whose B is not yet sent
  assign m_awready = aw_go || aw_wait == LW'(LAT - 1);
  assign m_wready  = w_go || w_wait == LW'(LAT - 1);
  assign m_bvalid  = b_owed != '0 && (b_go || b_wait == LW'(LAT - 1));
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      aw_wait <= '0; w_wait <= '0; b_wait <= '0; b_owed <= '0;
    end else begin
      aw_wait <= (m_awvalid && !m_awready) ? aw_wait + 1'b1 : '0;
      w_wait  <= (m_wvalid && !m_wready) ? w_wait + 1'b1 : '0;
      b_wait  <= (b_owed != '0 && !(m_bvalid && m_bready)) ? b_wait + 1'b1 : '0;
      b_owed  <= b_owed + 5'(m_wvalid && m_wready && m_wlast) - 5'(m_bvalid && m_bready);
    end
  end

`ifdef FORMAL
  initial assume (!rst_n);
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  // A reset of one cycle, then none: the run is one program from power-up.
  always_ff @(posedge clk) if (f_past) assume (rst_n);

  always_ff @(posedge clk) begin
    if (rst_n) begin
      // A B handshake needs BREADY: the bound on B holds only if the machine takes it; it always does.
      a_live_bready: assert (m_bready || b_owed == '0);
      a_live_done: assert (!started || done || since < CW'(BOUND));
      if (status_seen) a_live_status: assert (status[STATUS_DONE_BIT] && status[STATUS_FAULT_BIT] == EXPECT_FAULT);
    end
  end
`ifdef VDLA_FORMAL_LIVE_PROBES
  // a_live_done at several bounds K at once (vdla_hw/formal/live_bound.py, the search for the slowest
  // run): a_live_done_<K> fails, at the frame where `since` reaches K, exactly when some run is still
  // busy K cycles after its start; BOUND is then the largest K, which sizes `since`.
`include "vdla_formal_live_probes.svh"
`endif
`endif
endmodule

`default_nettype wire
