// DRAM read engine: a command "read COUNT elements of ELEM_BITS from byte address ADDR"
// becomes AXI4 INCR read bursts, and the returned beats become a stream of elements.
//
// Bursts never cross a DRAM_BURST_BYTES-aligned boundary (so they also never cross a
// 4 KiB page, as DRAM_BURST_BYTES <= 4096) and are at most DRAM_BURST_BYTES long.
// The next command is accepted as soon as every burst of the current one is issued, so
// consecutive rows overlap their DRAM latency. Elements wider than the bus collect
// ELEM_BITS/BUS_WIDTH beats (one element per beat-group); narrower elements come out
// one per cycle from each beat, starting at the lane the address selects.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_dma_rd #(
  parameter int ELEM_BITS = 64,
  parameter int CNT_W = SIZE_W
) (
  input  wire logic                      clk,
  input  wire logic                      rst_n,
  input  wire logic                      clear,
  // command: COUNT (> 0) elements from byte address ADDR (ELEM_BITS/8-aligned)
  input  wire logic                      cmd_valid,
  output logic                           cmd_ready,
  input  wire logic [AXI_ADDR_WIDTH-1:0] cmd_addr,
  input  wire logic [CNT_W-1:0]          cmd_count,
  // AXI read address / data, through the read arbiter
  output logic                           ar_valid,
  input  wire logic                      ar_ready,
  output logic [AXI_ADDR_WIDTH-1:0]      ar_addr,
  output logic [7:0]                     ar_len,
  input  wire logic                      r_valid,
  output logic                           r_ready,
  input  wire logic [BUS_WIDTH-1:0]      r_data,
  // element stream
  output logic                           el_valid,
  input  wire logic                      el_ready,
  output logic [ELEM_BITS-1:0]           el_data
);
  localparam int EB = ELEM_BITS / 8;
  localparam int LOG_EB = $clog2(EB);
  localparam int BURST_BEATS = DRAM_BURST_BYTES / BUS_BYTES;
  localparam int BW = AXI_ADDR_WIDTH - LOG_BUS_BYTES + 1;  // beat counts
  localparam int AW1 = AXI_ADDR_WIDTH + 1;

  if (ELEM_BITS < 8 || (ELEM_BITS & (ELEM_BITS - 1)) != 0) begin : g_bad_elem
    $fatal(1, "vdla_dma_rd: ELEM_BITS = %0d must be a power of two >= 8", ELEM_BITS);
  end
  if (BURST_BEATS < 1 || BURST_BEATS > 256) begin : g_bad_burst
    $fatal(1, "vdla_dma_rd: DRAM_BURST_BYTES = %0d gives %0d beats per burst; AXI4 allows 1..256 (raise the bus width or lower timing.dram_burst_bytes)",
           DRAM_BURST_BYTES, BURST_BEATS);
  end
  if (DMA_NARROW_ROWS < 1) begin : g_bad_rows
    $fatal(1, "vdla_dma_rd: DMA_NARROW_ROWS = %0d must be at least 1 (raise timing.dma_narrow_rows)", DMA_NARROW_ROWS);
  end

  // ---- address side: split the command into bursts ----------------------------------
  logic                      ar_busy;
  logic [AXI_ADDR_WIDTH-1:0] cur;         // byte address of the next burst (beat-aligned)
  logic [BW-1:0]             beats_left;  // beats of the command not yet requested
  logic [BW-1:0]             to_bound, burst;
  logic [AXI_ADDR_WIDTH-1:0] cur_d;       // what cur takes this cycle
  logic [AW1-1:0]            span;
  logic                      info_ready;  // the data side can track one more command

  // Bytes from the start of the first beat to the end of the command.
  assign span     = AW1'(cmd_addr[LOG_BUS_BYTES-1:0]) + (AW1'(cmd_count) << LOG_EB);
  // to_bound (beats from cur to the end of its DRAM block) is a register, loaded wherever cur is
  // with the value of the address cur takes: the burst length (min of the beats left and this)
  // then starts at flops, not behind a subtraction from cur -- ar_addr -> to_bound -> the burst
  // -> the read arbiter's AR slice was an ECP5 critical path (docs/fpga_ecp5.md). Same value
  // every cycle (f_dma_to_bound).
  assign cur_d    = cmd_valid && cmd_ready ? cmd_addr & ~(AXI_ADDR_WIDTH'(BUS_BYTES - 1))  // parenthesized: yosys 0.70 mis-sizes ~W'(x) (vdla hw prove found it)
                  : ar_valid && ar_ready ? cur + (AXI_ADDR_WIDTH'(burst) << LOG_BUS_BYTES) : cur;
  assign burst    = beats_left < to_bound ? beats_left : to_bound;

  assign cmd_ready = !ar_busy && info_ready;
  assign ar_valid  = ar_busy;
  assign ar_addr   = cur;
  assign ar_len    = 8'(burst - 1'b1);

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      ar_busy    <= 1'b0;
      cur        <= '0;
      to_bound   <= BW'(BURST_BEATS);
      beats_left <= '0;
    end else begin
      cur        <= cur_d;
      to_bound   <= BW'(BURST_BEATS) - BW'(cur_d[LOG_DRAM_BURST_BYTES-1:0] >> LOG_BUS_BYTES);
      if (cmd_valid && cmd_ready) begin
        ar_busy    <= 1'b1;
        beats_left <= BW'((span + AW1'(BUS_BYTES - 1)) >> LOG_BUS_BYTES);
      end else if (ar_valid && ar_ready) begin
        beats_left <= beats_left - burst;
        if (beats_left == burst) ar_busy <= 1'b0;
      end
    end
  end

  // ---- data side: beats -> elements --------------------------------------------------
  if (EB >= BUS_BYTES) begin : g_wide
    // An element is RATIO consecutive beats, the first beat in the low bits.
    localparam int RATIO = EB / BUS_BYTES;
    assign info_ready = 1'b1;
    if (RATIO == 1) begin : g_one
      assign el_valid = r_valid;
      assign el_data  = r_data;
      assign r_ready  = el_ready;
    end else begin : g_many
      localparam int KW = $clog2(RATIO);
      logic [KW-1:0]                    k;   // beats of the element collected so far
      logic [(RATIO-1)*BUS_WIDTH-1:0]   sr;  // those beats, newest on top
      logic                             last_beat;
      assign last_beat = k == KW'(RATIO - 1);
      assign el_valid  = r_valid && last_beat;
      assign el_data   = {r_data, sr};
      assign r_ready   = !last_beat || el_ready;
      always_ff @(posedge clk) begin
        if (!rst_n || clear) begin
          k <= '0;
        end else if (r_valid && r_ready) begin
          k <= last_beat ? '0 : k + 1'b1;
        end
      end
      if (RATIO == 2) begin : g_two
        always_ff @(posedge clk) if (r_valid && r_ready) sr <= r_data;
      end else begin : g_shift
        always_ff @(posedge clk) if (r_valid && r_ready) sr <= {r_data, sr[(RATIO-1)*BUS_WIDTH-1:BUS_WIDTH]};
      end
    end
  end else begin : g_narrow
    // A beat holds K elements; a command starts at lane `lane0` of its first beat.
    localparam int K = BUS_BYTES / EB;
    localparam int LOG_K = $clog2(K);
    logic                 info_valid, info_pop;
    logic [LOG_K-1:0]     info_lane;
    logic [CNT_W-1:0]     info_count;
    logic [LOG_K-1:0]     lane;
    logic [CNT_W-1:0]     left;       // elements of the current command not yet output
    logic [BUS_WIDTH-1:0] beat;
    logic                 beat_valid, el_fire, beat_done, starting;
    logic [CNT_W-1:0]     left_after;

    /* verilator lint_off PINCONNECTEMPTY */  // outputs this module does not need are left open
    vdla_fifo #(.WIDTH(LOG_K + CNT_W), .DEPTH(DMA_NARROW_ROWS), .STRICT_PUSH(1'b1), .STRICT_POP(1'b1)) u_info (
      .clk, .rst_n, .clear,
      .in_valid(cmd_valid && cmd_ready), .in_ready(info_ready),
      .in_data({cmd_addr[LOG_BUS_BYTES-1:LOG_EB], cmd_count}),
      .out_valid(info_valid), .out_ready(info_pop), .out_data({info_lane, info_count}),
      .count()
    );

    assign el_valid   = beat_valid;
    assign el_data    = beat[lane * ELEM_BITS +: ELEM_BITS];
    assign el_fire    = el_valid && el_ready;
    assign beat_done  = lane == LOG_K'(K - 1) || left == CNT_W'(1);
    assign left_after = left - CNT_W'(el_fire);
    // the next beat begins a new command (left_after == 0, without the subtractor on r_ready's path)
    assign starting   = el_fire ? left == CNT_W'(1) : left == '0;
    assign r_ready    = (!beat_valid || (el_fire && beat_done)) && (!starting || info_valid);
    assign info_pop   = r_valid && r_ready && starting;

    always_ff @(posedge clk) begin
      if (!rst_n || clear) begin
        beat_valid <= 1'b0;
        lane       <= '0;
        left       <= '0;
      end else begin
        if (el_fire) begin
          lane <= lane + 1'b1;
          if (beat_done) beat_valid <= 1'b0;
        end
        left <= left_after;
        if (r_valid && r_ready) begin
          beat       <= r_data;
          beat_valid <= 1'b1;
          lane       <= starting ? info_lane : '0;
          if (starting) left <= info_count;
        end
      end
    end
  end
  /* verilator lint_on PINCONNECTEMPTY */

`ifdef FORMAL
  // Formal properties (`vdla hw prove`, docs/rtl.md "Formal proofs"). The command and AXI
  // slave contracts are assumed when the engine is proven alone (VDLA_FORMAL_TOP_DMA_RD).
`ifdef VDLA_FORMAL_TOP_DMA_RD
  `define VDLA_DMA_RD_CONTRACT assume
  initial assume (!rst_n);
`else
  `define VDLA_DMA_RD_CONTRACT assert
`endif
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  logic [BW+1:0] f_owed;  // beats requested on AR and not yet returned on R
  always_ff @(posedge clk) begin
    if (!rst_n || clear) f_owed <= '0;
    else f_owed <= f_owed + (ar_valid && ar_ready ? (BW+2)'(burst) : '0) - (BW+2)'(r_valid && r_ready);
  end
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      // a command: COUNT > 0 aligned elements that end inside the address space
      if (cmd_valid) a_dma_rd_cmd: `VDLA_DMA_RD_CONTRACT (cmd_count != '0 && (LOG_EB == 0 || 32'(cmd_addr) % EB == 0)
          && {1'b0, cmd_addr} + (AW1'(cmd_count) << LOG_EB) <= {1'b1, AXI_ADDR_WIDTH'(0)});
      if (f_past && $past(rst_n && !clear && cmd_valid && !cmd_ready))
        a_dma_rd_cmd_stable: `VDLA_DMA_RD_CONTRACT (cmd_valid && $stable(cmd_addr) && $stable(cmd_count));
      // the slave returns only the beats requested
      if (r_valid) a_dma_rd_r_owed: `VDLA_DMA_RD_CONTRACT (f_owed != '0);

      // AXI4: size-aligned bursts of 1..256 beats inside one 4 KiB page (and one DRAM block)
      if (ar_valid) a_axi_ar_burst: assert (ar_addr[LOG_BUS_BYTES-1:0] == '0
          && 32'(ar_addr[11:0]) + ((32'(ar_len) + 1) << LOG_BUS_BYTES) <= 4096
          && 32'(ar_addr[LOG_DRAM_BURST_BYTES-1:0]) + ((32'(ar_len) + 1) << LOG_BUS_BYTES) <= DRAM_BURST_BYTES);
      // AXI4: ARVALID held, address and length stable, until ARREADY
      if (f_past && $past(rst_n && !clear && ar_valid && !ar_ready))
        a_axi_ar_stable: assert (ar_valid && $stable(ar_addr) && $stable(ar_len));
      // the registered distance to the DRAM block's end is the one cur implies
      f_dma_to_bound: assert (to_bound == BW'(BURST_BEATS) - BW'(cur[LOG_DRAM_BURST_BYTES-1:0] >> LOG_BUS_BYTES));
      // a burst is never empty (ar_len would wrap to 255) and the address is beat-aligned
      f_dma_ar_len: assert (!ar_busy || (beats_left != '0 && cur[LOG_BUS_BYTES-1:0] == '0));
      // the bursts of a command never run past its end, so never wrap the address space
      f_dma_rd_beats: assert (!ar_busy || {1'b0, cur} + (AW1'(beats_left) << LOG_BUS_BYTES) <= {1'b1, AXI_ADDR_WIDTH'(0)});
    end
  end
`ifdef VDLA_FORMAL_DMA_RD_ELEMS
  // The instruction DMA's lemma of the command queues' room argument (docs/rtl.md, "The reduced
  // queues, compositionally"): el_valid only while an accepted command still owes an element, so
  // the engine hands out at most the elements its commands asked for -- what vdla_fetch assumes
  // (`el_valid` only while `inflight` != 0). For elements at least a beat wide (the instruction
  // stream of every config: 128-bit instructions on a 64- or 128-bit bus). The client's side,
  // assumed: it asks for no more than fit in the count width in all (fetch asks only for what
  // its buffer holds: inflight + n <= BUF_DEPTH, its f_fetch_room), so the counts never wrap.
  logic [CNT_W-1:0] f_el_owed;  // elements of the accepted commands not yet handed out
  always_ff @(posedge clk) begin
    if (!rst_n || clear) f_el_owed <= '0;
    else f_el_owed <= f_el_owed + (cmd_valid && cmd_ready ? cmd_count : '0) - CNT_W'(el_valid && el_ready);
  end
  if (EB >= BUS_BYTES) begin : g_f_elems
    localparam int RATIO = EB / BUS_BYTES;
    logic [BW+1:0] f_k;  // beats of the element being collected (vdla_dma_rd's k; 0 when one beat is one element)
    if (RATIO == 1) begin : g_f_one
      assign f_k = '0;
    end else begin : g_f_many
      assign f_k = (BW+2)'(g_wide.g_many.k);
    end
    always_comb begin
      if (rst_n && !clear && cmd_valid) assume (33'(f_el_owed) + 33'(cmd_count) < (33'(1) << CNT_W));
    end
    always_ff @(posedge clk) begin
      if (rst_n && !clear) begin
        // the lemma
        f_dma_rd_elems: assert (!el_valid || f_el_owed != '0);
        // its strengthening: every beat an owed element still needs is requested and not returned
        // (f_owed), or not yet requested (beats_left), or already collected (k); summed one bit wider
        // than f_owed, so the equation also bounds f_owed (no wrapped state satisfies it)
        f_dma_rd_elems_beats: assert ((BW+3)'(f_el_owed) * (BW+3)'(RATIO) == (BW+3)'(beats_left) + (BW+3)'(f_owed) + (BW+3)'(f_k)
                                      && (ar_busy || beats_left == '0));
      end
    end
  end
`endif
`undef VDLA_DMA_RD_CONTRACT
`endif
endmodule

`default_nettype wire
