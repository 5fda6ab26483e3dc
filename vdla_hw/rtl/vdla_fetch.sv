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
  logic [31:0]     rest, rest_after;
  logic [BCW-1:0]  n, n_after;  // size of the next chunk (0: nothing left), of the one after it
  logic [BCW-1:0]  inflight;    // requested, not yet in the buffer
  logic [BCW-1:0]  buffered;
  logic            buf_valid, buf_ready, take;
  logic [AXI_ADDR_WIDTH-1:0] addr_after;

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

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      n        <= '0;
      rest     <= '0;
      inflight <= '0;
      dma_addr <= '0;
      dma_end  <= '0;
    end else begin
      if (start || take) begin
        n        <= n_after;
        rest     <= rest_after;
        dma_addr <= addr_after;
        dma_end  <= EW'(addr_after) + (EW'(n_after) << LOG_INSN_BYTES);
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
endmodule

`default_nettype wire
