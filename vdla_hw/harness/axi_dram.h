// A DRAM model answering an AXI4 master, one call per clock cycle.
//
// The model is the C++ counterpart of the cycle model's DRAM channel
// (simulator/cycle/dram.py) and of cocotbext-axi's AxiRam in the cocotb system tests:
// a flat byte space from address 0, INCR bursts, and a fixed latency from an accepted
// request to its first data beat (reads) or from the last write beat to the write
// response.  Any number of bursts may be outstanding; read data returns in request
// order, one beat per cycle, so back-to-back bursts stream without gaps once the first
// latency has passed.
//
// It is templated on the Verilated top so that it reads and writes the `m_axi_*` ports
// directly (no copying through an intermediate struct on every cycle).  Per cycle the
// harness calls `drive` (set this cycle's outputs from the model's state), evaluates
// the design with the clock low, calls `sample` (record the handshakes that happen at
// the coming rising edge), then raises the clock.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <type_traits>
#include <vector>

#include "verilated.h"

namespace vdla {

// ---- moving bus beats between DRAM bytes and Verilated signals of any width ------------
template <typename T>
inline void bytes_to_signal(T& sig, const uint8_t* src, size_t n) {
  uint64_t v = 0;
  std::memcpy(&v, src, n);  // little-endian host: byte k is bits [8k+7:8k]
  sig = static_cast<T>(v);
}
template <std::size_t W>
inline void bytes_to_signal(VlWide<W>& sig, const uint8_t* src, size_t n) {
  std::memcpy(sig.data(), src, n);
}
template <typename T>
inline void signal_to_bytes(const T& sig, uint8_t* dst, size_t n) {
  const uint64_t v = static_cast<uint64_t>(sig);
  std::memcpy(dst, &v, n);
}
template <std::size_t W>
inline void signal_to_bytes(const VlWide<W>& sig, uint8_t* dst, size_t n) {
  std::memcpy(dst, sig.data(), n);
}
// Bit k of a write strobe of any width.
template <typename T>
inline bool strobe_bit(const T& sig, unsigned k) {
  return (static_cast<uint64_t>(sig) >> k) & 1u;
}
template <std::size_t W>
inline bool strobe_bit(const VlWide<W>& sig, unsigned k) {
  return (sig.at(k / 32) >> (k % 32)) & 1u;
}

struct DramTiming {
  uint32_t read_latency = 32;   // AR handshake -> first R beat (cycles, >= 1)
  uint32_t write_latency = 32;  // last W beat -> B response (cycles, >= 1)
  uint32_t max_outstanding = 16;  // bursts accepted per direction before AR/AW ready drops
};

class AxiDram {
 public:
  AxiDram(uint32_t bus_bytes, DramTiming timing) : bus_bytes_(bus_bytes), timing_(timing) {}

  std::vector<uint8_t>& memory() { return mem_; }
  const std::vector<uint8_t>& memory() const { return mem_; }
  const std::string& error() const { return error_; }
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t bytes_written() const { return bytes_written_; }

  // Drop all in-flight traffic (the design is being reset).
  void reset() {
    reads_.clear();
    writes_.clear();
    responses_.clear();
    error_.clear();
    now_ = 0;
  }

  // Outputs of this cycle, a function of the model's state only (registered outputs).
  template <class Top>
  void drive(Top& t) {
    t.m_axi_arready = reads_.size() < timing_.max_outstanding;
    t.m_axi_awready = writes_.size() < timing_.max_outstanding;
    t.m_axi_wready = !writes_.empty();
    const bool rv = !reads_.empty() && reads_.front().ready_at <= now_;
    t.m_axi_rvalid = rv;
    if (rv) {
      const Burst& b = reads_.front();
      uint8_t beat[kMaxBusBytes] = {};
      t.m_axi_rresp = read_beat(b.addr, beat) ? kOkay : kSlvErr;
      bytes_to_signal(t.m_axi_rdata, beat, bus_bytes_);
      t.m_axi_rid = b.id;
      t.m_axi_rlast = b.beats_left == 1;
    } else {
      t.m_axi_rlast = 0;
    }
    const bool bv = !responses_.empty() && responses_.front().ready_at <= now_;
    t.m_axi_bvalid = bv;
    if (bv) {
      t.m_axi_bid = responses_.front().id;
      t.m_axi_bresp = responses_.front().ok ? kOkay : kSlvErr;
    }
  }

  // Handshakes at the rising edge that ends this cycle (the design was evaluated with
  // this cycle's inputs, so its valid/ready outputs are current).
  template <class Top>
  void sample(const Top& t) {
    if (t.m_axi_arvalid && t.m_axi_arready) {
      reads_.push_back(Burst{t.m_axi_araddr, uint32_t(t.m_axi_arlen) + 1u, uint32_t(t.m_axi_arid),
                             now_ + timing_.read_latency, true});
      check_burst("read", t.m_axi_araddr, t.m_axi_arlen, t.m_axi_arsize, t.m_axi_arburst);
    }
    if (t.m_axi_rvalid && t.m_axi_rready) {
      Burst& b = reads_.front();
      b.addr += bus_bytes_;
      bytes_read_ += bus_bytes_;
      if (--b.beats_left == 0) reads_.pop_front();
    }
    if (t.m_axi_awvalid && t.m_axi_awready) {
      writes_.push_back(Burst{t.m_axi_awaddr, uint32_t(t.m_axi_awlen) + 1u, uint32_t(t.m_axi_awid), 0, true});
      check_burst("write", t.m_axi_awaddr, t.m_axi_awlen, t.m_axi_awsize, t.m_axi_awburst);
    }
    if (t.m_axi_wvalid && t.m_axi_wready) write_beat(t);
    if (t.m_axi_bvalid && t.m_axi_bready) responses_.pop_front();
    ++now_;
  }

 private:
  static constexpr uint32_t kMaxBusBytes = 64;  // 512-bit bus, the widest the config allows
  static constexpr uint32_t kOkay = 0;
  static constexpr uint32_t kSlvErr = 2;

  struct Burst {
    uint64_t addr;  // byte address of the next beat (bus-aligned)
    uint32_t beats_left;
    uint32_t id;
    uint64_t ready_at;  // reads: first cycle the next beat may be valid
    bool ok;
  };
  struct Response {
    uint64_t ready_at;
    uint32_t id;
    bool ok;
  };

  bool in_range(uint64_t addr) const { return addr + bus_bytes_ <= mem_.size(); }

  bool read_beat(uint64_t addr, uint8_t* beat) {
    if (!in_range(addr)) {
      fail("read", addr);
      return false;
    }
    std::memcpy(beat, &mem_[addr], bus_bytes_);
    return true;
  }

  template <class Top>
  void write_beat(const Top& t) {
    Burst& b = writes_.front();
    uint8_t beat[kMaxBusBytes];
    signal_to_bytes(t.m_axi_wdata, beat, bus_bytes_);
    if (in_range(b.addr)) {
      for (uint32_t k = 0; k < bus_bytes_; ++k) {
        if (strobe_bit(t.m_axi_wstrb, k)) {
          mem_[b.addr + k] = beat[k];
          ++bytes_written_;
        }
      }
    } else {
      fail("write", b.addr);
      b.ok = false;
    }
    const bool last = b.beats_left == 1;
    if (bool(t.m_axi_wlast) != last) {
      error_ = "AXI protocol: WLAST " + std::string(t.m_axi_wlast ? "set before" : "missing on") +
               " the last beat of the write burst to 0x" + hex(b.addr);
    }
    b.addr += bus_bytes_;
    if (--b.beats_left == 0) {
      responses_.push_back(Response{now_ + timing_.write_latency, b.id, b.ok});
      writes_.pop_front();
    }
  }

  void check_burst(const char* dir, uint64_t addr, uint32_t len, uint32_t size, uint32_t burst) {
    if (!error_.empty()) return;
    if ((1u << size) != bus_bytes_ || burst != 1 || addr % bus_bytes_) {
      error_ = std::string("AXI protocol: ") + dir + " burst to 0x" + hex(addr) + " (len " +
               std::to_string(len + 1) + ", size " + std::to_string(size) + ", burst " +
               std::to_string(burst) + ") must be INCR, full bus width and bus-aligned";
    } else if ((addr & ~uint64_t(4095)) != ((addr + uint64_t(len) * bus_bytes_) & ~uint64_t(4095))) {
      error_ = std::string("AXI protocol: ") + dir + " burst to 0x" + hex(addr) + " of " +
               std::to_string(len + 1) + " beats crosses a 4 KiB boundary";
    }
  }

  void fail(const char* dir, uint64_t addr) {
    if (error_.empty()) {
      error_ = std::string("DRAM ") + dir + " of the beat at byte address 0x" + hex(addr) +
               " lies outside the " + std::to_string(mem_.size()) + "-byte DRAM image";
    }
  }

  static std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
  }

  uint32_t bus_bytes_;
  DramTiming timing_;
  std::vector<uint8_t> mem_;
  std::deque<Burst> reads_, writes_;
  std::deque<Response> responses_;
  std::string error_;
  uint64_t now_ = 0;
  uint64_t bytes_read_ = 0, bytes_written_ = 0;
};

}  // namespace vdla
