// Shares the AXI4 read channels among N DRAM read clients.
//
// Read-address requests are granted round-robin into a registered AR slice (a skid
// buffer: the bus's ARREADY never reaches the clients' handshakes); every granted burst
// records its client in a route FIFO, and the read data (which an AXI slave returns in
// request order for a single ID) goes to the client at the head of that FIFO until the
// beat with rlast. DMA_MAX_BURSTS (timing.dma_max_bursts) bounds the bursts in flight.
// With AXI_R_SLICE (timing.axi_r_slice) = 1 the read data passes a registered slice too,
// one cycle later, so RREADY is a register and the clients' ready logic stays off the
// bus; with 0 the data and ready pass straight through.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_axi_rd_arb #(
  parameter int N = 2
) (
  input  wire logic                           clk,
  input  wire logic                           rst_n,
  input  wire logic                           clear,
  // clients
  input  wire logic [N-1:0]                   ar_valid,
  output logic      [N-1:0]                   ar_ready,
  input  wire logic [N-1:0][AXI_ADDR_WIDTH-1:0] ar_addr,
  input  wire logic [N-1:0][7:0]              ar_len,
  output logic      [N-1:0]                   r_valid,
  input  wire logic [N-1:0]                   r_ready,
  output logic      [BUS_WIDTH-1:0]           r_data,    // every client's; valid per r_valid
  // the AXI4 master read channels
  output logic                                m_arvalid,
  input  wire logic                           m_arready,
  output logic      [AXI_ADDR_WIDTH-1:0]      m_araddr,
  output logic      [7:0]                     m_arlen,
  input  wire logic                           m_rvalid,
  output logic                                m_rready,
  input  wire logic [BUS_WIDTH-1:0]           m_rdata,
  input  wire logic                           m_rlast
);
  localparam int IW = N > 1 ? $clog2(N) : 1;

  if (N < 1) begin : g_bad_n
    $fatal(1, "vdla_axi_rd_arb: N = %0d must be at least 1", N);
  end
  if (AXI_R_SLICE != 0 && AXI_R_SLICE != 1) begin : g_bad_r_slice
    $fatal(1, "vdla_axi_rd_arb: AXI_R_SLICE = %0d; allowed 0 or 1 (timing.axi_r_slice)", AXI_R_SLICE);
  end
  if (DMA_MAX_BURSTS < 1) begin : g_bad_bursts
    $fatal(1, "vdla_axi_rd_arb: DMA_MAX_BURSTS = %0d must be at least 1 (raise timing.dma_max_bursts)", DMA_MAX_BURSTS);
  end

  logic          route_in_ready, route_valid;
  logic [IW-1:0] route_head, last_grant, pick;
  logic          found, grant, ar_room;

  // Round-robin: the first requesting client after the last one granted.
  always_comb begin
    found = 1'b0;
    pick  = last_grant;
    for (int k = 1; k <= N; k++) begin
      int idx;
      idx = int'(last_grant) + k;
      if (idx >= N) idx = idx - N;
      if (!found && ar_valid[idx]) begin
        found = 1'b1;
        pick  = IW'(idx);
      end
    end
  end

  assign grant = found && ar_room && route_in_ready;
  always_comb begin
    ar_ready = '0;
    if (grant) ar_ready[pick] = 1'b1;
  end

  always_ff @(posedge clk) begin
    if (!rst_n || clear) last_grant <= IW'(N - 1);
    else if (grant) last_grant <= pick;
  end

  vdla_skid #(.WIDTH(AXI_ADDR_WIDTH + 8)) u_ar (
    .clk, .rst_n, .clear,
    .in_valid(grant), .in_ready(ar_room), .in_data({ar_addr[pick], ar_len[pick]}),
    .out_valid(m_arvalid), .out_ready(m_arready), .out_data({m_araddr, m_arlen})
  );

  // ---- read data: the optional R slice, then the route to the client --------------------
  logic                 s_valid, s_ready, s_last;
  logic [BUS_WIDTH-1:0] s_data;
  if (AXI_R_SLICE == 1) begin : g_r_slice
    vdla_skid #(.WIDTH(BUS_WIDTH + 1)) u_r (
      .clk, .rst_n, .clear,
      .in_valid(m_rvalid), .in_ready(m_rready), .in_data({m_rlast, m_rdata}),
      .out_valid(s_valid), .out_ready(s_ready), .out_data({s_last, s_data})
    );
  end else begin : g_r_direct
    assign s_valid  = m_rvalid;
    assign s_last   = m_rlast;
    assign s_data   = m_rdata;
    assign m_rready = s_ready;
  end
  assign r_data = s_data;

  /* verilator lint_off PINCONNECTEMPTY */  // outputs this module does not need are left open
  vdla_fifo #(.WIDTH(IW), .DEPTH(DMA_MAX_BURSTS), .STRICT_PUSH(1'b1), .STRICT_POP(1'b1)) u_route (
    .clk, .rst_n, .clear,
    .in_valid(grant), .in_ready(route_in_ready), .in_data(pick),
    .out_valid(route_valid), .out_ready(s_valid && s_ready && s_last), .out_data(route_head),
    .count()
  );

  always_comb begin
    r_valid = '0;
    if (route_valid) r_valid[route_head] = s_valid;
  end
  assign s_ready = route_valid && r_ready[route_head];
  /* verilator lint_on PINCONNECTEMPTY */
endmodule

`default_nettype wire
