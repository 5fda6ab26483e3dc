// The AXI-lite control slave: the register map of vdla_hw/regmap.py.
//
// Writing CONTROL.start while idle clears the datapath (queues, token FIFOs, module
// state) for one cycle and starts fetch in the next; STATUS.busy is set from then until
// compute retires FINISH, when STATUS.done (and irq) rise. CYCLES counts the clock
// cycles from the one in which fetch starts to the one in which FINISH retires, both
// included.
// CONFIG_ID reads the package's CONFIG_ID_VALUE (the config digest) and BUILD_ID the
// parameter of that name, so a driver can tell which hardware it talks to.
// A fault (vdla_fault) ends the run like FINISH -- busy falls, done and irq rise -- with
// STATUS.fault set and the FAULT registers naming it; a start is ignored while DRAM
// transactions are still in flight (STATUS.bus_busy). WINDOW_BASE/LIMIT (reset 0: every
// DMA faults) can only be written while idle.
// Writes and reads of unmapped or read-only registers answer SLVERR.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_ctrl #(
  parameter logic [AXIL_DATA_WIDTH-1:0] BUILD_ID = '0
) (
  input  wire logic                       clk,
  input  wire logic                       rst_n,
  input  wire logic [AXIL_ADDR_WIDTH-1:0] s_axil_awaddr,
  input  wire logic                       s_axil_awvalid,
  output logic                            s_axil_awready,
  input  wire logic [AXIL_DATA_WIDTH-1:0] s_axil_wdata,
  input  wire logic [AXIL_DATA_WIDTH/8-1:0] s_axil_wstrb,
  input  wire logic                       s_axil_wvalid,
  output logic                            s_axil_wready,
  output logic [1:0]                      s_axil_bresp,
  output logic                            s_axil_bvalid,
  input  wire logic                       s_axil_bready,
  input  wire logic [AXIL_ADDR_WIDTH-1:0] s_axil_araddr,
  input  wire logic                       s_axil_arvalid,
  output logic                            s_axil_arready,
  output logic [AXIL_DATA_WIDTH-1:0]      s_axil_rdata,
  output logic [1:0]                      s_axil_rresp,
  output logic                            s_axil_rvalid,
  input  wire logic                       s_axil_rready,
  // to the datapath
  output logic                            clear,       // one cycle, before start
  output logic                            start,       // one cycle
  output logic [AXIL_DATA_WIDTH-1:0]      insn_count,
  output logic [AXI_ADDR_WIDTH-1:0]       insn_addr,
  input  wire logic                       finish,      // compute retired FINISH
  output logic                            done,
  // the DRAM address window and the fault registers (vdla_fault)
  output logic [AXI_ADDR_WIDTH-1:0]       window_base,
  output logic [AXI_ADDR_WIDTH-1:0]       window_limit,
  input  wire logic                       fault_new,   // one cycle: a fault stopped the machine
  input  wire logic                       faulted,     // a fault since the last start
  input  wire logic [7:0]                 fault_cause,
  input  wire logic [31:0]                fault_insn,
  input  wire logic [31:0]                fault_addr,
  input  wire logic [31:0]                fault_iter,
  input  wire logic                       bus_busy     // DRAM transactions in flight
);
  logic busy;
  localparam logic [1:0] RESP_OKAY = 2'b00;
  localparam logic [1:0] RESP_SLVERR = 2'b10;

  logic [63:0] cycles;
  logic        wr, rd;

  function automatic logic [AXIL_DATA_WIDTH-1:0] merge(input logic [AXIL_DATA_WIDTH-1:0] old,
                                                       input logic [AXIL_DATA_WIDTH-1:0] data,
                                                       input logic [AXIL_DATA_WIDTH/8-1:0] strb);
    for (int i = 0; i < AXIL_DATA_WIDTH / 8; i++) old[8*i +: 8] = strb[i] ? data[8*i +: 8] : old[8*i +: 8];
    merge = old;
  endfunction

  // A write needs its address and data together; one response at a time.
  assign wr = s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid;
  assign s_axil_awready = wr;
  assign s_axil_wready  = wr;
  assign rd = s_axil_arvalid && !s_axil_rvalid;
  assign s_axil_arready = rd;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      s_axil_bvalid <= 1'b0;
      s_axil_bresp  <= RESP_OKAY;
      s_axil_rvalid <= 1'b0;
      s_axil_rresp  <= RESP_OKAY;
      s_axil_rdata  <= '0;
      insn_count    <= '0;
      insn_addr     <= '0;
      window_base   <= '0;
      window_limit  <= '0;
      clear         <= 1'b0;
      start         <= 1'b0;
      busy          <= 1'b0;
      done          <= 1'b0;
      cycles        <= '0;
    end else begin
      clear <= 1'b0;
      start <= clear;
      if (busy && !clear) cycles <= cycles + 1'b1;
      if ((finish || fault_new) && busy) begin
        busy <= 1'b0;
        done <= 1'b1;
      end

      if (s_axil_bvalid && s_axil_bready) s_axil_bvalid <= 1'b0;
      if (wr) begin
        s_axil_bvalid <= 1'b1;
        s_axil_bresp  <= RESP_OKAY;
        case (s_axil_awaddr)
          REG_CONTROL: if (s_axil_wstrb[0] && s_axil_wdata[CONTROL_START_BIT] && !busy && !clear && !start && !bus_busy) begin
            clear  <= 1'b1;
            busy   <= 1'b1;
            done   <= 1'b0;
            cycles <= '0;
          end
          REG_INSN_COUNT: insn_count <= merge(insn_count, s_axil_wdata, s_axil_wstrb);
          REG_INSN_ADDR:  insn_addr  <= AXI_ADDR_WIDTH'(merge(AXIL_DATA_WIDTH'(insn_addr), s_axil_wdata, s_axil_wstrb));
          // The window cannot move under a running program.
          REG_WINDOW_BASE:  if (!busy) window_base  <= AXI_ADDR_WIDTH'(merge(AXIL_DATA_WIDTH'(window_base), s_axil_wdata, s_axil_wstrb));
                            else s_axil_bresp <= RESP_SLVERR;
          REG_WINDOW_LIMIT: if (!busy) window_limit <= AXI_ADDR_WIDTH'(merge(AXIL_DATA_WIDTH'(window_limit), s_axil_wdata, s_axil_wstrb));
                            else s_axil_bresp <= RESP_SLVERR;
          default:        s_axil_bresp <= RESP_SLVERR;
        endcase
      end

      if (s_axil_rvalid && s_axil_rready) s_axil_rvalid <= 1'b0;
      if (rd) begin
        s_axil_rvalid <= 1'b1;
        s_axil_rresp  <= RESP_OKAY;
        case (s_axil_araddr)
          REG_STATUS: begin
            s_axil_rdata <= '0;
            s_axil_rdata[STATUS_DONE_BIT] <= done;
            s_axil_rdata[STATUS_BUSY_BIT] <= busy;
            s_axil_rdata[STATUS_FAULT_BIT] <= faulted;
            s_axil_rdata[STATUS_BUS_BUSY_BIT] <= bus_busy;
          end
          REG_INSN_COUNT: s_axil_rdata <= insn_count;
          REG_INSN_ADDR:  s_axil_rdata <= AXIL_DATA_WIDTH'(insn_addr);
          REG_CYCLES_LO:  s_axil_rdata <= cycles[31:0];
          REG_CYCLES_HI:  s_axil_rdata <= cycles[63:32];
          REG_CONFIG_ID:  s_axil_rdata <= CONFIG_ID_VALUE;
          REG_BUILD_ID:   s_axil_rdata <= BUILD_ID;
          REG_WINDOW_BASE:  s_axil_rdata <= AXIL_DATA_WIDTH'(window_base);
          REG_WINDOW_LIMIT: s_axil_rdata <= AXIL_DATA_WIDTH'(window_limit);
          REG_FAULT_CAUSE:  s_axil_rdata <= AXIL_DATA_WIDTH'(fault_cause);
          REG_FAULT_INSN:   s_axil_rdata <= fault_insn;
          REG_FAULT_ADDR:   s_axil_rdata <= fault_addr;
          REG_FAULT_ITER:   s_axil_rdata <= fault_iter;
          default: begin
            s_axil_rdata <= '0;
            s_axil_rresp <= RESP_SLVERR;
          end
        endcase
      end
    end
  end
`ifdef FORMAL
  // Formal properties (`vdla hw prove`, docs/rtl.md "Formal proofs"; any AXI-lite traffic, any
  // finish/fault inputs). The controller's part of "a run ends with FINISH or a fault": a start
  // clears the datapath for exactly one cycle and then starts fetch; the cycle after compute
  // retires FINISH or a fault stops the machine, busy falls and done rises; and nothing moves
  // the address window while a program runs.
`ifdef VDLA_FORMAL_TOP_CTRL
  initial assume (!rst_n);
`endif
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  always_ff @(posedge clk) begin
`ifdef VDLA_FORMAL_TOP_CTRL
    // the datapath's contract: clear resets compute's FINISH state and the fault collector, so
    // neither reports in the clear cycle nor in the start cycle after it
    if (clear || start) assume (!finish && !fault_new);
`endif
    if (rst_n && f_past && $past(rst_n)) begin
      // clear lasts one cycle and is followed by start; both only inside a run
      f_ctrl_clear_start: assert (start == $past(clear) && !(clear && start) && (!clear || busy) && (!start || busy));
      // a run ends the cycle after FINISH or a fault: busy falls, done rises
      if ($past(busy && !clear && (finish || fault_new))) f_ctrl_ends: assert (!busy && done);
      // ... and only then (or never started): busy falls only on FINISH or a fault
      if ($past(busy) && !busy) f_ctrl_ends_why: assert ($past(finish || fault_new));
      // the window cannot move under a running program
      if ($past(busy)) f_ctrl_window_fixed: assert ($stable(window_base) && $stable(window_limit));
      // AXI-lite: a response is held until taken
      if ($past(s_axil_bvalid && !s_axil_bready)) f_ctrl_b_held: assert (s_axil_bvalid && $stable(s_axil_bresp));
      if ($past(s_axil_rvalid && !s_axil_rready))
        f_ctrl_r_held: assert (s_axil_rvalid && $stable(s_axil_rdata) && $stable(s_axil_rresp));
    end
  end
`endif
endmodule

`default_nettype wire
