// The dependency-token handshake around one module's instruction stream.
//
// Takes the next instruction from the module's command queue, pops the tokens its
// pop_prev / pop_next flags ask for (each as soon as it is there), starts the
// executor, waits for it to complete, then pushes the tokens of push_prev / push_next
// (each as soon as its queue has room). A flag whose queue does not exist for this
// module (HAS_PREV / HAS_NEXT = 0: load has no previous stage, store no next) is
// ignored; the ISA requires such flags to be clear.
//
// Timing: an instruction whose tokens are ready takes 3 cycles besides its executor's
// latency E (exec_done E >= 1 cycles after exec_start): accept, pop + start, push.
`default_nettype none
/* verilator lint_off IMPORTSTAR */  // yosys 0.70 reads package imports only at file scope
import vdla_pkg::*;
/* verilator lint_on IMPORTSTAR */

module vdla_dep_gate #(
  parameter bit HAS_PREV = 1'b1,
  parameter bit HAS_NEXT = 1'b1
) (
  input  wire logic                 clk,
  input  wire logic                 rst_n,
  input  wire logic                 clear,
  // the module's command queue
  input  wire logic                 cmd_valid,
  output logic                      cmd_ready,
  input  wire logic [INSN_BITS-1:0] cmd_insn,
  // the executor
  output logic                      exec_start,   // one-cycle pulse; insn is stable until exec_done
  output logic [INSN_BITS-1:0]      insn,
  input  wire logic                 exec_done,    // one-cycle pulse
  // token queues: pop from prev/next, push to prev/next
  input  wire logic                 pop_prev_valid,
  output logic                      pop_prev_ready,
  input  wire logic                 pop_next_valid,
  output logic                      pop_next_ready,
  output logic                      push_prev_valid,
  input  wire logic                 push_prev_ready,
  output logic                      push_next_valid,
  input  wire logic                 push_next_ready,
  output logic                      busy           // an instruction is in progress
);
  typedef enum logic [1:0] {S_IDLE, S_POP, S_EXEC, S_PUSH} state_e;
  state_e state;
  logic need_pop_prev, need_pop_next, need_push_prev, need_push_next;
  // The dependency flags sit at the same bits in every instruction format.
  /* verilator lint_off UNUSEDSIGNAL */  // the gate reads only the four flags
  vdla_pkg::finish_insn_t flags, cmd_flags;
  /* verilator lint_on UNUSEDSIGNAL */

  assign flags     = vdla_pkg::finish_insn_t'(insn);
  assign cmd_flags = vdla_pkg::finish_insn_t'(cmd_insn);
  assign cmd_ready = state == S_IDLE;
  assign busy      = state != S_IDLE;

  assign pop_prev_ready  = state == S_POP && need_pop_prev;
  assign pop_next_ready  = state == S_POP && need_pop_next;
  assign push_prev_valid = state == S_PUSH && need_push_prev;
  assign push_next_valid = state == S_PUSH && need_push_next;

  logic pops_left, pushes_left;
  assign pops_left   = (need_pop_prev && !pop_prev_valid) || (need_pop_next && !pop_next_valid);
  assign pushes_left = (need_push_prev && !push_prev_ready) || (need_push_next && !push_next_ready);
  assign exec_start  = state == S_POP && !pops_left;

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      state          <= S_IDLE;
      insn           <= '0;
      need_pop_prev  <= 1'b0;
      need_pop_next  <= 1'b0;
      need_push_prev <= 1'b0;
      need_push_next <= 1'b0;
    end else begin
      unique case (state)
        S_IDLE: if (cmd_valid) begin
          insn          <= cmd_insn;
          need_pop_prev <= HAS_PREV && cmd_flags.pop_prev;
          need_pop_next <= HAS_NEXT && cmd_flags.pop_next;
          state         <= S_POP;
        end
        S_POP: begin
          if (pop_prev_valid) need_pop_prev <= 1'b0;
          if (pop_next_valid) need_pop_next <= 1'b0;
          if (!pops_left) state <= S_EXEC;
        end
        S_EXEC: if (exec_done) begin
          need_push_prev <= HAS_PREV && flags.push_prev;
          need_push_next <= HAS_NEXT && flags.push_next;
          state          <= S_PUSH;
        end
        S_PUSH: begin
          if (push_prev_ready) need_push_prev <= 1'b0;
          if (push_next_ready) need_push_next <= 1'b0;
          if (!pushes_left) state <= S_IDLE;
        end
        default: state <= S_IDLE;
      endcase
    end
  end

`ifndef SYNTHESIS
  // Simulation-only invariants (Verilator --assert; yosys defines SYNTHESIS).
  a_gate_cmd_stable: assert property (@(posedge clk) disable iff (!rst_n || clear)
                                      cmd_valid && !cmd_ready |=> cmd_valid && $stable(cmd_insn))
    else $error("vdla_dep_gate a_gate_cmd_stable: the command queue withdrew or changed an instruction before the gate took it");
  a_gate_token_held: assert property (@(posedge clk) disable iff (!rst_n || clear)
                                      (pop_prev_valid && !pop_prev_ready |=> pop_prev_valid)
                                      and (pop_next_valid && !pop_next_ready |=> pop_next_valid))
    else $error("vdla_dep_gate a_gate_token_held: a dependency token vanished from its queue before the gate popped it");
  a_gate_exec_done: assert property (@(posedge clk) disable iff (!rst_n || clear) exec_done |-> state == S_EXEC)
    else $error("vdla_dep_gate a_gate_exec_done: the executor reported done while no instruction was executing (state %0d)", state);
`endif

`ifdef FORMAL
  // Formal properties (`vdla hw prove`, docs/rtl.md "Formal proofs"). The contracts of the
  // command queue, the token queues and the executor are assumed when the gate is proven
  // alone (VDLA_FORMAL_TOP_GATE) and asserted where a harness wires real queues to it.
`ifdef VDLA_FORMAL_TOP_GATE
  `define VDLA_GATE_CONTRACT assume
  initial assume (!rst_n);
`else
  `define VDLA_GATE_CONTRACT assert
`endif
  logic f_past = 1'b0;
  always_ff @(posedge clk) f_past <= 1'b1;
  // What the current instruction has done so far: tokens popped and pushed, and the
  // cycles it spent that no stall of its environment explains.
  logic f_got_prev, f_got_next, f_put_prev, f_put_next;
  logic [2:0] f_own_cycles;
  logic f_stalled;
  assign f_stalled = (state == S_POP && pops_left) || state == S_EXEC || (state == S_PUSH && pushes_left);
  always_ff @(posedge clk) begin
    if (!rst_n || clear || (state == S_IDLE && cmd_valid)) begin
      {f_got_prev, f_got_next, f_put_prev, f_put_next} <= '0;
      f_own_cycles <= '0;
    end else begin
      if (pop_prev_valid && pop_prev_ready) f_got_prev <= 1'b1;
      if (pop_next_valid && pop_next_ready) f_got_next <= 1'b1;
      if (push_prev_valid && push_prev_ready) f_put_prev <= 1'b1;
      if (push_next_valid && push_next_ready) f_put_next <= 1'b1;
      if (busy && !f_stalled && f_own_cycles != 3'd7) f_own_cycles <= f_own_cycles + 1'b1;
    end
  end
  logic f_want_pop_prev, f_want_pop_next, f_want_push_prev, f_want_push_next;
  assign f_want_pop_prev  = HAS_PREV && flags.pop_prev;
  assign f_want_pop_next  = HAS_NEXT && flags.pop_next;
  assign f_want_push_prev = HAS_PREV && flags.push_prev;
  assign f_want_push_next = HAS_NEXT && flags.push_next;

  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      if (f_past && $past(rst_n && !clear && cmd_valid && !cmd_ready))
        a_gate_cmd_stable: `VDLA_GATE_CONTRACT (cmd_valid && $stable(cmd_insn));
      if (f_past && $past(rst_n && !clear && pop_prev_valid && !pop_prev_ready))
        a_gate_token_held_prev: `VDLA_GATE_CONTRACT (pop_prev_valid);
      if (f_past && $past(rst_n && !clear && pop_next_valid && !pop_next_ready))
        a_gate_token_held_next: `VDLA_GATE_CONTRACT (pop_next_valid);
      a_gate_exec_done: `VDLA_GATE_CONTRACT (!exec_done || state == S_EXEC);

      // a gate never releases its executor without every token the instruction pops
      f_gate_release: assert (!exec_start || ((f_got_prev || (pop_prev_valid && pop_prev_ready) || !f_want_pop_prev)
                                              && (f_got_next || (pop_next_valid && pop_next_ready) || !f_want_pop_next)));
      // each flag pops or pushes exactly one token: never a second one, never one not asked for
      f_gate_pop_once: assert (!(pop_prev_ready && (f_got_prev || !f_want_pop_prev))
                               && !(pop_next_ready && (f_got_next || !f_want_pop_next)));
      f_gate_push_once: assert (!(push_prev_valid && (f_put_prev || !f_want_push_prev))
                                && !(push_next_valid && (f_put_next || !f_want_push_next)));
      // back to idle only with every push done (tokens conserved per instruction)
      if (f_past && $past(rst_n && !clear && state == S_PUSH) && state == S_IDLE)
        f_gate_pushed_all: assert (($past(f_put_prev) || $past(push_prev_valid && push_prev_ready) || !$past(f_want_push_prev))
                                   && ($past(f_put_next) || $past(push_next_valid && push_next_ready) || !$past(f_want_push_next)));
      // pending-flag bookkeeping matches the instruction (makes the above inductive)
      f_gate_need: assert ((state != S_POP || (need_pop_prev == (f_want_pop_prev && !f_got_prev)
                                               && need_pop_next == (f_want_pop_next && !f_got_next)))
                           && (state != S_PUSH || (need_push_prev == (f_want_push_prev && !f_put_prev)
                                                   && need_push_next == (f_want_push_next && !f_put_next)))
                           && (state == S_IDLE || state == S_PUSH || (!f_put_prev && !f_put_next))
                           && (state != S_POP || f_own_cycles == '0)
                           && (state == S_IDLE || f_own_cycles <= 3'd1));
      // bounded liveness: after its accept cycle an instruction spends at most 2 cycles of
      // its own (pop + start, push) besides those its tokens, its executor or a full queue
      // hold it, so it retires once its environment lets it (the 3-cycle overhead above)
      f_gate_progress: assert (f_own_cycles <= 3'd2);
    end
  end
`ifdef VDLA_FORMAL_GATE_TOKENS
  // The token-side lemma of "the live tasks' reduced token queues never fill" (docs/rtl.md, "The
  // reduced queues, compositionally"): the tokens this gate has pushed to each queue plus the one
  // its current instruction still owes equal the instructions it took with that push flag -- so
  // the pushes never exceed them. Counted modulo 2^32 (a run has fewer instructions).
  logic [31:0] f_took_prev, f_took_next, f_pushed_prev, f_pushed_next;
  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      {f_took_prev, f_took_next, f_pushed_prev, f_pushed_next} <= '0;
    end else begin
      f_took_prev   <= f_took_prev + 32'(cmd_valid && cmd_ready && HAS_PREV && cmd_flags.push_prev);
      f_took_next   <= f_took_next + 32'(cmd_valid && cmd_ready && HAS_NEXT && cmd_flags.push_next);
      f_pushed_prev <= f_pushed_prev + 32'(push_prev_valid && push_prev_ready);
      f_pushed_next <= f_pushed_next + 32'(push_next_valid && push_next_ready);
    end
  end
  always_ff @(posedge clk) begin
    if (rst_n && !clear) begin
      f_gate_tokens_prev: assert (f_pushed_prev + 32'(busy && f_want_push_prev && !f_put_prev) == f_took_prev);
      f_gate_tokens_next: assert (f_pushed_next + 32'(busy && f_want_push_next && !f_put_next) == f_took_next);
    end
  end
`endif
`undef VDLA_GATE_CONTRACT
`endif
endmodule

`default_nettype wire
