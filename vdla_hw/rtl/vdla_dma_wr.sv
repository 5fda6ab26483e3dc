// DRAM write engine: a command "write COUNT elements of ELEM_BITS to byte address ADDR"
// plus a stream of COUNT elements becomes AXI4 INCR write bursts.
//
// Bursts are split exactly as in vdla_dma_rd. Elements wider than the bus go out as
// ELEM_BITS/BUS_WIDTH full beats; narrower elements are packed into beats with byte
// strobes, so a row that starts or ends inside a beat leaves the other bytes of DRAM
// untouched. `idle` is high when no command is in progress and every burst has its
// write response: only then is a store complete.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_dma_wr #(
  parameter int ELEM_BITS = 64,
  parameter int CNT_W = SIZE_W
) (
  input  wire logic                      clk,
  input  wire logic                      rst_n,
  input  wire logic                      clear,
  input  wire logic                      cmd_valid,
  output logic                           cmd_ready,
  input  wire logic [AXI_ADDR_WIDTH-1:0] cmd_addr,
  input  wire logic [CNT_W-1:0]          cmd_count,
  input  wire logic                      el_valid,
  output logic                           el_ready,
  input  wire logic [ELEM_BITS-1:0]      el_data,
  output logic                           aw_valid,
  input  wire logic                      aw_ready,
  output logic [AXI_ADDR_WIDTH-1:0]      aw_addr,
  output logic [7:0]                     aw_len,
  output logic                           w_valid,
  input  wire logic                      w_ready,
  output logic [BUS_WIDTH-1:0]           w_data,
  output logic [BUS_BYTES-1:0]           w_strb,
  output logic                           w_last,
  input  wire logic                      b_valid,
  output logic                           b_ready,
  output logic                           idle
);
  localparam int EB = ELEM_BITS / 8;
  localparam int LOG_EB = $clog2(EB);
  localparam int BURST_BEATS = DRAM_BURST_BYTES / BUS_BYTES;
  localparam int BW = AXI_ADDR_WIDTH - LOG_BUS_BYTES + 1;
  localparam int AW1 = AXI_ADDR_WIDTH + 1;
  localparam int OW = $clog2(DMA_MAX_BURSTS + 1) + 1;

  if (ELEM_BITS < 8 || (ELEM_BITS & (ELEM_BITS - 1)) != 0) begin : g_bad_elem
    $fatal(1, "vdla_dma_wr: ELEM_BITS = %0d must be a power of two >= 8", ELEM_BITS);
  end
  if (BURST_BEATS < 1 || BURST_BEATS > 256) begin : g_bad_burst
    $fatal(1, "vdla_dma_wr: DRAM_BURST_BYTES = %0d gives %0d beats per burst; AXI4 allows 1..256", DRAM_BURST_BYTES, BURST_BEATS);
  end
  if (DMA_MAX_BURSTS < 1) begin : g_bad_bursts
    $fatal(1, "vdla_dma_wr: DMA_MAX_BURSTS = %0d must be at least 1 (raise timing.dma_max_bursts)", DMA_MAX_BURSTS);
  end
  if (DMA_NARROW_ROWS < 1) begin : g_bad_rows
    $fatal(1, "vdla_dma_wr: DMA_NARROW_ROWS = %0d must be at least 1 (raise timing.dma_narrow_rows)", DMA_NARROW_ROWS);
  end

  // ---- address side ------------------------------------------------------------------
  logic                      aw_busy;
  logic [AXI_ADDR_WIDTH-1:0] cur;
  logic [BW-1:0]             beats_left, to_bound, burst;
  logic [AW1-1:0]            span;
  logic                      len_ready, info_ready;
  logic [OW-1:0]             outstanding;  // bursts issued whose write response is pending (<= DMA_MAX_BURSTS)

  assign span     = AW1'(cmd_addr[LOG_BUS_BYTES-1:0]) + (AW1'(cmd_count) << LOG_EB);
  assign to_bound = BW'(BURST_BEATS) - BW'(cur[LOG_DRAM_BURST_BYTES-1:0] >> LOG_BUS_BYTES);
  assign burst    = beats_left < to_bound ? beats_left : to_bound;

  assign cmd_ready = !aw_busy && info_ready;
  assign aw_valid  = aw_busy && len_ready && outstanding < OW'(DMA_MAX_BURSTS);
  assign aw_addr   = cur;
  assign aw_len    = 8'(burst - 1'b1);
  assign b_ready   = 1'b1;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      aw_busy     <= 1'b0;
      cur         <= '0;
      beats_left  <= '0;
      outstanding <= '0;
    end else begin
      if (cmd_valid && cmd_ready) begin
        aw_busy    <= 1'b1;
        cur        <= cmd_addr & ~(AXI_ADDR_WIDTH'(BUS_BYTES - 1));  // parenthesized: yosys 0.70 mis-sizes ~W'(x) (vdla hw prove found it)
        beats_left <= BW'((span + AW1'(BUS_BYTES - 1)) >> LOG_BUS_BYTES);
      end else if (aw_valid && aw_ready) begin
        cur        <= cur + (AXI_ADDR_WIDTH'(burst) << LOG_BUS_BYTES);
        beats_left <= beats_left - burst;
        if (beats_left == burst) aw_busy <= 1'b0;
      end
      outstanding <= outstanding + OW'(aw_valid && aw_ready) - OW'(b_valid);
    end
  end

  // Burst lengths, in issue order, for w_last.
  logic       len_valid, len_pop;
  logic [8:0] len_head, burst_left;  // beats of the open burst still to send (0: none open)
  logic [8:0] beats_now;
  logic       w_fire;
  /* verilator lint_off PINCONNECTEMPTY */  // outputs this module does not need are left open
  vdla_fifo #(.WIDTH(9), .DEPTH(DMA_MAX_BURSTS), .STRICT_PUSH(1'b1), .STRICT_POP(1'b1)) u_len (
    .clk, .rst_n, .clear,
    .in_valid(aw_valid && aw_ready), .in_ready(len_ready), .in_data(9'(burst)),
    .out_valid(len_valid), .out_ready(len_pop), .out_data(len_head), .count()
  );
  assign w_fire    = w_valid && w_ready;
  assign beats_now = burst_left != '0 ? burst_left : len_head;
  assign len_pop   = w_fire && burst_left == '0;
  assign w_last    = beats_now == 9'd1;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) burst_left <= '0;
    else if (w_fire) burst_left <= beats_now - 1'b1;
  end

  // ---- data side: elements -> beats --------------------------------------------------
  logic beat_valid;         // a beat is assembled and waits for its burst
  logic data_busy;          // the data side still holds element data
  assign w_valid = beat_valid && (burst_left != '0 || len_valid);

  if (EB >= BUS_BYTES) begin : g_wide
    localparam int RATIO = EB / BUS_BYTES;
    localparam int KW = RATIO > 1 ? $clog2(RATIO) : 1;
    logic [ELEM_BITS-1:0] el_q;
    logic [KW-1:0]        k;  // next beat of el_q to send
    logic                 last_of_el;
    assign info_ready = 1'b1;
    assign last_of_el = RATIO == 1 || k == KW'(RATIO - 1);
    assign w_data     = el_q[k * BUS_WIDTH +: BUS_WIDTH];
    assign w_strb     = '1;
    assign el_ready   = !beat_valid || (w_fire && last_of_el);
    assign data_busy  = beat_valid;
    always_ff @(posedge clk) begin
      if (!rst_n || clear) begin
        beat_valid <= 1'b0;
        k          <= '0;
      end else begin
        if (w_fire) begin
          k <= last_of_el ? '0 : k + 1'b1;
          if (last_of_el) beat_valid <= 1'b0;
        end
        if (el_valid && el_ready) begin
          el_q       <= el_data;
          beat_valid <= 1'b1;
        end
      end
    end
  end else begin : g_narrow
    localparam int K = BUS_BYTES / EB;
    localparam int LOG_K = $clog2(K);
    logic                 info_valid, info_pop;
    logic [LOG_K-1:0]     info_lane, lane;
    logic [CNT_W-1:0]     info_count, left;  // elements of the current command still to pack
    logic [BUS_WIDTH-1:0] beat;
    logic [BUS_BYTES-1:0] strb;
    logic                 el_fire, starting, closes;

    vdla_fifo #(.WIDTH(LOG_K + CNT_W), .DEPTH(DMA_NARROW_ROWS), .STRICT_PUSH(1'b1), .STRICT_POP(1'b1)) u_info (
      .clk, .rst_n, .clear,
      .in_valid(cmd_valid && cmd_ready), .in_ready(info_ready),
      .in_data({cmd_addr[LOG_BUS_BYTES-1:LOG_EB], cmd_count}),
      .out_valid(info_valid), .out_ready(info_pop), .out_data({info_lane, info_count}),
      .count()
    );

    logic [LOG_K-1:0] at;  // lane this element goes to
    assign starting  = left == '0;
    assign at        = starting ? info_lane : lane;
    assign el_ready  = !beat_valid && (!starting || info_valid);
    assign el_fire   = el_valid && el_ready;
    assign info_pop  = el_fire && starting;
    // The beat is complete at its last lane or at the command's last element.
    assign closes    = at == LOG_K'(K - 1) || (starting ? info_count : left) == CNT_W'(1);
    assign w_data    = beat;
    assign w_strb    = strb;
    assign data_busy = beat_valid || !starting;

    always_ff @(posedge clk) begin
      if (!rst_n || clear) begin
        beat_valid <= 1'b0;
        lane       <= '0;
        left       <= '0;
        strb       <= '0;
      end else begin
        if (w_fire) begin
          beat_valid <= 1'b0;
          strb       <= '0;
        end
        if (el_fire) begin
          beat[at * ELEM_BITS +: ELEM_BITS] <= el_data;
          strb[at * EB +: EB]               <= '1;
          lane       <= at + 1'b1;
          left       <= (starting ? info_count : left) - 1'b1;
          beat_valid <= closes;
        end
      end
    end
  end

  assign idle = !aw_busy && outstanding == '0 && !data_busy && burst_left == '0 && !len_valid;
  /* verilator lint_on PINCONNECTEMPTY */

`ifdef FORMAL
  // Formal properties (`vdla hw prove`, docs/rtl.md "Formal proofs"). The command, element
  // stream and AXI slave contracts are assumed when the engine is proven alone
  // (VDLA_FORMAL_TOP_DMA_WR). WLAST is checked on one burst chosen by the solver (f_k, any
  // value): the k-th AW burst's length is recorded and its W beats counted.
`ifdef VDLA_FORMAL_TOP_DMA_WR
  `define VDLA_DMA_WR_CONTRACT assume
  initial assume (!rst_n);
`else
  `define VDLA_DMA_WR_CONTRACT assert
`endif
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  (* anyconst *) logic [5:0] f_k;
  logic [5:0] f_aw_n, f_wlast_n;   // AW bursts accepted, W bursts completed (saturating)
  logic [8:0] f_k_len, f_k_sent;   // the k-th burst's length and its W beats so far
  logic [BW+1:0] f_w_owed;         // W beats announced by AW and not yet sent
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      {f_aw_n, f_wlast_n} <= '0;
      {f_k_len, f_k_sent} <= '0;
      f_w_owed <= '0;
    end else begin
      if (aw_valid && aw_ready && f_aw_n != '1) f_aw_n <= f_aw_n + 1'b1;
      if (aw_valid && aw_ready && f_aw_n == f_k) f_k_len <= 9'(burst);
      if (w_fire && w_last && f_wlast_n != '1) f_wlast_n <= f_wlast_n + 1'b1;
      if (w_fire && f_wlast_n == f_k) f_k_sent <= f_k_sent + 1'b1;
      f_w_owed <= f_w_owed + (aw_valid && aw_ready ? (BW+2)'(burst) : '0) - (BW+2)'(w_fire);
    end
  end
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      if (cmd_valid) a_dma_wr_cmd: `VDLA_DMA_WR_CONTRACT (cmd_count != '0 && (LOG_EB == 0 || 32'(cmd_addr) % EB == 0)
          && {1'b0, cmd_addr} + (AW1'(cmd_count) << LOG_EB) <= {1'b1, AXI_ADDR_WIDTH'(0)});
      if (f_past && $past(rst_n && !clear && cmd_valid && !cmd_ready))
        a_dma_wr_cmd_stable: `VDLA_DMA_WR_CONTRACT (cmd_valid && $stable(cmd_addr) && $stable(cmd_count));
      if (f_past && $past(rst_n && !clear && el_valid && !el_ready))
        a_dma_wr_el_stable: `VDLA_DMA_WR_CONTRACT (el_valid && $stable(el_data));
      // the slave answers only bursts it accepted
      if (b_valid) a_dma_wr_b_owed: `VDLA_DMA_WR_CONTRACT (outstanding != '0);

      if (aw_valid) a_axi_aw_burst: assert (aw_addr[LOG_BUS_BYTES-1:0] == '0
          && 32'(aw_addr[11:0]) + ((32'(aw_len) + 1) << LOG_BUS_BYTES) <= 4096
          && 32'(aw_addr[LOG_DRAM_BURST_BYTES-1:0]) + ((32'(aw_len) + 1) << LOG_BUS_BYTES) <= DRAM_BURST_BYTES);
      if (f_past && $past(rst_n && !clear && aw_valid && !aw_ready))
        a_axi_aw_stable: assert (aw_valid && $stable(aw_addr) && $stable(aw_len));
      if (f_past && $past(rst_n && !clear && w_valid && !w_ready))
        a_axi_w_stable: assert (w_valid && $stable(w_data) && $stable(w_strb) && $stable(w_last));
      // W beats only for bursts announced on AW, and WLAST on exactly the last beat of each
      if (w_valid) f_dma_w_after_aw: assert (f_w_owed != '0);
      if (w_valid && f_wlast_n == f_k && f_k != '1)
        a_axi_wlast: assert (f_aw_n > f_k && w_last == (f_k_sent + 9'd1 == f_k_len));
      f_dma_aw_len: assert (!aw_busy || (beats_left != '0 && cur[LOG_BUS_BYTES-1:0] == '0));
      f_dma_wr_outstanding: assert (32'(outstanding) <= DMA_MAX_BURSTS);
    end
  end
`undef VDLA_DMA_WR_CONTRACT
`endif
endmodule

`default_nettype wire
