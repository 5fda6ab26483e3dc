// The vector ALU: acc[dst] = op(acc[dst], imm or acc[src]) lane by lane over an
// accumulator tile (BATCH x BLOCK_OUT lanes of ACC_WIDTH bits), for MIN, MAX, ADD,
// SHR (arithmetic right shift; a negative amount shifts left; amounts of ACC_WIDTH or
// more give the sign fill / zero), MUL (low ACC_WIDTH bits), all wrapping, and MOV (copy).
//
// A micro-op iteration starts every ALU_II cycles. Stages (j = cycles after the loop
// emits the iteration, D = ALU_PIPELINE_DEPTH >= 3):
//   j = -1     present the micro-op's index to its SRAM (the loop's look-ahead)
//   j = 0      the micro-op leaves the block RAM into the SRAM's output register
//   j = 1      add the loop offsets to the registered micro-op; read acc[src]
//   j = 2      read acc[dst]; acc[src] (or the immediate) is registered as the operand
//   D = 3:     j = 3 computes from the SRAM's read data and writes back (one long cycle:
//              SRAM read, multiplier, adders, write-through bypass)
//   D = 4:     j = 3 registers both operands; j = 4 computes and writes back
//   D >= 5:    j = 3 registers both operands; j = 4 registers the multiplier's partial
//              products and every other op's result; j = 5 adds the partial products and
//              selects; written back at j = D (extra stages are registers)
// The accumulator SRAM has one read port, so ALU_II >= 2. A read must see every earlier
// iteration's write: a write up to the read's own cycle comes through the SRAM (its
// write-through bypass covers the very cycle), and a write after the read but no later than
// the operand registers (j = 2 for acc[src], j = 3 for both) is forwarded into them from the
// write port. A write later than j = 3 cannot be forwarded, so ALU_II >= D - 3: with D = 5 the
// ALU keeps ALU_II = 2 and each stage holds one SRAM read, one multiplier or one adder.
// MOV reads only acc[src] (j = 1; no read at j = 2), so it issues every ALU_COPY_II = 1 cycles;
// fsim rejects a MOV whose iteration reads a destination an earlier iteration of it writes,
// the one case this does not forward.
//
// MUL needs only the low ACC_WIDTH bits. Each lane splits a 32-bit product into the terms that
// reach the low 32 bits: two that fit one DSP48E1 each (25x18) and an 8x8 one that stays in
// LUTs, 2 DSP slices per lane instead of the 3 yosys spends on a plain 32x32 `*`.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_alu (
  input  wire logic                          clk,
  input  wire logic                          rst_n,
  input  wire logic                          clear,
  input  wire logic                          start,
  /* verilator lint_off UNUSEDSIGNAL */  // the opcode and dependency flags are the gate's
  input  wire vdla_pkg::alu_insn_t           insn,
  /* verilator lint_on UNUSEDSIGNAL */
  output logic                               done,
  output logic                               uop_rd_en,       // an iteration: its micro-op on uop_rd_data next cycle
  output logic [LOG_UOP_BUFF_DEPTH-1:0]      uop_rd_addr_next, // read a cycle ahead (vdla_sram OUT_REG)
  input  wire logic [UOP_BITS-1:0]           uop_rd_data,      // a flop's output: registered read port
  output logic                               acc_rd_en,
  output logic [LOG_ACC_BUFF_DEPTH-1:0]      acc_rd_addr,
  input  wire logic [ACC_ELEM_BITS-1:0]      acc_rd_data,
  output logic                               acc_wr_en,
  output logic [LOG_ACC_BUFF_DEPTH-1:0]      acc_wr_addr,
  output logic [ACC_ELEM_BITS-1:0]           acc_wr_data
);
  localparam int D = ALU_PIPELINE_DEPTH;
  localparam int AIW = LOG_ACC_BUFF_DEPTH;
  localparam int LANES = BATCH * BLOCK_OUT;
  localparam int SHW = $clog2(ACC_WIDTH);

  if (D < 3) begin : g_bad_depth
    $fatal(1, "vdla_alu: timing.alu_pipeline_depth = %0d; the ALU pipeline needs at least 3 stages", D);
  end
  if (ALU_II < 2 || ALU_II < D - 3) begin : g_bad_ii
    $fatal(1, "vdla_alu: timing.alu_ii = %0d must be >= 2 (one accumulator read port, two operands) and >= alu_pipeline_depth - 3 = %0d (forwarding reaches the operand registers only)",
           ALU_II, D - 3);
  end

  // ---- the micro-op loop -------------------------------------------------------------------
  logic           it_valid, loop_busy;
  logic [AIW-1:0] dst_off, src_off;
  /* verilator lint_off PINCONNECTEMPTY */  // outputs this module does not need are left open
  logic copy;  // the op never reads acc[dst]: one read per iteration
  assign copy = insn.alu_op == ALU_MOV;
  vdla_uop_loop #(.II(ALU_II), .II_FAST(ALU_COPY_II), .DST_W(AIW), .SRC_W(AIW), .WGT_W(1)) u_loop (
    .clk, .rst_n, .clear, .start, .fast(copy),
    .uop_bgn(insn.uop_bgn), .uop_end(insn.uop_end), .iter_out(insn.iter_out), .iter_in(insn.iter_in),
    .dst_factor_out(insn.dst_factor_out), .dst_factor_in(insn.dst_factor_in),
    .src_factor_out(insn.src_factor_out), .src_factor_in(insn.src_factor_in),
    .wgt_factor_out(1'b0), .wgt_factor_in(1'b0),
    .it_valid, .uop_idx(), .uop_idx_next(uop_rd_addr_next), .dst_off, .src_off, .wgt_off(), .busy(loop_busy)
  );
  assign uop_rd_en = it_valid;

  // One lane: op(a, b) on ACC_WIDTH-bit two's-complement values; p = a * b (low bits).
  function automatic logic [ACC_WIDTH-1:0] alu_lane(input logic [ALUOP_W-1:0] op,
                                                    input logic [ACC_WIDTH-1:0] a,
                                                    input logic [ACC_WIDTH-1:0] b,
                                                    input logic [ACC_WIDTH-1:0] p);
    logic signed [ACC_WIDTH-1:0] sa, sb;
    logic [ACC_WIDTH-1:0]        nb;
    sa = a;
    sb = b;
    nb = -b;
    unique case (op)
      ALU_MIN: alu_lane = sa < sb ? a : b;
      ALU_MAX: alu_lane = sa > sb ? a : b;
      ALU_ADD: alu_lane = a + b;
      ALU_MUL: alu_lane = p;
      ALU_MOV: alu_lane = b;
      ALU_SHR:
        if (!b[ACC_WIDTH-1]) alu_lane = b >= ACC_WIDTH'(ACC_WIDTH) ? {ACC_WIDTH{a[ACC_WIDTH-1]}} : ACC_WIDTH'(sa >>> b[SHW-1:0]);
        else alu_lane = nb >= ACC_WIDTH'(ACC_WIDTH) ? '0 : a << nb[SHW-1:0];
      default: alu_lane = a;  // not an ALU op: the ISA decoder rejects it; leave acc unchanged
    endcase
  endfunction

  function automatic logic [ACC_ELEM_BITS-1:0] alu_tile(input logic [ALUOP_W-1:0] op,
                                                        input logic [ACC_ELEM_BITS-1:0] a,
                                                        input logic [ACC_ELEM_BITS-1:0] b,
                                                        input logic [ACC_ELEM_BITS-1:0] p);
    for (int l = 0; l < LANES; l++)
      alu_tile[l * ACC_WIDTH +: ACC_WIDTH] = alu_lane(op, a[l * ACC_WIDTH +: ACC_WIDTH], b[l * ACC_WIDTH +: ACC_WIDTH],
                                                      p[l * ACC_WIDTH +: ACC_WIDTH]);
  endfunction

  // ---- pipeline ---------------------------------------------------------------------------
  logic [D:1]                    v;
  logic [D:2][AIW-1:0]           dst;
  /* verilator lint_off UNUSEDSIGNAL */  // src[3] is for the forwarding of D >= 4
  logic [3:2][AIW-1:0]           src;       // acc[src]'s index, for the forwarding compares
  logic [AIW-1:0]                dst1_off, src1_off;
  logic [ACC_ELEM_BITS-1:0]      operand;   // acc[src] (or the immediate in every lane), from j = 3
  logic [ACC_ELEM_BITS-1:0]      result;    // what stage D writes back
  logic [ACC_ELEM_BITS-1:0]      ma, mb;    // the multiplier's operands
  logic [ACC_ELEM_BITS-1:0]      product;   // ma * mb lane by lane (low bits), in the cycle after j = 4 for D >= 5
  logic signed [ACC_WIDTH-1:0]   imm;
  logic                          fwd_src2;
  /* verilator lint_off UNUSEDSIGNAL */  // the ALU has no weight operand
  vdla_pkg::uop_t                uop;
  /* verilator lint_on UNUSEDSIGNAL */

  assign uop = vdla_pkg::uop_t'(uop_rd_data);
  assign imm = ACC_WIDTH'($signed(insn.imm));  // sign-extended

  // j = 1 reads acc[src], j = 2 reads acc[dst]; ALU_II >= 2 keeps them from colliding, and a
  // copy (one iteration per cycle) makes no j = 2 read.
  assign acc_rd_en   = v[1] || (v[2] && !copy);
  assign acc_rd_addr = v[1] ? AIW'(uop.src) + src1_off : dst[2];

  // Forwarding: the write of stage D in this cycle reaches an operand read before it. Only an
  // earlier iteration writes at stage D, so a match is a read-after-write across iterations.
  assign fwd_src2 = D >= 4 && v[D] && acc_wr_addr == src[2] && !insn.use_imm;  // none can reach D = 3

  always_ff @(posedge clk) begin
    if (!rst_n || clear) v <= '0;
    else v <= {v[D-1:1], it_valid};
  end

  always_ff @(posedge clk) begin
    dst1_off <= dst_off;
    src1_off <= src_off;
    dst[2]   <= uop.dst + dst1_off;
    src[2]   <= acc_rd_addr;
    src[3]   <= src[2];
    for (int k = 3; k <= D; k++) dst[k] <= dst[k-1];
    if (v[2]) begin
      if (insn.use_imm) begin
        for (int l = 0; l < LANES; l++) operand[l * ACC_WIDTH +: ACC_WIDTH] <= imm;
      end else begin
        operand <= fwd_src2 ? acc_wr_data : acc_rd_data;
      end
    end
  end

  // Lane products ma * mb, low ACC_WIDTH bits. With a = ah 2^MUL_AL + al and
  // b = bh 2^MUL_BL + bl (al, bl unsigned), a b = al bl + (al bh) 2^MUL_BL + (ah bl) 2^MUL_AL
  // + (ah bh) 2^(MUL_AL+MUL_BL); the last term is above the kept bits, and of the middle two
  // only their low ACC_WIDTH - MUL_BL and ACC_WIDTH - MUL_AL bits count. With D >= 5 the terms
  // are registered (j = 4) and added in the next cycle.
  localparam int MUL_AL = 24;  // a DSP48E1 multiplies 25 x 18 bits signed: 24 x 17 unsigned
  localparam int MUL_BL = 17;
  localparam bit REG_TERMS = D >= 5;
  for (genvar l = 0; l < LANES; l++) begin : g_mul
    localparam int W = ACC_WIDTH;
    wire logic [W-1:0] a = ma[l * W +: W];
    wire logic [W-1:0] b = mb[l * W +: W];
    if (W > MUL_AL && W <= MUL_AL + MUL_BL) begin : g_split
      logic [W-1:0]        lo_lo, lo_lo_q;
      logic [W-MUL_BL-1:0] lo_hi, lo_hi_q;  // (al bh), the bits that land at MUL_BL and above
      logic [W-MUL_AL-1:0] hi_lo, hi_lo_q;  // (ah bl): 8 bits for int32, narrow enough for LUTs
      assign lo_lo = W'(a[MUL_AL-1:0]) * W'(b[MUL_BL-1:0]);
      assign lo_hi = a[W-MUL_BL-1:0] * b[W-1:MUL_BL];
      assign hi_lo = a[W-1:MUL_AL] * b[W-MUL_AL-1:0];
      if (REG_TERMS) begin : g_reg
        always_ff @(posedge clk) {lo_lo_q, lo_hi_q, hi_lo_q} <= {lo_lo, lo_hi, hi_lo};
      end else begin : g_comb
        assign {lo_lo_q, lo_hi_q, hi_lo_q} = {lo_lo, lo_hi, hi_lo};
      end
      assign product[l * W +: W] = lo_lo_q + {lo_hi_q, MUL_BL'(0)} + {hi_lo_q, MUL_AL'(0)};
    end else begin : g_plain  // fits one DSP (or no split helps): let synthesis map it
      if (REG_TERMS) begin : g_reg
        always_ff @(posedge clk) product[l * W +: W] <= a * b;
      end else begin : g_comb
        assign product[l * W +: W] = a * b;
      end
    end
  end

  if (D == 3) begin : g_direct
    assign ma = acc_rd_data;
    assign mb = operand;
    assign result = alu_tile(insn.alu_op, acc_rd_data, operand, product);
  end else begin : g_staged
    logic [ACC_ELEM_BITS-1:0] a_q, b_q;  // acc[dst] and the operand, registered at j = 3
    logic                     fwd_src3, fwd_dst3;
    assign fwd_src3 = v[D] && acc_wr_addr == src[3] && !insn.use_imm;
    assign fwd_dst3 = v[D] && acc_wr_addr == dst[3];
    always_ff @(posedge clk) begin
      a_q <= fwd_dst3 ? acc_wr_data : acc_rd_data;
      b_q <= fwd_src3 ? acc_wr_data : operand;
    end
    assign ma = a_q;
    assign mb = b_q;
    if (D == 4) begin : g_d4
      assign result = alu_tile(insn.alu_op, a_q, b_q, product);
    end else begin : g_d5
      logic [ACC_ELEM_BITS-1:0] other;  // the result of every op but MUL, registered at j = 4
      logic [ACC_ELEM_BITS-1:0] res5;   // the result at j = 5
      always_ff @(posedge clk) other <= alu_tile(insn.alu_op, a_q, b_q, '0);
      assign res5 = insn.alu_op == ALU_MUL ? product : other;
      if (D == 5) begin : g_now
        assign result = res5;
      end else begin : g_later
        logic [D:6][ACC_ELEM_BITS-1:0] res;  // res[k]: the result at stage k
        always_ff @(posedge clk) begin
          res[6] <= res5;
          for (int k = 7; k <= D; k++) res[k] <= res[k-1];
        end
        assign result = res[D];
      end
    end
  end
  assign acc_wr_en   = v[D];
  assign acc_wr_addr = dst[D];
  assign acc_wr_data = result;

  // ---- completion --------------------------------------------------------------------------
  logic running;
  assign done = running && !loop_busy && v == '0;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) running <= 1'b0;
    else if (start) running <= 1'b1;
    else if (done) running <= 1'b0;
  end
  /* verilator lint_on PINCONNECTEMPTY */
endmodule

`default_nettype wire
