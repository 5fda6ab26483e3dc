// The Verilator testbench of vdla_top, compiled into a shared library and driven through
// ctypes (vdla_hw/harness/sim.py).
//
// Why C++: a whole program runs millions of clock cycles.  Python code that pokes and
// peeks the model once per cycle (cocotb, pyverilator) manages ~0.1 M cycles/s; looping
// the clock here, with the DRAM model in C++ as well, runs at the speed of the Verilated
// model itself.  Python only loads DRAM, writes the control registers, calls `vh_run`
// and reads DRAM back.
//
// The build (vdla_hw/harness/build.py) generates `vdla_ports.h` from the Verilated
// headers: VDLA_PORTS(X) calls X(name, width) for every port of vdla_top,
// VDLA_PROBES(X) X(name, member, width) for every dbg_* signal of the debug probe bound
// into it (vdla_debug_probe.sv), and VDLA_DONE_PORT names the done output, so this file
// never hard-codes the design's widths or debug signals.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "Vvdla_top.h"
#include "Vvdla_top___024root.h"
#include "axi_dram.h"
#include "vdla_ports.h"
#include "verilated.h"
#ifdef VDLA_TRACE
#include "verilated_fst_c.h"
#endif
#ifdef VDLA_COVERAGE
#include "verilated_cov.h"
#endif

// Everything Verilator prints is echoed to stdout and kept, so a failed assertion's
// message can be returned as the run's error (vl_print_hook.h routes VL_PRINTF here).
static std::string g_vl_output;

extern "C" int vdla_vl_printf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  char buf[2048];
  const int n = std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  std::fputs(buf, stdout);
  if (g_vl_output.size() < (1u << 16)) g_vl_output += buf;
  return n;
}

namespace vdla {

// The lines of Verilator's output that report a failed assertion (or another $error).
inline std::string assertion_lines(const std::string& out) {
  std::string lines;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(pos, end - pos);
    if (line.find("%Error") != std::string::npos && line.find("Verilog $stop") == std::string::npos) lines += line + "\n";
    pos = end + 1;
  }
  return lines.empty() ? out : lines;
}

// One port of the top, reachable by name for pin-level access and the debug snapshot.
struct Port {
  const char* name;
  void* storage;   // the Verilated signal (CData/SData/IData/QData or VlWide words)
  uint32_t bytes;  // bytes of storage
};

inline uint32_t storage_bytes(uint32_t width) {
  if (width <= 8) return 1;
  if (width <= 16) return 2;
  if (width <= 32) return 4;
  if (width <= 64) return 8;
  return 4 * ((width + 31) / 32);
}

constexpr uint32_t kAxilTimeout = 1000;  // cycles an AXI-lite transfer may take

class Harness {
 public:
  Harness(uint32_t bus_bytes, DramTiming timing, const char* fst_path)
      : ctx_(std::make_unique<VerilatedContext>()), dram_(bus_bytes, timing) {
    ctx_->randReset(2);  // --x-initial unique: uninitialised state is random, not zero
    // A failed assertion ($error) must not exit the host process: the run stops with an
    // error instead (see tick()).
    ctx_->fatalOnError(false);
    top_ = std::make_unique<Vvdla_top>(ctx_.get(), "vdla_top");
#define VDLA_PORT(NAME, WIDTH) ports_.push_back(Port{#NAME, static_cast<void*>(&top_->NAME), storage_bytes(WIDTH)});
    VDLA_PORTS(VDLA_PORT)
#undef VDLA_PORT
#define VDLA_PROBE(NAME, MEMBER, WIDTH) \
  ports_.push_back(Port{#NAME, static_cast<void*>(&top_->rootp->MEMBER), storage_bytes(WIDTH)});
    VDLA_PROBES(VDLA_PROBE)
#undef VDLA_PROBE
    if (fst_path && *fst_path) open_trace(fst_path);
    reset(8);
  }

  ~Harness() {
    use_context();
#ifdef VDLA_TRACE
    if (trace_) trace_->close();
#endif
    top_->final();
  }

  AxiDram& dram() { return dram_; }
  // Only cycles in [from, to) reach the waveform (`--fst-window`).
  void set_trace_window(uint64_t from, uint64_t to) {
    trace_from_ = from;
    trace_to_ = to;
  }

  VerilatedContext* context() { return ctx_.get(); }

  // Verilator keeps one "current context" per thread, set when a model is created. With two
  // harnesses in one process (two RtlSim objects), the later one's context stays current after
  // it is destroyed, and the earlier model's final() then hung on the freed context: every entry
  // point that evaluates the model makes its own context current first.
  void use_context() { Verilated::threadContextp(ctx_.get()); }
  const std::string& error() const { return error_.empty() ? dram_.error() : error_; }
  uint64_t cycle() const { return cycle_; }
  std::vector<Port>& ports() { return ports_; }

  void reset(uint32_t cycles) {
    use_context();
    error_.clear();
    g_vl_output.clear();
    idle_axil();
    // The DRAM model stays out of reset cycles: the design's outputs are not yet defined.
    top_->m_axi_arready = top_->m_axi_awready = top_->m_axi_wready = 0;
    top_->m_axi_rvalid = top_->m_axi_bvalid = 0;
    top_->rst_n = 0;
    for (uint32_t k = 0; k < cycles; ++k) eval_clock(0), eval_clock(1);
    top_->rst_n = 1;
    dram_.reset();
  }

  // An assertion that failed during an eval outside tick() (register access, pin-level path).
  void check_assertions() {
    if (ctx_->gotError() && error_.empty()) {
      error_ = "RTL assertion failed at cycle " + std::to_string(cycle_) + ": " + assertion_lines(g_vl_output);
      g_vl_output.clear();
    }
  }

  // One clock cycle: drive the testbench's outputs, settle, sample handshakes, clock edge.
  void tick() {
    dram_.drive(*top_);
    top_->clk = 0;
    top_->eval();
    dump(2 * cycle_);
    dram_.sample(*top_);
    top_->clk = 1;
    top_->eval();
    dump(2 * cycle_ + 1);
    ++cycle_;
    if (ctx_->gotError() && error_.empty()) {
      error_ = "RTL assertion failed at cycle " + std::to_string(cycle_) + ": " + assertion_lines(g_vl_output);
      g_vl_output.clear();
    }
  }

  // Run until the done output rises, `max_cycles` pass or the DRAM model reports an error.
  // Returns 0 (done), 1 (cycle limit) or 2 (error, see error()).
  int run(uint64_t max_cycles) {
    use_context();
    for (uint64_t k = 0; k < max_cycles; ++k) {
      if (top_->VDLA_DONE_PORT) return 0;
      tick();
      if (!error().empty()) return 2;
    }
    return top_->VDLA_DONE_PORT ? 0 : 1;
  }

  // ---- the AXI-lite register driver ------------------------------------------------------
  bool reg_write(uint32_t offset, uint32_t value) {
    use_context();
    top_->s_axil_awaddr = offset;
    top_->s_axil_wdata = value;
    top_->s_axil_wstrb = 0xF;
    top_->s_axil_awvalid = 1;
    top_->s_axil_wvalid = 1;
    top_->s_axil_bready = 0;
    bool aw_done = false, w_done = false;
    for (uint32_t k = 0; k < kAxilTimeout && !(aw_done && w_done); ++k) {
      settle();
      const bool aw = top_->s_axil_awvalid && top_->s_axil_awready;
      const bool w = top_->s_axil_wvalid && top_->s_axil_wready;
      tick();
      aw_done |= aw;
      w_done |= w;
      if (aw) top_->s_axil_awvalid = 0;
      if (w) top_->s_axil_wvalid = 0;
    }
    top_->s_axil_bready = 1;
    bool ok = false;
    for (uint32_t k = 0; k < kAxilTimeout && aw_done && w_done && !ok; ++k) {
      settle();
      ok = top_->s_axil_bvalid;
      tick();
    }
    idle_axil();
    if (!ok) error_ = "AXI-lite write to register offset " + std::to_string(offset) + " got no response";
    return ok;
  }

  bool reg_read(uint32_t offset, uint32_t* value) {
    use_context();
    top_->s_axil_araddr = offset;
    top_->s_axil_arvalid = 1;
    top_->s_axil_rready = 0;
    bool ar_done = false;
    for (uint32_t k = 0; k < kAxilTimeout && !ar_done; ++k) {
      settle();
      ar_done = top_->s_axil_arready;
      tick();
    }
    top_->s_axil_arvalid = 0;
    top_->s_axil_rready = 1;
    bool ok = false;
    for (uint32_t k = 0; k < kAxilTimeout && ar_done && !ok; ++k) {
      settle();
      ok = top_->s_axil_rvalid;
      if (ok) *value = top_->s_axil_rdata;
      tick();
    }
    idle_axil();
    if (!ok) error_ = "AXI-lite read of register offset " + std::to_string(offset) + " got no response";
    return ok;
  }

  // Pin-level access for the per-cycle Python path (the pyverilator-style baseline).
  void eval_clock(uint8_t clk) {
    use_context();
    top_->clk = clk;
    top_->eval();
    dump(2 * cycle_ + clk);
    if (clk) ++cycle_;
    check_assertions();
  }

 private:
  // Evaluate the design with the current inputs and the clock low, so that outputs that
  // depend combinationally on the inputs (ready signals) are current before sampling.
  void settle() {
    dram_.drive(*top_);
    top_->clk = 0;
    top_->eval();
  }

  void idle_axil() {
    top_->s_axil_awvalid = 0;
    top_->s_axil_wvalid = 0;
    top_->s_axil_bready = 1;
    top_->s_axil_arvalid = 0;
    top_->s_axil_rready = 1;
  }

  void open_trace(const char* path) {
#ifdef VDLA_TRACE
    ctx_->traceEverOn(true);
    trace_ = std::make_unique<VerilatedFstC>();
    top_->trace(trace_.get(), 99);
    trace_->open(path);
#else
    error_ = std::string("this harness was built without tracing; cannot write ") + path;
#endif
  }

  void dump(uint64_t time) {
#ifdef VDLA_TRACE
    if (trace_ && time / 2 >= trace_from_ && time / 2 < trace_to_) trace_->dump(time);
#else
    (void)time;
#endif
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vvdla_top> top_;
  AxiDram dram_;
  std::vector<Port> ports_;
  std::string error_;
  uint64_t cycle_ = 0;
  uint64_t trace_from_ = 0;
  uint64_t trace_to_ = UINT64_MAX;
#ifdef VDLA_TRACE
  std::unique_ptr<VerilatedFstC> trace_;
#endif
};

}  // namespace vdla

using vdla::Harness;

// ---- the C API used through ctypes (see sim.py for the Python side) -----------------------
extern "C" {

void* vh_create(uint32_t bus_bytes, uint32_t read_latency, uint32_t write_latency, const char* fst_path) {
  vdla::DramTiming timing;
  timing.read_latency = read_latency ? read_latency : 1;
  timing.write_latency = write_latency ? write_latency : 1;
  return new Harness(bus_bytes, timing, fst_path);
}

void vh_destroy(void* h) { delete static_cast<Harness*>(h); }

// Record only the cycles in [from, to) of the waveform (counted like vh_cycle).
void vh_trace_window(void* h, uint64_t from, uint64_t to) { static_cast<Harness*>(h)->set_trace_window(from, to); }

// Write the coverage points (line, toggle) hit so far to `path`; -1 in a build without
// coverage (Verilator --coverage is a separate variant: it slows every cycle down).
int vh_coverage_write(void* h, const char* path) {
#ifdef VDLA_COVERAGE
  static_cast<Harness*>(h)->context()->coveragep()->write(path);
  return 0;
#else
  (void)h;
  (void)path;
  return -1;
#endif
}

// Replace DRAM with `n` bytes of `data` followed by zeros up to `size` bytes.
void vh_dram_load(void* h, const uint8_t* data, uint64_t n, uint64_t size) {
  auto& mem = static_cast<Harness*>(h)->dram().memory();
  mem.assign(size, 0);
  std::memcpy(mem.data(), data, n);
}

// Grow (or shrink) DRAM to `size` bytes, keeping its contents; new bytes are zero.
void vh_dram_resize(void* h, uint64_t size) { static_cast<Harness*>(h)->dram().memory().resize(size, 0); }

// Host-side write of `n` bytes at `offset` (the emulated board's cache flush); returns 0, or
// -1 if the range is outside DRAM.
int vh_dram_write(void* h, const uint8_t* data, uint64_t offset, uint64_t n) {
  auto& mem = static_cast<Harness*>(h)->dram().memory();
  if (offset + n > mem.size()) return -1;
  std::memcpy(mem.data() + offset, data, n);
  return 0;
}

// Copy `n` DRAM bytes from `offset` to `out`; returns 0, or -1 if the range is outside DRAM.
int vh_dram_read(void* h, uint8_t* out, uint64_t offset, uint64_t n) {
  const auto& mem = static_cast<Harness*>(h)->dram().memory();
  if (offset + n > mem.size()) return -1;
  std::memcpy(out, mem.data() + offset, n);
  return 0;
}

int vh_reg_write(void* h, uint32_t offset, uint32_t value) {
  return static_cast<Harness*>(h)->reg_write(offset, value) ? 0 : -1;
}

int64_t vh_reg_read(void* h, uint32_t offset) {
  uint32_t v = 0;
  return static_cast<Harness*>(h)->reg_read(offset, &v) ? int64_t(v) : -1;
}

int vh_run(void* h, uint64_t max_cycles) { return static_cast<Harness*>(h)->run(max_cycles); }

uint64_t vh_cycle(void* h) { return static_cast<Harness*>(h)->cycle(); }

const char* vh_error(void* h) { return static_cast<Harness*>(h)->error().c_str(); }

uint64_t vh_dram_bytes(void* h, int written) {
  auto& d = static_cast<Harness*>(h)->dram();
  return written ? d.bytes_written() : d.bytes_read();
}

// ---- ports by index: names, widths, peek/poke of up to 64 bits --------------------------
int vh_port_count(void* h) { return int(static_cast<Harness*>(h)->ports().size()); }

const char* vh_port_name(void* h, int k) { return static_cast<Harness*>(h)->ports()[k].name; }

// Low 64 bits of port k.
uint64_t vh_peek(void* h, int k) {
  const auto& p = static_cast<Harness*>(h)->ports()[k];
  uint64_t v = 0;
  std::memcpy(&v, p.storage, p.bytes < 8 ? p.bytes : 8);
  return v;
}

// Set input port k to the `nbytes` little-endian bytes at `data` (zero-extended).
void vh_poke_bytes(void* h, int k, const uint8_t* data, uint32_t nbytes) {
  const auto& p = static_cast<Harness*>(h)->ports()[k];
  std::memset(p.storage, 0, p.bytes);
  std::memcpy(p.storage, data, nbytes < p.bytes ? nbytes : p.bytes);
}

void vh_peek_bytes(void* h, int k, uint8_t* out, uint32_t nbytes) {
  const auto& p = static_cast<Harness*>(h)->ports()[k];
  std::memcpy(out, p.storage, nbytes < p.bytes ? nbytes : p.bytes);
}

void vh_poke(void* h, int k, uint64_t value) {
  vh_poke_bytes(h, k, reinterpret_cast<const uint8_t*>(&value), 8);
}

void vh_eval_clock(void* h, uint8_t clk) { static_cast<Harness*>(h)->eval_clock(clk); }

}  // extern "C"
