// Executes one LOAD of a single memory type: a 2D strided DRAM block into consecutive
// SRAM elements, with zero padding around it.
//
// Two processes run side by side. The row issuer hands one DMA command per DRAM row
// (y_size rows of x_size elements, row r at element dram_base + r*x_stride), or, for a
// gathering LOAD (elem_stride_m1 != 0), one command of one element per element, element
// (r, c) at dram_base + r*x_stride + c*(elem_stride_m1 + 1), in row-major order. The
// writer walks the padded block, (y_pad0 + y_size + y_pad1) x (x_pad0 + x_size +
// x_pad1) elements in row-major order from sram_base, and writes one SRAM element per
// cycle: a zero in the padding, otherwise the next element of the DMA stream (waiting
// for it when it has not arrived yet). `done` pulses after the last write.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_tile_loader #(
  parameter int ELEM_BITS = 64,
  parameter int DEPTH = 16
) (
  input  wire logic                      clk,
  input  wire logic                      rst_n,
  input  wire logic                      clear,
  input  wire logic                      start,     // one-cycle pulse; insn stable until done
  /* verilator lint_off UNUSEDSIGNAL */  // opcode, flags and memory type are decoded upstream
  input  wire vdla_pkg::mem_insn_t       insn,
  /* verilator lint_on UNUSEDSIGNAL */
  output logic                           done,      // one-cycle pulse
  output logic                           busy,
  // row commands to the DMA read engine
  output logic                           dma_valid,
  input  wire logic                      dma_ready,
  output logic [AXI_ADDR_WIDTH-1:0]      dma_addr,
  output logic [AXI_ADDR_WIDTH+1:0]      dma_end,    // dma_addr + (dma_count << log2 element bytes)
  output logic [SIZE_W-1:0]              dma_count,
  output logic                           dma_in_window,  // the window's verdict on the command (below)
  input  wire logic [AXI_ADDR_WIDTH-1:0] win_base,       // vdla_ctrl's window, fixed while a program runs
  input  wire logic [AXI_ADDR_WIDTH-1:0] win_limit,
  input  wire logic                      el_valid,
  output logic                           el_ready,
  input  wire logic [ELEM_BITS-1:0]      el_data,
  // SRAM write port
  output logic                           wr_en,
  output logic [$clog2(DEPTH)-1:0]       wr_addr,
  output logic [ELEM_BITS-1:0]           wr_data,
  // the block runs past the buffer: a pulse at the first element beyond it (vdla_sram_range)
  output logic                           oob,
  output logic [31:0]                    oob_elem
);
  localparam int AW = $clog2(DEPTH);
  localparam int LOG_EB = $clog2(ELEM_BITS / 8);
  localparam int YW = SIZE_W + 1;  // padded extents: size + two 4-bit pads
  localparam int RW = DRAM_ADDR_W + LOG_EB + 1;  // the last row's element address, unwrapped
  localparam int EW = AXI_ADDR_WIDTH + 2;  // a command's end byte, as vdla_addr_window takes it

  // ---- row issuer ---------------------------------------------------------------------
  // A gathering LOAD issues one-element commands, stepping by the element stride within a row and
  // restarting from the next row (row_ahead, x_stride on) at a row's end; a plain LOAD starts a new
  // row at every command. Every command covers [its element, + count) in elements.
  //
  // Timing (the ECP5 critical path, docs/fpga_ecp5.md): the command registers and the address
  // window's verdict on the command (dma_in_window, vdla_addr_window's rule: addr >= base, end <=
  // limit) are loaded together, with the start or the handshake, so the window's gating of
  // dma_ready starts at flops. The next command's element address is a 3:1 mux of registers
  // (the instruction's dram_base, row_ahead = the next row's, cmd_ahead = the next in the row),
  // kept one step ahead so no adder sits in front of the verdict's compares; its end check
  // (cmd + count <= limit in elements) is one carry-save compare (vdla_sum_le), not a sum and a
  // compare in series. The verdict holds between loads: a client only offers a command while a
  // program runs (or the machine is halted), when the window cannot move (vdla_ctrl,
  // f_ctrl_window_fixed); simulation checks it against the window (a_window_verdict).
  logic              issuing;
  logic [SIZE_W-1:0] rows_left;
  logic [SIZE_W-1:0] cols_left;            // commands left in the current row after this one (gather)
  logic              gather, new_row;      // one command per element; the next command starts a row
  logic              load_cmd;             // the command registers load this cycle
  logic [SIZE_W-1:0] count;                // elements per command
  logic [RW-1:0]     row_ahead;            // element address of the next row's first command
  logic [RW-1:0]     cmd_ahead;            // ... of the command after the current one in its row
  logic [RW-1:0]     cmd_next;             // ... of the command the registers take at a load
  logic              ok_next, end_ok;      // the window's verdict on cmd_next; its end check

  // A command past the 32-bit address space saturates to the top address, which no window
  // holds: it faults at the window instead of wrapping into it (its end, cmd + count elements,
  // is then past every limit too, so the element-wise verdict below agrees).
  function automatic logic past_top(input logic [RW-1:0] e);
    past_top = (e >> (AXI_ADDR_WIDTH - LOG_EB)) != '0;
  endfunction

  assign dma_valid = issuing;
  assign gather    = insn.elem_stride_m1 != '0;
  assign count     = gather ? SIZE_W'(1) : insn.x_size;
  assign dma_count = count;
  assign new_row   = !gather || cols_left == '0;
  assign load_cmd  = start || (dma_valid && dma_ready);
  assign cmd_next  = start ? RW'(insn.dram_base) : new_row ? row_ahead : cmd_ahead;

  vdla_sum_le #(.W(RW)) u_end_ok (.a(cmd_next), .b(RW'(count)), .lim(RW'(win_limit >> LOG_EB)), .le(end_ok));
  // the start byte at full width (a command past the top starts above every base, as '1 does)
  assign ok_next = ((RW+LOG_EB)'(cmd_next) << LOG_EB) >= (RW+LOG_EB)'(win_base) && end_ok;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      issuing       <= 1'b0;
      rows_left     <= '0;
      cols_left     <= '0;
      row_ahead     <= '0;
      cmd_ahead     <= '0;
      dma_addr      <= '0;
      dma_end       <= '0;
      dma_in_window <= 1'b0;
    end else begin
      if (start) begin
        issuing   <= insn.y_size != '0 && insn.x_size != '0;
        rows_left <= insn.y_size;
        cols_left <= gather ? insn.x_size - 1'b1 : '0;
      end else if (dma_valid && dma_ready) begin
        if (new_row) begin
          rows_left <= rows_left - 1'b1;
          cols_left <= gather ? insn.x_size - 1'b1 : '0;
          if (rows_left == SIZE_W'(1)) issuing <= 1'b0;
        end else begin
          cols_left <= cols_left - 1'b1;
        end
      end
      if (load_cmd) begin
        row_ahead     <= (start ? RW'(insn.dram_base) : row_ahead) + (start || new_row ? RW'(insn.x_stride) : '0);
        cmd_ahead     <= cmd_next + RW'(insn.elem_stride_m1) + 1'b1;
        dma_addr      <= past_top(cmd_next) ? '1 : AXI_ADDR_WIDTH'(cmd_next << LOG_EB);
        // the end byte: the window's simulation check reads it (a_window_span_end), the verdict does not
        dma_end       <= past_top(cmd_next) ? EW'({AXI_ADDR_WIDTH{1'b1}}) + (EW'(count) << LOG_EB)
                                            : EW'(cmd_next + RW'(count)) << LOG_EB;
        dma_in_window <= ok_next;
      end
    end
  end

  // ---- writer ----------------------------------------------------------------------
  // Whether the current position holds data (not padding) is a register, updated with the
  // position: `el_ready` is a flop's output, so the DMA engine's handshake never waits on
  // this module's adders and comparisons (the ECP5 critical path, docs/fpga_ecp5.md). The
  // data region's bounds are registered at `start` for the same reason.
  logic [YW-1:0] y, x, y_end, x_end;  // position in the padded block, and its extents
  logic [YW-1:0] y_lo, y_hi, x_lo, x_hi, y_last, x_last;  // registered at start
  logic [YW-1:0] x_next, y_next;      // the position after the current one
  logic          writing, in_data, in_row, in_col, last, row_end;
  // The next position's flags, for both ways the walk goes (on along the row, or down to the next
  // row's start), from registers, picked by row_end: the x_last compare then selects finished
  // flags instead of feeding the range compares (an ECP5 critical path, docs/fpga_ecp5.md).
  logic [YW-1:0] x_inc, y_inc;        // x + 1, y + 1
  logic          in_col_on, in_row_down, in_col_first;  // in_col_first: column 0's flag, set at start

  assign y_end   = YW'(insn.y_pad0) + YW'(insn.y_size) + YW'(insn.y_pad1);
  assign x_end   = YW'(insn.x_pad0) + YW'(insn.x_size) + YW'(insn.x_pad1);
  assign in_data = in_row && in_col;
  assign row_end = x == x_last;
  assign last    = y == y_last && row_end;
  assign x_inc   = x + 1'b1;
  assign y_inc   = y + 1'b1;
  assign x_next  = row_end ? '0 : x_inc;
  assign y_next  = row_end ? y_inc : y;
  assign in_col_on   = x_inc >= x_lo && x_inc < x_hi;
  assign in_row_down = y_inc >= y_lo && y_inc < y_hi;

  assign el_ready = writing && in_data;
  assign wr_en    = writing && (!in_data || el_valid);
  assign wr_data  = in_data ? el_data : '0;
  assign busy     = writing || issuing;

  always_ff @(posedge clk) begin
    if (start) begin
      y_lo   <= YW'(insn.y_pad0);
      y_hi   <= YW'(insn.y_pad0) + YW'(insn.y_size);
      x_lo   <= YW'(insn.x_pad0);
      x_hi   <= YW'(insn.x_pad0) + YW'(insn.x_size);
      y_last <= y_end - 1'b1;
      x_last <= x_end - 1'b1;
      in_col_first <= insn.x_pad0 == '0 && insn.x_size != '0;
    end
  end

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      writing <= 1'b0;
      done    <= 1'b0;
      x       <= '0;
      y       <= '0;
      in_row  <= 1'b0;
      in_col  <= 1'b0;
      wr_addr <= '0;
    end else begin
      done <= 1'b0;
      if (start) begin
        x       <= '0;
        y       <= '0;
        in_row  <= insn.y_pad0 == '0 && insn.y_size != '0;
        in_col  <= insn.x_pad0 == '0 && insn.x_size != '0;
        wr_addr <= AW'(insn.sram_base);
        // An empty block writes nothing and is done at once.
        writing <= y_end != '0 && x_end != '0;
        done    <= y_end == '0 || x_end == '0;
      end else if (wr_en) begin
        wr_addr <= wr_addr + 1'b1;
        x       <= x_next;
        y       <= y_next;
        // as `y_next in [y_lo, y_hi)`, `x_next in [x_lo, x_hi)`: in_row holds `y in [y_lo, y_hi)`
        // (so it keeps its value along a row), and a new row starts at column 0
        in_row  <= row_end ? in_row_down : in_row;
        in_col  <= row_end ? in_col_first : in_col_on;
        if (last) begin
          writing <= 1'b0;
          done    <= 1'b1;
        end
      end
    end
  end

  // A block past the buffer is a program fault, not a design error: reported, not asserted.
  vdla_sram_range #(.DEPTH(DEPTH), .BASE_W(SRAM_IDX_W), .W(32)) u_range (
    .clk, .rst_n, .clear, .start, .base(insn.sram_base), .step(wr_en), .fault(oob), .elem(oob_elem)
  );

`ifdef FORMAL
  // Formal properties (`vdla hw prove`, docs/rtl.md "Formal proofs"). The load unit's contract is
  // assumed when the loader is proven alone (VDLA_FORMAL_TOP_TILE): a start only while idle, the
  // instruction held while busy. f_idx is the walk's SRAM element index, unwrapped. For every
  // instruction, legal or not: the SRAM address is f_idx modulo DEPTH and the range check sees
  // exactly f_idx (f_tile_addr), and `oob` pulses only at a write at or past DEPTH
  // (f_tile_oob_sound); vdla_sram_range's own proof shows it pulses at the walk's first such
  // write. So the address wraps only where a fault stops the machine.
`ifdef VDLA_FORMAL_TOP_TILE
  `define VDLA_TILE_CONTRACT assume
  initial assume (!rst_n);
`else
  `define VDLA_TILE_CONTRACT assert
`endif
  localparam int FW = 2 * YW + 2;
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  logic [FW-1:0] f_idx;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) f_idx <= '0;
    else if (start)      f_idx <= FW'(insn.sram_base);
    else if (wr_en)      f_idx <= f_idx + 1'b1;
  end
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      if (start) a_tile_idle: `VDLA_TILE_CONTRACT (!busy);
      if (f_past && $past(rst_n && !clear && (start || busy)))
        a_tile_insn_held: `VDLA_TILE_CONTRACT ($stable(insn));
      // the SRAM address and the range check both follow the unwrapped walk
      f_tile_addr: assert (wr_addr == AW'(f_idx) && 32'(oob_elem) == 32'(f_idx));
      // the range check fires only at a write at or past the buffer's end
      if (oob) f_tile_oob_sound: assert (wr_en && f_idx >= FW'(DEPTH));
    end
  end
`ifdef VDLA_FORMAL_TILE_LEGAL
  // a_tile_sram_range, as the static checks state it: a legal block (sram_base + padded rows x
  // padded columns <= DEPTH) never writes past the buffer. The product is taken of instruction
  // fields only (f_end); what carries it through the walk is an auxiliary count of the elements
  // in the rows below the current one, f_rows_el, lowered by one row (x_end) at each row end. The
  // invariants are linear in the walk's state except f_tile_rows's f_rows_el == rows left x x_end,
  // whose induction step is the identity (r - 1) x c = r x c - c. A non-empty legal block has
  // both extents <= DEPTH, so the factors are NW bits and their product PW bits, exactly.
  localparam int NW = $clog2(DEPTH + 1);
  localparam int PW = 2 * NW;
  logic [NW-1:0] f_rows_left, f_cols;
  logic [PW-1:0] f_rows_el;
  logic [FW-1:0] f_end;
  assign f_cols = NW'(x_end);
  assign f_end  = FW'(insn.sram_base) + FW'(PW'(NW'(y_end)) * PW'(f_cols));
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      f_rows_left <= '0;
      f_rows_el   <= '0;
    end else if (start) begin
      f_rows_left <= NW'(y_end - 1'b1);
      f_rows_el   <= PW'(NW'(y_end - 1'b1)) * PW'(f_cols);
    end else if (wr_en && row_end) begin
      f_rows_left <= f_rows_left - 1'b1;
      f_rows_el   <= f_rows_el - PW'(f_cols);
    end
  end
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      // the legal-block contract (blocks that write nothing excepted: an empty extent)
      if (start && y_end != '0 && x_end != '0)
        assume (y_end <= YW'(DEPTH) && x_end <= YW'(DEPTH) && f_end <= FW'(DEPTH));
      if (writing) begin
        f_tile_extent: assert (y_last == y_end - 1'b1 && x_last == x_end - 1'b1 && x <= x_last && y <= y_last
                               && y_end != '0 && x_end != '0 && y_end <= YW'(DEPTH) && x_end <= YW'(DEPTH)
                               && f_end <= FW'(DEPTH));
        f_tile_rows: assert (YW'(f_rows_left) == y_last - y && f_rows_el == PW'(f_rows_left) * PW'(f_cols));
        f_tile_walk: assert (f_idx + FW'(x_last - x) + FW'(f_rows_el) + 1'b1 == f_end);
      end
      if (writing) f_tile_in_buffer: assert (f_idx < FW'(DEPTH));
      if (wr_en) a_tile_sram_range: assert (f_idx < FW'(DEPTH) && !oob);
    end
  end
`endif
`undef VDLA_TILE_CONTRACT
`endif
endmodule

`default_nettype wire
