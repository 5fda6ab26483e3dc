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

  logic [31:0]     left;       // instructions not yet requested
  logic [BCW-1:0]  inflight;   // requested, not yet in the buffer
  logic [BCW-1:0]  buffered;
  logic [31:0]     n;          // size of the next chunk
  logic            buf_valid, buf_ready;

  assign n         = left < 32'(CHUNK) ? left : 32'(CHUNK);
  assign dma_valid = left != '0 && 32'(buffered) + 32'(inflight) + n <= 32'(BUF_DEPTH);
  assign dma_count = SIZE_W'(n);

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      left     <= '0;
      inflight <= '0;
      dma_addr <= '0;
    end else begin
      if (start) begin
        left     <= insn_count;
        dma_addr <= insn_addr;
      end else if (dma_valid && dma_ready) begin
        left     <= left - n;
        dma_addr <= dma_addr + AXI_ADDR_WIDTH'(n << LOG_INSN_BYTES);
      end
      inflight <= inflight + ((dma_valid && dma_ready) ? BCW'(n) : '0) - BCW'(el_valid && el_ready);
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
