// The simulated ULX3S: the whole SoC (UART bridge, LiteDRAM controller with the SDRAM chip model,
// accelerator) under Verilator, its UART pins wired to a pseudo-terminal that stands for the
// board's USB serial port. The host driver opens the pty's name exactly as it opens /dev/ttyUSB0.
//
// The UART is simulated bit by bit: bytes the host writes to the pty are shifted into the SoC's
// RX pin at the configured baud (clock cycles per bit), and the SoC's TX pin is sampled mid-bit
// and decoded into bytes for the host. So the SoC's own RS232 PHY is what receives and sends.
//
// Arguments: CYCLES_PER_BIT [LINK]. Prints "PTY <slave path>" on stdout once ready; with LINK, also
// makes LINK a symlink to the slave. Ends on SIGTERM/SIGINT, or when its parent process dies.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <termios.h>
#include <unistd.h>

#include <deque>
#include <memory>
#include <string>

#include "Vvdla_ulx3s_soc.h"
#include "verilated.h"

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int) { g_stop = 1; }

namespace {

// Host -> SoC: shifts bytes out on the SoC's RX pin, 8N1, LSB first.
struct UartTx {
  double cycles_per_bit;
  std::deque<unsigned char> queue;
  int bit = -1;  // -1 idle, 0 start, 1..8 data, 9 stop
  double left = 0;
  unsigned char cur = 0;
  int level() const {
    if (bit < 0) return 1;
    if (bit == 0) return 0;
    if (bit <= 8) return (cur >> (bit - 1)) & 1;
    return 1;
  }
  bool busy() const { return bit >= 0 || !queue.empty(); }
  void step() {
    if (bit < 0) {
      if (queue.empty()) return;
      cur = queue.front();
      queue.pop_front();
      bit = 0;
      left += cycles_per_bit;
    }
    left -= 1.0;
    if (left <= 0) {
      bit = bit >= 9 ? -1 : bit + 1;
      if (bit >= 0) left += cycles_per_bit;
      else left = 0;
    }
  }
};

// SoC -> host: samples the SoC's TX pin in the middle of each bit.
struct UartRx {
  double cycles_per_bit;
  int bit = -1;
  double wait = 0;
  unsigned char cur = 0;
  int last = 1;
  // Returns a completed byte (0..255) or -1.
  int step(int pin) {
    int out = -1;
    if (bit < 0) {
      if (last == 1 && pin == 0) {  // start bit's falling edge: sample mid data bit 0 next
        bit = 0;
        wait = 1.5 * cycles_per_bit;
        cur = 0;
      }
    } else {
      wait -= 1.0;
      if (wait <= 0) {
        if (bit < 8) {
          cur |= (pin & 1) << bit;
          bit++;
          wait += cycles_per_bit;
        } else {  // the stop bit: a framing error would show as 0 here; the host's checks catch it
          out = cur;
          bit = -1;
        }
      }
    }
    last = pin;
    return out;
  }
};

int open_pty(std::string& name) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return -1;
  name = ptsname(master);
  // Raw mode on the line: no echo, no CR/LF translation, 8-bit clean.
  int slave = open(name.c_str(), O_RDWR | O_NOCTTY);
  if (slave < 0) return -1;
  struct termios tio;
  tcgetattr(slave, &tio);
  cfmakeraw(&tio);
  tcsetattr(slave, TCSANOW, &tio);
  // Keep the slave open ourselves: otherwise the master reads EIO whenever no host has it open.
  fcntl(master, F_SETFL, O_NONBLOCK);
  return master;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CYCLES_PER_BIT [LINK]\n", argv[0]);
    return 2;
  }
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  const double cpb = atof(argv[1]);
  if (!(cpb >= 4.0)) {
    fprintf(stderr, "CYCLES_PER_BIT must be at least 4, got %s\n", argv[1]);
    return 2;
  }
  std::string name;
  int master = open_pty(name);
  if (master < 0) {
    perror("pty");
    return 1;
  }
  if (argc > 2) {
    unlink(argv[2]);
    if (symlink(name.c_str(), argv[2]) != 0) {
      perror("symlink");
      return 1;
    }
  }

  auto ctx = std::make_unique<VerilatedContext>();
  ctx->commandArgs(argc, argv);
  auto top = std::make_unique<Vvdla_ulx3s_soc>(ctx.get());
  UartTx tx{cpb};
  UartRx rx{cpb};
  top->serial_rx = 1;
  top->sys_rst = 1;
  for (int i = 0; i < 32; i++) {
    top->sys_clk = 0;
    top->eval();
    top->sys_clk = 1;
    top->eval();
  }
  top->sys_rst = 0;
  printf("PTY %s\n", name.c_str());
  fflush(stdout);

  std::string out;
  unsigned char buf[4096];
  unsigned long long cycle = 0, quiet = 0;
  while (!g_stop) {
    top->serial_rx = tx.level();
    top->sys_clk = 0;
    top->eval();
    top->sys_clk = 1;
    top->eval();
    cycle++;
    tx.step();
    int byte = rx.step(top->serial_tx);
    if (byte >= 0) out.push_back((char)byte);
    const bool active = tx.busy() || rx.bit >= 0;
    quiet = active ? 0 : quiet + 1;
    if ((cycle & 255) == 0 || (!out.empty() && !active)) {
      if (!out.empty()) {
        ssize_t n = write(master, out.data(), out.size());
        if (n > 0) out.erase(0, (size_t)n);
      }
      if (tx.queue.size() < 64) {
        ssize_t n = read(master, buf, sizeof buf);
        for (ssize_t i = 0; i < n; i++) tx.queue.push_back(buf[i]);
        if (n > 0) quiet = 0;
      }
      // A long quiet line: the host is idle (a run's host polls STATUS without pause, so the line
      // is never quiet that long while the accelerator works). Block on the pty, waking every
      // 20 ms for a few cycles, so an idle simulation costs no core; the SoC's clock pauses
      // meanwhile, as if time stood still.
      if (quiet > (1u << 22) && out.empty()) {
        struct pollfd p = {master, POLLIN, 0};
        poll(&p, 1, 20);
      }
    }
  }
  top->final();
  return 0;
}
