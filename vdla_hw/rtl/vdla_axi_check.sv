// Simulation-only checker of the AXI4 master's burst rules, instantiated in vdla_top
// under `ifndef SYNTHESIS` (yosys defines SYNTHESIS, so synthesis sees an empty module).
//
// It checks what the design promises the DRAM (see vdla_top): every AR/AW burst starts on
// a bus-width boundary and stays inside one 4 KiB page, a request or write beat stays
// stable until accepted, and WLAST marks exactly the last beat of each write burst (W
// beats follow their burst's AW, as vdla_dma_wr sends them). See docs/rtl.md, "Assertions".
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

/* verilator lint_off UNUSEDSIGNAL */  // only the low 12 address bits matter for the page rule
module vdla_axi_check (
  input wire logic                      clk,
  input wire logic                      rst_n,
  input wire logic                      clear,
  input wire logic                      ar_valid,
  input wire logic                      ar_ready,
  input wire logic [AXI_ADDR_WIDTH-1:0] ar_addr,
  input wire logic [7:0]                ar_len,
  input wire logic                      aw_valid,
  input wire logic                      aw_ready,
  input wire logic [AXI_ADDR_WIDTH-1:0] aw_addr,
  input wire logic [7:0]                aw_len,
  input wire logic                      w_valid,
  input wire logic                      w_ready,
  input wire logic [BUS_WIDTH-1:0]      w_data,
  input wire logic [BUS_BYTES-1:0]      w_strb,
  input wire logic                      w_last
);
/* verilator lint_on UNUSEDSIGNAL */
`ifndef SYNTHESIS
  localparam int PAGE = 4096;

  // Bytes from the start of the burst's 4 KiB page to the end of the burst.
  function automatic int unsigned burst_end(input logic [11:0] page_off, input logic [7:0] len);
    burst_end = 32'(page_off) + ((32'(len) + 1) << LOG_BUS_BYTES);
  endfunction

  a_axi_ar_burst: assert property (@(posedge clk) disable iff (!rst_n || clear)
                                   ar_valid |-> ar_addr[LOG_BUS_BYTES-1:0] == '0 && burst_end(ar_addr[11:0], ar_len) <= PAGE)
    else $error("vdla_axi_check a_axi_ar_burst: read burst at 0x%0h of %0d beats is unaligned or crosses a 4 KiB page",
                ar_addr, 32'(ar_len) + 1);
  a_axi_aw_burst: assert property (@(posedge clk) disable iff (!rst_n || clear)
                                   aw_valid |-> aw_addr[LOG_BUS_BYTES-1:0] == '0 && burst_end(aw_addr[11:0], aw_len) <= PAGE)
    else $error("vdla_axi_check a_axi_aw_burst: write burst at 0x%0h of %0d beats is unaligned or crosses a 4 KiB page",
                aw_addr, 32'(aw_len) + 1);
  a_axi_ar_stable: assert property (@(posedge clk) disable iff (!rst_n || clear)
                                    ar_valid && !ar_ready |=> ar_valid && $stable(ar_addr) && $stable(ar_len))
    else $error("vdla_axi_check a_axi_ar_stable: a read request was withdrawn or changed before ARREADY");
  a_axi_aw_stable: assert property (@(posedge clk) disable iff (!rst_n || clear)
                                    aw_valid && !aw_ready |=> aw_valid && $stable(aw_addr) && $stable(aw_len))
    else $error("vdla_axi_check a_axi_aw_stable: a write request was withdrawn or changed before AWREADY");
  a_axi_w_stable: assert property (@(posedge clk) disable iff (!rst_n || clear)
                                   w_valid && !w_ready |=> w_valid && $stable(w_data) && $stable(w_strb) && $stable(w_last))
    else $error("vdla_axi_check a_axi_w_stable: a write beat was withdrawn or changed before WREADY");

  // WLAST: the beats of each accepted AW burst, oldest first, and the beats sent of the oldest.
  logic [8:0]  lens[$];
  int unsigned sent;
  /* verilator lint_off BLKSEQ */  // checker state, updated in order within the cycle
  always @(posedge clk) begin
    if (!rst_n || clear) begin
      lens.delete();
      sent = 0;
    end else begin
      if (aw_valid && aw_ready) lens.push_back(9'(aw_len) + 9'd1);
      if (w_valid && w_ready) begin
        a_axi_wlast: assert (lens.size() != 0 && w_last == (sent + 1 == 32'(lens[0])))
          else $error("vdla_axi_check a_axi_wlast: WLAST=%0d on beat %0d of a %0d-beat write burst", w_last, sent + 1,
                      lens.size() != 0 ? 32'(lens[0]) : 0);
        if (lens.size() != 0 && sent + 1 == 32'(lens[0])) begin
          void'(lens.pop_front());
          sent = 0;
        end else begin
          sent = sent + 1;
        end
      end
    end
  end
  /* verilator lint_on BLKSEQ */
`endif
endmodule

`default_nettype wire
