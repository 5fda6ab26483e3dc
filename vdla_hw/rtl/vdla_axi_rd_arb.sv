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
  /* verilator lint_off UNUSEDSIGNAL */  // read only by the formal properties below
  logic [$clog2(DMA_MAX_BURSTS + 1)-1:0] route_count;
  /* verilator lint_on UNUSEDSIGNAL */

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
    .count(route_count)
  );

  always_comb begin
    r_valid = '0;
    if (route_valid) r_valid[route_head] = s_valid;
  end
  assign s_ready = route_valid && r_ready[route_head];
  /* verilator lint_on PINCONNECTEMPTY */
`ifdef FORMAL
  // Formal properties (`vdla hw prove`, docs/rtl.md "Formal proofs"). The clients' and the AXI
  // slave's contracts are assumed when the arbiter is proven alone (VDLA_FORMAL_TOP_RD_ARB).
  // Task rd_arb (k-induction): grants, the master AR handshake, bursts conserved, fairness.
  // Task rd_arb_route (BMC, VDLA_FORMAL_ARB_ROUTE): the read data of a burst the solver picks
  // reaches exactly its client, and no client receives a burst it did not ask for.
`ifdef VDLA_FORMAL_TOP_RD_ARB
  `define VDLA_RD_ARB_CONTRACT assume
  initial assume (!rst_n);
`else
  `define VDLA_RD_ARB_CONTRACT assert
`endif
  localparam int FW = 8;  // formal counters: wide enough for any depth the tasks use
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  // client ARs taken, master ARs sent, R bursts ended on the bus, R bursts ended to the clients
  // (after the optional R slice: the route FIFO pops there)
  logic [FW-1:0] f_cli_bursts, f_m_bursts, f_r_bursts, f_s_bursts;
  logic [N-1:0][IW:0] f_others;  // per client: grants to other clients while it waits
  logic [IW:0] f_dist [N];       // how far last_grant has moved round from client i
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      {f_cli_bursts, f_m_bursts, f_r_bursts, f_s_bursts} <= '0;
      f_others <= '0;
    end else begin
      f_cli_bursts <= f_cli_bursts + FW'(grant);
      f_m_bursts   <= f_m_bursts + FW'(m_arvalid && m_arready);
      f_r_bursts   <= f_r_bursts + FW'(m_rvalid && m_rready && m_rlast);
      f_s_bursts   <= f_s_bursts + FW'(s_valid && s_ready && s_last);
      for (int i = 0; i < N; i++)
        f_others[i] <= ar_valid[i] && !ar_ready[i] ? f_others[i] + (IW+1)'(grant) : '0;
    end
  end
  always_comb
    for (int i = 0; i < N; i++)
      f_dist[i] = (IW+1)'((int'(last_grant) - i + N) % N);

  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      // the slave returns data only for bursts it accepted, and holds a beat until RREADY
      if (m_rvalid) a_arb_r_owed: `VDLA_RD_ARB_CONTRACT (f_m_bursts != f_r_bursts);
      if (f_past && $past(rst_n && !clear && m_rvalid && !m_rready))
        a_arb_r_stable: `VDLA_RD_ARB_CONTRACT (m_rvalid && $stable(m_rlast));

      // one grant at a time, only to a client that asks
      a_arb_grant_onehot: assert ($onehot0(ar_ready) && (ar_ready & ~ar_valid) == '0);
      // AXI4 on the master side: ARVALID held, address and length stable, until ARREADY
      if (f_past && $past(rst_n && !clear && m_arvalid && !m_arready))
        a_axi_ar_stable: assert (m_arvalid && $stable(m_araddr) && $stable(m_arlen));
      // no burst lost or duplicated between the clients and the master: taken = sent + held in
      // the AR slice (its output register, and its skid register while it refuses a grant)
      a_arb_bursts: assert (f_cli_bursts == f_m_bursts + FW'(m_arvalid) + FW'(!ar_room)
          && (ar_room || m_arvalid));
      // the route FIFO holds one entry per burst granted and not yet ended to its client (so at
      // most DMA_MAX_BURSTS are in flight); the R slice holds at most two last beats; ending one
      // needs one sent
      f_arb_in_flight: assert (f_cli_bursts - f_s_bursts == FW'(route_count)
          && f_m_bursts - f_s_bursts <= FW'(DMA_MAX_BURSTS) && f_m_bursts - f_r_bursts <= f_cli_bursts - f_r_bursts
          && f_r_bursts - f_s_bursts <= FW'(2 * AXI_R_SLICE) && f_r_bursts - f_s_bursts <= f_m_bursts - f_s_bursts
          // with the R slice: its skid register is full only behind a full output register, a burst
          // ended on the bus but not to its client has its last beat in one of the two, and the last beat at the
          // slice's output belongs to a burst already ended on the bus
          && (AXI_R_SLICE == 0 || ((m_rready || s_valid)
              && f_r_bursts - f_s_bursts <= FW'(s_valid && s_last) + FW'(!m_rready)
              && (!(s_valid && s_last) || f_r_bursts != f_s_bursts))));
      // read data goes to one client at most, the head burst's, and only while the stream offers it
      a_arb_r_onehot: assert ($onehot0(r_valid) && (r_valid == '0 || s_valid) && (!s_ready || route_valid));
    end
  end
  // Per-client checks as bit vectors (yosys names an assertion once, so none sits in a loop).
  logic [N-1:0] f_waited;  // the client's request was pending in the previous cycle
  logic [N-1:0][AXI_ADDR_WIDTH-1:0] f_addr_q;
  logic [N-1:0][7:0] f_len_q;
  logic [N-1:0] f_held, f_fair, f_fair_dist;
  always_ff @(posedge clk) begin
    f_waited <= rst_n && !clear ? ar_valid & ~ar_ready : '0;
    f_addr_q <= ar_addr;
    f_len_q  <= ar_len;
  end
  always_comb
    for (int i = 0; i < N; i++) begin
      f_held[i]      = !f_waited[i] || (ar_valid[i] && ar_addr[i] == f_addr_q[i] && ar_len[i] == f_len_q[i]);
      f_fair[i]      = 32'(f_others[i]) <= N - 1;
      f_fair_dist[i] = f_others[i] <= f_dist[i];
    end
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      // clients: AXI4 -- a request is held, with its address and length, until ARREADY
      a_arb_client_stable: `VDLA_RD_ARB_CONTRACT (&f_held);
      // fairness: while a client waits, at most N - 1 others are granted (round-robin) ...
      a_arb_fair: assert (&f_fair);
      // ... because each grant to another client moves last_grant further round from it
      f_arb_fair_dist: assert (&f_fair_dist);
    end
  end
`ifdef VDLA_FORMAL_ARB_ROUTE
  // The burst the solver picks (f_k-th granted): its client, and the R bursts each client got.
  (* anyconst *) logic [FW-1:0] f_k;
  logic [IW-1:0] f_k_client;
  logic [N-1:0][FW-1:0] f_granted, f_got;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      f_k_client <= '0;
      f_granted <= '0;
      f_got <= '0;
    end else begin
      if (grant && f_cli_bursts == f_k) f_k_client <= pick;
      for (int i = 0; i < N; i++) begin
        f_granted[i] <= f_granted[i] + FW'(ar_ready[i]);
        f_got[i] <= f_got[i] + FW'(r_valid[i] && r_ready[i] && s_last);
      end
    end
  end
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      // every beat of the picked burst reaches its client, and only it
      if (s_valid && f_s_bursts == f_k && f_cli_bursts > f_k)
        a_arb_route: assert (r_valid == N'(1) << f_k_client);
    end
  end
  logic [N-1:0] f_owned;
  always_comb
    for (int i = 0; i < N; i++) f_owned[i] = !(r_valid[i] && r_ready[i] && s_last) || f_got[i] < f_granted[i];
  // no client ends more bursts than it was granted
  always_ff @(posedge clk)
    if (rst_n && !clear) a_arb_r_owned: assert (&f_owned);
`endif
`undef VDLA_RD_ARB_CONTRACT
`endif
endmodule

`default_nettype wire
