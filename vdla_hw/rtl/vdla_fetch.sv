// Fetch: reads the program from DRAM and dispatches each instruction, in program order,
// to the command queue of the module that runs it.
//
// LOAD INP/WGT go to load; LOAD UOP/ACC, GEMM, ALU and FINISH (and anything else) go to
// compute; STORE goes to store. Instructions are read in chunks of one DRAM burst
// (DRAM_BURST_BYTES / 16 instructions) into a local buffer of two chunks, and a chunk is
// requested only when the buffer has room for all of it: read data is then always
// accepted, so a full command queue can never hold up another module's DRAM reads.
// Dispatch takes one cycle per instruction while the buffer and the target queue allow.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_fetch (
  input  wire logic                      clk,
  input  wire logic                      rst_n,
  input  wire logic                      clear,
  input  wire logic                      start,
  input  wire logic [AXI_ADDR_WIDTH-1:0] insn_addr,
  input  wire logic [31:0]               insn_count,
  // DMA read engine (instructions)
  output logic                           dma_valid,
  input  wire logic                      dma_ready,
  output logic [AXI_ADDR_WIDTH-1:0]      dma_addr,
  output logic [AXI_ADDR_WIDTH+1:0]      dma_end,    // dma_addr + (dma_count << LOG_INSN_BYTES)
  output logic [SIZE_W-1:0]              dma_count,
  output logic                           dma_in_window,  // the window's verdict on the command (below)
  input  wire logic [AXI_ADDR_WIDTH-1:0] win_base,       // vdla_ctrl's window, fixed while a run is busy
  input  wire logic [AXI_ADDR_WIDTH-1:0] win_limit,
  input  wire logic                      el_valid,
  output logic                           el_ready,
  input  wire logic [INSN_BITS-1:0]      el_data,
  // command queues
  output logic                           load_valid,
  input  wire logic                      load_ready,
  output logic                           compute_valid,
  input  wire logic                      compute_ready,
  output logic                           store_valid,
  input  wire logic                      store_ready,
  output logic [INSN_BITS-1:0]           insn
);
  localparam int CHUNK = DRAM_BURST_BYTES >= INSN_BYTES ? DRAM_BURST_BYTES / INSN_BYTES : 1;
  localparam int BUF_DEPTH = 2 * CHUNK;
  localparam int BCW = $clog2(BUF_DEPTH + 1);
  localparam int EW = AXI_ADDR_WIDTH + 2;  // a command's end byte, as vdla_addr_window takes it

  // The next chunk's size, address and end byte are registers, computed when the chunk before
  // it is taken: the address window's verdict (which gates dma_ready) then starts at flops,
  // and the ready path no longer runs through "min(left, CHUNK)" and the end's adder (the ECP5
  // critical path, docs/fpga_ecp5.md). `rest` counts the instructions after the next chunk.
  // The window's verdict itself (vdla_addr_window's rule: addr >= base, end <= limit) is a
  // register too, loaded with the chunk from the values the command registers take (its end
  // check a carry-save compare, vdla_sum_le: no sum then compare in series), so the window's
  // gating of dma_ready starts at one flop (docs/fpga_ecp5.md). Between loads it is recomputed
  // from the registers: fetch may still ask for a chunk after FINISH ends a run (a program
  // longer than its FINISH), when the driver may move the window.
  logic [31:0]     rest, rest_after;
  logic [BCW-1:0]  n, n_after;  // size of the next chunk (0: nothing left), of the one after it
  logic [BCW-1:0]  inflight;    // requested, not yet in the buffer
  logic [BCW-1:0]  buffered;
  logic            buf_valid, buf_ready, take;
  logic [AXI_ADDR_WIDTH-1:0] addr_after;
  logic [EW-1:0]             end_after;
  logic                      ok_after, ok_held;  // the verdict on the next command, on the held one
  logic                      end_ok;             // the next command's end check

  function automatic logic [BCW-1:0] chunk_of(input logic [31:0] left);
    chunk_of = left < 32'(CHUNK) ? BCW'(left) : BCW'(CHUNK);
  endfunction

  assign dma_valid  = n != '0 && 32'(buffered) + 32'(inflight) + 32'(n) <= 32'(BUF_DEPTH);
  assign dma_count  = SIZE_W'(n);
  assign take       = dma_valid && dma_ready;
  assign n_after    = start ? chunk_of(insn_count) : chunk_of(rest);
  assign rest_after = (start ? insn_count : rest) - 32'(n_after);
  // dma_addr + n << LOG_INSN_BYTES, wrapped to the address width as before
  assign addr_after = start ? insn_addr : AXI_ADDR_WIDTH'(dma_end);
  assign end_after  = EW'(addr_after) + (EW'(n_after) << LOG_INSN_BYTES);
  // two compares side by side: the handshake only picks between them, never waits on one
  vdla_sum_le #(.W(AXI_ADDR_WIDTH)) u_end_ok (
    .a(addr_after), .b(AXI_ADDR_WIDTH'(n_after) << LOG_INSN_BYTES), .lim(win_limit), .le(end_ok));
  assign ok_after   = addr_after >= win_base && end_ok;
  assign ok_held    = dma_addr >= win_base && dma_end <= EW'(win_limit);

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      n        <= '0;
      rest     <= '0;
      inflight <= '0;
      dma_addr <= '0;
      dma_end  <= '0;
      dma_in_window <= 1'b0;
    end else begin
      dma_in_window <= start || take ? ok_after : ok_held;
      if (start || take) begin
        n        <= n_after;
        rest     <= rest_after;
        dma_addr <= addr_after;
        dma_end  <= end_after;
      end
      inflight <= inflight + (take ? n : '0) - BCW'(el_valid && el_ready);
    end
  end

  vdla_fifo #(.WIDTH(INSN_BITS), .DEPTH(BUF_DEPTH), .STRICT_PUSH(1'b1)) u_buf (
    .clk, .rst_n, .clear,
    .in_valid(el_valid), .in_ready(el_ready), .in_data(el_data),
    .out_valid(buf_valid), .out_ready(buf_ready), .out_data(insn),
    .count(buffered)
  );

  // ---- dispatch ------------------------------------------------------------------------
  /* verilator lint_off UNUSEDSIGNAL */  // only the opcode and memory type choose the queue
  vdla_pkg::mem_insn_t head;
  /* verilator lint_on UNUSEDSIGNAL */
  logic to_load, to_store;
  assign head     = vdla_pkg::mem_insn_t'(insn);
  assign to_load  = head.opcode == OP_LOAD && (head.mem_type == MEM_INP || head.mem_type == MEM_WGT);
  assign to_store = head.opcode == OP_STORE;

  assign load_valid    = buf_valid && to_load;
  assign store_valid   = buf_valid && to_store;
  assign compute_valid = buf_valid && !to_load && !to_store;
  assign buf_ready     = to_load ? load_ready : to_store ? store_ready : compute_ready;
`ifdef FORMAL
`ifdef VDLA_FORMAL_TOP_FETCH
  // The fetch-side lemma of "the live tasks' reduced command queues never fill" (docs/rtl.md,
  // "The reduced queues, compositionally"): after a start, fetch dispatches at most insn_count
  // instructions in all, whatever words the DRAM returns. Stated here and not in a harness
  // because its inductive strengthening is about n, rest, inflight and the buffer's count, and
  // yosys reads neither `bind` nor hierarchical references. Proven alone (vdla_fetch as top):
  // the environment's side is assumed --
  //  * start comes only in the cycle after clear (vdla_ctrl's f_ctrl_clear_start, proven), so a
  //    run begins from the cleared state;
  //  * the instruction DMA returns only elements fetch asked for (el_valid only while some are
  //    in flight: vdla_dma_rd delivers a command's dma_count elements, f_dma_rd_beats).
  initial assume (!rst_n);
  logic f_after_clear = 1'b0, f_started = 1'b0;
  logic [31:0] f_count;        // insn_count as of the start
  logic [31:0] f_dispatched;   // instructions handed to any command queue since the start
  logic [31:0] f_to_load, f_to_compute, f_to_store;
  logic f_push_load, f_push_compute, f_push_store;
  assign f_push_load    = load_valid && load_ready;
  assign f_push_compute = compute_valid && compute_ready;
  assign f_push_store   = store_valid && store_ready;
  always_ff @(posedge clk) begin
    f_after_clear <= rst_n && clear;
    if (!rst_n || clear) begin
      f_started <= 1'b0;
      f_count <= '0;
      {f_dispatched, f_to_load, f_to_compute, f_to_store} <= '0;
    end else begin
      if (start) begin
        f_started <= 1'b1;
        f_count   <= insn_count;
      end
      f_dispatched <= f_dispatched + 32'(f_push_load) + 32'(f_push_compute) + 32'(f_push_store);
      f_to_load    <= f_to_load + 32'(f_push_load);
      f_to_compute <= f_to_compute + 32'(f_push_compute);
      f_to_store   <= f_to_store + 32'(f_push_store);
    end
  end
  always_comb begin
    if (start) assume (f_after_clear);
    if (el_valid) assume (inflight != '0);
  end
  logic [34:0] f_owned;  // every instruction of the run: dispatched, buffered, in flight, still to ask for
  assign f_owned = 35'(f_dispatched) + 35'(buffered) + 35'(inflight) + 35'(n) + 35'(rest);
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      // the lemma: never more dispatched than the program has instructions, one queue at a time
      f_fetch_dispatch_bound: assert (f_dispatched <= f_count
                                      && f_to_load + f_to_compute + f_to_store == f_dispatched
                                      && !(f_push_load && f_push_compute) && !(f_push_load && f_push_store)
                                      && !(f_push_compute && f_push_store));
      // its induction strengthening: each of the run's instructions is in exactly one place
      f_fetch_conserved: assert ((f_started && f_owned == 35'(f_count))
                                 || (!f_started && f_owned == '0));
      f_fetch_room: assert (32'(buffered) + 32'(inflight) <= 32'(BUF_DEPTH) && 32'(n) <= 32'(CHUNK)
                            && (n != '0 || rest == '0));
    end
  end
`endif
`endif
endmodule

`default_nettype wire
