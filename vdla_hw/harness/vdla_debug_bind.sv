// Binds the debug probe into vdla_top for simulation builds (the Verilator harness and the
// cocotb system tests); synthesis and lint never read this file. The connections name
// vdla_top's internal handshakes and queues: renaming one there breaks this build loudly.
bind vdla_top vdla_debug_probe #(
  .CMD_W($clog2(vdla_pkg::CMD_QUEUE_DEPTH + 1)),
  .TOK_W($clog2(vdla_pkg::DEP_QUEUE_DEPTH + 1))
) u_probe (
  .clk, .rst_n, .clear,
  .fl_fire(fl_valid && fl_ready), .fc_fire(fc_valid && fc_ready), .fs_fire(fs_valid && fs_ready),
  .lq_fire(lq_valid && lq_ready), .cq_fire(cq_valid && cq_ready), .sq_fire(sq_valid && sq_ready),
  .load_state(u_load.u_gate.state), .compute_state(u_compute.u_gate.state), .store_state(u_store.u_gate.state),
  .cmd_load(u_load_queue.count), .cmd_compute(u_compute_queue.count), .cmd_store(u_store_queue.count),
  .tok_l2c(u_l2c.count), .tok_c2l(u_c2l.count), .tok_c2s(u_c2s.count), .tok_s2c(u_s2c.count)
);
