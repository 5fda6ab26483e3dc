// Range check of a sequential SRAM walk: an instruction that writes (LOAD) or reads (STORE)
// consecutive elements from `base` steps once per `step`; the walk's element index is kept
// unwrapped, and `fault` pulses at the first step whose index is DEPTH or more (the SRAM
// address itself wraps there). `elem` holds that index.
//
// Timing: whether the next step faults is a flop (`armed`: the index is DEPTH or more and the
// walk has not faulted yet), set a step ahead (`at == DEPTH - 1` as it steps there, or a start
// at or past DEPTH), so `fault` is one gate behind `step` -- `step` is a DMA element's arrival
// in the loaders, and element -> range compare -> fault collector -> the control block's `done`
// was an ECP5 critical path (docs/fpga_ecp5.md).
`default_nettype none

module vdla_sram_range #(
  parameter int DEPTH = 16,
  parameter int BASE_W = 16,
  parameter int W = 34
) (
  input  wire logic              clk,
  input  wire logic              rst_n,
  input  wire logic              clear,
  input  wire logic              start,
  input  wire logic [BASE_W-1:0] base,
  input  wire logic              step,
  output logic                   fault,
  output logic [W-1:0]           elem
);
  logic [W-1:0] at;
  logic         armed;  // at >= DEPTH and this walk has not faulted yet (only its first bad element is reported)

  assign fault = step && armed;
  assign elem  = at;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      at    <= '0;
      armed <= 1'b0;
    end else if (start) begin
      at    <= W'(base);
      armed <= W'(base) >= W'(DEPTH);
    end else if (step) begin
      at    <= at + 1'b1;
      // past DEPTH - 1 the walk has just faulted (or had), so only the step onto DEPTH arms it
      armed <= at == W'(DEPTH - 1);
    end
  end
`ifdef FORMAL
  // Formal properties (`vdla hw prove`, docs/rtl.md "Formal proofs"; any start, base and
  // steps). f_first is where the walk's first element at or past DEPTH lies: DEPTH, or the
  // base when the walk starts past the buffer. Proven: `fault` pulses exactly once per walk,
  // at the step of that element (f_range_first), and at no other (f_range_sound), so an
  // SRAM address that wraps at DEPTH is always reported at its first wrapped element.
`ifdef VDLA_FORMAL_TOP_RANGE
  initial assume (!rst_n);
`endif
  logic [W-1:0] f_first;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      f_first <= W'(DEPTH);
    end else if (start) begin
      f_first <= W'(base) > W'(DEPTH) ? W'(base) : W'(DEPTH);
    end
  end
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      // the walk never wraps W bits, so it only moves up (the machine halts at its first fault,
      // long before a walk could run 2^W elements)
      assume (!(step && at == '1));
      // the first element past the end is reported ...
      if (step && at == f_first) f_range_first: assert (fault);
      // ... and nothing else
      if (fault) f_range_sound: assert (step && at == f_first);
      // what makes it inductive: the walk is past f_first exactly when it has reported
      f_range_armed: assert (armed == (at == f_first) && f_first >= W'(DEPTH) && (at >= f_first || f_first == W'(DEPTH)));
    end
  end
`endif
endmodule

`default_nettype wire
