// The store module: runs STORE from its command queue, writing y_size rows of x_size
// output tiles to DRAM (row r at element dram_base + r*x_stride) from consecutive
// accumulator elements starting at sram_base.
//
// It keeps the output buffer: a full-width copy of the accumulator buffer, written whenever
// compute writes an accumulator. Store reads this copy, so it never competes with compute
// for the accumulator SRAM's one read port. Each element read is requantized on its way
// into the element queue: every lane is shifted right arithmetically by
// `shift`, bounded below by 0 if `relu`, saturated to the signed OUT_WIDTH range if `clip`,
// then narrowed to its low OUT_WIDTH bits (shift 0, flags clear: the plain wrap). With `bias`,
// the element acc[bias_row + y * bias_step] is read before each row y's elements (one extra
// read cycle per row) and added to every element of that row before the shift.
// The requantization is P = STORE_PIPELINE_DEPTH register stages long (timing.store_pipeline_depth,
// 0..3): P >= 1 registers the output buffer's read data (a block RAM's clock-to-out then feeds
// no logic), P >= 2 registers the shifted sum, P = 3 also the sum before the shift. Each stage
// delays every element by one cycle; the element FIFO is P entries deeper, so the stream keeps
// one element per cycle.
// Tokens: pop_prev pops compute->store (c2s),
// push_prev pushes store->compute (s2c). A STORE completes when DRAM has acknowledged
// every write burst.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_store (
  input  wire logic                      clk,
  input  wire logic                      rst_n,
  input  wire logic                      clear,
  input  wire logic                      cmd_valid,
  output logic                           cmd_ready,
  input  wire logic [INSN_BITS-1:0]      cmd_insn,
  input  wire logic                      c2s_valid,
  output logic                           c2s_ready,
  output logic                           s2c_valid,
  input  wire logic                      s2c_ready,
  output logic                           busy,
  // accumulator writes of compute
  input  wire logic                      acc_wr_en,
  input  wire logic [LOG_ACC_BUFF_DEPTH-1:0] acc_wr_addr,
  input  wire logic [ACC_ELEM_BITS-1:0]  acc_wr_data,
  // DRAM write engine
  output logic                           dma_valid,
  input  wire logic                      dma_ready,
  output logic [AXI_ADDR_WIDTH-1:0]      dma_addr,
  output logic [AXI_ADDR_WIDTH+1:0]      dma_end,    // dma_addr + (dma_count << log2 element bytes)
  output logic [SIZE_W-1:0]              dma_count,
  output logic                           dma_in_window,  // the window's verdict on the command (below)
  input  wire logic [AXI_ADDR_WIDTH-1:0] win_base,       // vdla_ctrl's window, fixed while a run is busy
  input  wire logic [AXI_ADDR_WIDTH-1:0] win_limit,
  output logic                           el_valid,
  input  wire logic                      el_ready,
  output logic [OUT_ELEM_BITS-1:0]       el_data,
  input  wire logic                      dma_idle,
  // a STORE reading past the accumulator buffer (pulse; vdla_fault) and the element
  output logic                           fault,
  output logic [31:0]                    fault_elem
);
  localparam int AIW = LOG_ACC_BUFF_DEPTH;
  localparam int LANES = BATCH * BLOCK_OUT;
  localparam int RW = DRAM_ADDR_W + LOG_OUT_ELEM_BYTES + 1;  // the last row's element address, unwrapped
  localparam int EW = AXI_ADDR_WIDTH + 2;  // a command's end byte, as vdla_addr_window takes it
  localparam int NW = 2 * SIZE_W;  // y_size * x_size
  localparam int P = STORE_PIPELINE_DEPTH;
  localparam int ELEM_FIFO = 4 + P;  // the elements in the pipeline have room reserved

  logic                 exec_start, exec_done, gate_busy;
  logic [INSN_BITS-1:0] insn_bits;
  /* verilator lint_off UNUSEDSIGNAL */  // opcode and flags are the gate's
  vdla_pkg::store_insn_t insn;
  /* verilator lint_on UNUSEDSIGNAL */

  /* verilator lint_off PINCONNECTEMPTY */  // outputs this module does not need are left open
  vdla_dep_gate #(.HAS_PREV(1'b1), .HAS_NEXT(1'b0)) u_gate (
    .clk, .rst_n, .clear,
    .cmd_valid, .cmd_ready, .cmd_insn,
    .exec_start, .insn(insn_bits), .exec_done,
    .pop_prev_valid(c2s_valid), .pop_prev_ready(c2s_ready),
    .pop_next_valid(1'b0), .pop_next_ready(),
    .push_prev_valid(s2c_valid), .push_prev_ready(s2c_ready),
    .push_next_valid(), .push_next_ready(1'b0),
    .busy(gate_busy)
  );
  assign insn = vdla_pkg::store_insn_t'(insn_bits);

  // ---- the output buffer: a copy of the accumulators, requantized as it is read ---------------
  localparam logic signed [ACC_WIDTH-1:0] OUT_MAX = ACC_WIDTH'((1 << (OUT_WIDTH - 1)) - 1);
  localparam logic signed [ACC_WIDTH-1:0] OUT_MIN = -OUT_MAX - 1;

  if (P < 0 || P > 3) begin : g_bad_depth
    $fatal(1, "vdla_store: timing.store_pipeline_depth = %0d; allowed 0..3", P);
  end

  // The three parts of the requantization, per lane; registers go between them (below).
  function automatic logic [ACC_ELEM_BITS-1:0] add_lanes(input logic [ACC_ELEM_BITS-1:0] a,
                                                         input logic [ACC_ELEM_BITS-1:0] b);
    for (int l = 0; l < LANES; l++)
      add_lanes[l * ACC_WIDTH +: ACC_WIDTH] = a[l * ACC_WIDTH +: ACC_WIDTH] + b[l * ACC_WIDTH +: ACC_WIDTH];  // wraps
  endfunction

  function automatic logic [ACC_ELEM_BITS-1:0] shift_lanes(input logic [ACC_ELEM_BITS-1:0] a,
                                                           input logic [STORE_SHIFT_W-1:0] sh);
    for (int l = 0; l < LANES; l++)
      shift_lanes[l * ACC_WIDTH +: ACC_WIDTH] = $signed(a[l * ACC_WIDTH +: ACC_WIDTH]) >>> sh;
  endfunction

  // ReLU, then saturation to [OUT_MIN, OUT_MAX], then the low OUT_WIDTH bits. The three
  // decisions come from the lane in parallel, as bit tests: negative is the sign bit, and the
  // value is out of range exactly when the bits above its OUT_WIDTH-bit sign are not all
  // copies of it (then the sign says which bound). No compare chain runs behind another (in
  // series they were the ECP5 build's critical path, docs/fpga_ecp5.md); ReLU first and the
  // bounds' signs (OUT_MIN <= 0 <= OUT_MAX) make it the same function.
  function automatic logic [OUT_ELEM_BITS-1:0] clip_lanes(input logic [ACC_ELEM_BITS-1:0] a,
                                                          input logic clip, input logic relu);
    logic signed [ACC_WIDTH-1:0] v, hi;
    logic                        neg, fits;
    for (int l = 0; l < LANES; l++) begin
      v    = a[l * ACC_WIDTH +: ACC_WIDTH];
      hi   = v >>> (OUT_WIDTH - 1);  // 0 or -1 exactly when v fits in OUT_WIDTH signed bits
      neg  = v[ACC_WIDTH-1];
      fits = hi == '0 || hi == '1;
      if (relu && neg)       clip_lanes[l * OUT_WIDTH +: OUT_WIDTH] = '0;
      else if (clip && !fits) clip_lanes[l * OUT_WIDTH +: OUT_WIDTH] = neg ? OUT_MIN[OUT_WIDTH-1:0] : OUT_MAX[OUT_WIDTH-1:0];
      else                   clip_lanes[l * OUT_WIDTH +: OUT_WIDTH] = v[OUT_WIDTH-1:0];
    end
  endfunction

  logic                     rd_en;
  logic [AIW-1:0]           rd_addr;
  logic [ACC_ELEM_BITS-1:0] rd_data;
  vdla_sram #(.WIDTH(ACC_ELEM_BITS), .DEPTH(OUT_BUFF_DEPTH)) u_out_sram (
    .clk, .rd_en, .rd_addr, .rd_data,
    .wr_en(acc_wr_en), .wr_addr(acc_wr_addr), .wr_data(acc_wr_data)
  );

  // ---- row commands ----------------------------------------------------------------------
  // Row r's command covers [dram_base + r * x_stride, + x_size) in elements.
  //
  // Timing (the ECP5 critical path, docs/fpga_ecp5.md): the command registers and the address
  // window's verdict on the command (dma_in_window, vdla_addr_window's rule: addr >= base, end <=
  // limit) are loaded together, with the start or the handshake, so the window's gating of
  // dma_ready starts at flops. The next row's element address is a 2:1 mux of registers (the
  // instruction's dram_base, row_ahead = the row after the current one), kept one step ahead so
  // no adder sits in front of the verdict's compares; its end check (row + x_size <= limit in
  // elements) is one carry-save compare (vdla_sum_le), not a sum and a compare in series. The
  // verdict holds between loads: the store only offers a command while a program runs (or the
  // machine is halted), when the window cannot move (vdla_ctrl, f_ctrl_window_fixed);
  // simulation checks it against the window (a_window_verdict).
  localparam int LOG_EB = LOG_OUT_ELEM_BYTES;
  logic              issuing;
  logic [SIZE_W-1:0] rows_left;
  logic              load_cmd;            // the command registers load this cycle
  logic [RW-1:0]     row_ahead, row_next; // element address of the row after the current one, of the next command
  logic              ok_next, end_ok;     // the window's verdict on row_next; its end check

  // A row past the 32-bit address space saturates to the top address, which no window holds:
  // it faults at the window instead of wrapping into it (its end is then past every limit too,
  // so the element-wise verdict below agrees).
  function automatic logic past_top(input logic [RW-1:0] e);
    past_top = (e >> (AXI_ADDR_WIDTH - LOG_EB)) != '0;
  endfunction

  assign dma_valid = issuing;
  assign dma_count = insn.x_size;
  assign load_cmd  = exec_start || (dma_valid && dma_ready);
  assign row_next  = exec_start ? RW'(insn.dram_base) : row_ahead;

  vdla_sum_le #(.W(RW)) u_end_ok (.a(row_next), .b(RW'(insn.x_size)), .lim(RW'(win_limit >> LOG_EB)), .le(end_ok));
  // the start byte at full width (a row past the top starts above every base, as '1 does)
  assign ok_next = ((RW+LOG_EB)'(row_next) << LOG_EB) >= (RW+LOG_EB)'(win_base) && end_ok;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      issuing       <= 1'b0;
      rows_left     <= '0;
      row_ahead     <= '0;
      dma_addr      <= '0;
      dma_end       <= '0;
      dma_in_window <= 1'b0;
    end else begin
      if (exec_start) begin
        issuing   <= insn.y_size != '0 && insn.x_size != '0;
        rows_left <= insn.y_size;
      end else if (dma_valid && dma_ready) begin
        rows_left <= rows_left - 1'b1;
        if (rows_left == SIZE_W'(1)) issuing <= 1'b0;
      end
      if (load_cmd) begin
        row_ahead     <= row_next + RW'(insn.x_stride);
        dma_addr      <= past_top(row_next) ? '1 : AXI_ADDR_WIDTH'(row_next << LOG_EB);
        // the end byte: the window's simulation check reads it (a_window_span_end), the verdict does not
        dma_end       <= past_top(row_next) ? EW'({AXI_ADDR_WIDTH{1'b1}}) + (EW'(insn.x_size) << LOG_EB)
                                            : EW'(row_next + RW'(insn.x_size)) << LOG_EB;
        dma_in_window <= ok_next;
      end
    end
  end

  // ---- element reads: sram_base + k for k < y_size * x_size, through a small FIFO --------
  // With a bias, each row starts with one read of its bias element (bias_next), which goes
  // to bias_q instead of the FIFO; the row's elements are added to bias_q as they arrive.
  logic [NW-1:0]                     reads_left;
  // reads_left != 0 as a flop, loaded wherever reads_left is with the != 0 of the value it takes:
  // rd_en then starts at one flop, not a 2 x SIZE_W-bit zero compare, and fans out from there to
  // the read address mux and the bias range check's enables (an ECP5 critical path, docs/fpga_ecp5.md)
  logic                              reads_nz;
  logic                              rd_pending;  // a read whose data arrives this cycle
  logic                              bias_pending;  // ... and that read was a row's bias
  logic                              bias_next;     // the next read is the current row's bias
  logic [SIZE_W-1:0]                 cols_left;     // element reads left in the current row
  logic [AIW-1:0]                    el_addr, bias_addr;
  logic [ACC_ELEM_BITS-1:0]          bias_q;
  logic [$clog2(ELEM_FIFO+1)-1:0]    queued;
  logic                              running;
  logic [2:0]                        in_flight;     // elements between the SRAM read and the FIFO

  logic [$clog2(ELEM_FIFO+1)-1:0]    used;  // queued + in_flight, as a register
  assign rd_en   = reads_nz && used < $bits(used)'(ELEM_FIFO);
  always_ff @(posedge clk) begin
    if (!rst_n || clear) used <= '0;
    else used <= used + $bits(used)'(rd_en && !bias_next) - $bits(used)'(el_valid && el_ready);
  end
`ifndef SYNTHESIS
  always_ff @(posedge clk)
    if (rst_n && !clear) a_store_used: assert (32'(used) == 32'(queued) + 32'(in_flight))
      else $error("vdla_store a_store_used: %0d != %0d + %0d", used, queued, in_flight);
`endif
  assign rd_addr = bias_next ? bias_addr : el_addr;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      reads_left   <= '0;
      reads_nz     <= 1'b0;
      rd_pending   <= 1'b0;
      bias_pending <= 1'b0;
      bias_next    <= 1'b0;
      cols_left    <= '0;
      el_addr      <= '0;
      bias_addr    <= '0;
      bias_q       <= '0;
      running      <= 1'b0;
    end else begin
      rd_pending   <= rd_en && !bias_next;
      bias_pending <= rd_en && bias_next;
      if (bias_pending) bias_q <= rd_data;
      if (exec_start) begin
        reads_left <= NW'(insn.y_size) * NW'(insn.x_size);
        // a product of two nonzero sizes fits NW bits (NW = 2 x SIZE_W), so it is nonzero
        reads_nz   <= insn.y_size != '0 && insn.x_size != '0;
        el_addr    <= AIW'(insn.sram_base);
        bias_addr  <= AIW'(insn.bias_row);
        bias_next  <= insn.bias;
        cols_left  <= insn.x_size;
        running    <= 1'b1;
      end else if (rd_en && bias_next) begin
        bias_next  <= 1'b0;
        bias_addr  <= bias_addr + AIW'(insn.bias_step);
      end else if (rd_en) begin
        reads_left <= reads_left - 1'b1;
        reads_nz   <= reads_left != NW'(1);
        el_addr    <= el_addr + 1'b1;
        if (cols_left == SIZE_W'(1)) begin
          cols_left <= insn.x_size;
          bias_next <= insn.bias;
        end else begin
          cols_left <= cols_left - 1'b1;
        end
      end
      if (exec_done) running <= 1'b0;
    end
  end

  // Range checks: the element walk steps on element reads only; a row's bias read checks its own
  // (unwrapped) index. The driver names whichever range the simulators report.
  logic        el_fault, bias_fault, bias_seen;
  logic [31:0] el_fault_elem, bias_at;
  vdla_sram_range #(.DEPTH(OUT_BUFF_DEPTH), .BASE_W(SRAM_IDX_W), .W(32)) u_range (
    .clk, .rst_n, .clear, .start(exec_start), .base(insn.sram_base), .step(rd_en && !bias_next), .fault(el_fault),
    .elem(el_fault_elem)
  );
  assign bias_fault = rd_en && bias_next && bias_at >= 32'(OUT_BUFF_DEPTH) && !bias_seen;
  assign fault      = el_fault || bias_fault;
  assign fault_elem = bias_fault ? bias_at : el_fault_elem;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      bias_at   <= '0;
      bias_seen <= 1'b0;
    end else if (exec_start) begin
      bias_at   <= 32'(insn.bias_row);
      bias_seen <= 1'b0;
    end else if (rd_en && bias_next) begin
      bias_at <= bias_at + 32'(insn.bias_step);
      if (bias_fault) bias_seen <= 1'b1;
    end
  end

  // ---- the requantization pipeline: read data -> [A] -> add -> [C] -> shift -> [B] -> clip -> FIFO
  // (stage A when P >= 1, B when P >= 2, C when P = 3). The bias operand travels with its element:
  // bias_q may change for the next row while this row's last elements are still in flight.
  logic                     a_v, c_v, b_v;
  logic [ACC_ELEM_BITS-1:0] a_acc, a_bias, c_sum, b_shifted;
  if (P >= 1) begin : g_stage_a
    always_ff @(posedge clk) begin
      if (!rst_n || clear) a_v <= 1'b0;
      else                 a_v <= rd_pending;
      a_acc  <= rd_data;
      a_bias <= insn.bias ? bias_q : '0;
    end
  end else begin : g_no_stage_a
    assign a_v    = rd_pending;
    assign a_acc  = rd_data;
    assign a_bias = insn.bias ? bias_q : '0;
  end
  if (P >= 3) begin : g_stage_c
    always_ff @(posedge clk) begin
      if (!rst_n || clear) c_v <= 1'b0;
      else                 c_v <= a_v;
      c_sum <= add_lanes(a_acc, a_bias);
    end
  end else begin : g_no_stage_c
    assign c_v   = a_v;
    assign c_sum = add_lanes(a_acc, a_bias);
  end
  if (P >= 2) begin : g_stage_b
    always_ff @(posedge clk) begin
      if (!rst_n || clear) b_v <= 1'b0;
      else                 b_v <= c_v;
      b_shifted <= shift_lanes(c_sum, insn.shift);
    end
  end else begin : g_no_stage_b
    assign b_v       = c_v;
    assign b_shifted = shift_lanes(c_sum, insn.shift);
  end
  // Elements read but not yet in the FIFO: the read in its SRAM cycle and those in stages A..C.
  assign in_flight = 3'(rd_pending) + 3'(P >= 1 && a_v) + 3'(P >= 3 && c_v) + 3'(P >= 2 && b_v);

  vdla_fifo #(.WIDTH(OUT_ELEM_BITS), .DEPTH(ELEM_FIFO), .STRICT_PUSH(1'b1)) u_elems (
    .clk, .rst_n, .clear,
    .in_valid(b_v), .in_ready(),  // rd_en leaves room
    .in_data(clip_lanes(b_shifted, insn.clip, insn.relu)),
    .out_valid(el_valid), .out_ready(el_ready), .out_data(el_data),
    .count(queued)
  );

  // Done once every element is read and handed on, every row issued, and DRAM has
  // acknowledged every burst. exec_start's own cycle never counts: the counters load then.
  assign exec_done = running && !exec_start && reads_left == '0 && in_flight == '0 && !bias_pending && queued == '0
                  && !issuing && dma_idle;
  assign busy      = gate_busy || running;
  /* verilator lint_on PINCONNECTEMPTY */
endmodule

`default_nettype wire
