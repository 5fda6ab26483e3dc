/*
 * LD_PRELOAD shim: this process (and its threads and forks) sees an AVX2 + FMA x86 CPU.
 *
 * With CPUID faulting (Linux ARCH_SET_CPUID, the `cpuid_fault` CPU flag), every CPUID instruction
 * traps with SIGSEGV; the handler runs the real CPUID with faulting briefly off, clears the feature
 * bits of everything beyond AVX2 (AVX-512, AMX, AVX-VNNI, AVX-IFMA, AVX-NE-CONVERT, VPCLMULQDQ/GFNI/VAES)
 * and resumes after the instruction. Library dispatchers that read CPUID (onnxruntime's MLAS,
 * PyTorch's cpuinfo/oneDNN, LLVM's host detection) then pick their AVX2 code paths. glibc reads
 * CPUID before this library loads: its own string functions are masked with GLIBC_TUNABLES by the
 * launcher (bench/avx2_host/run.py). The mask is cpuid_mask.h, shared with the patch mode
 * (cpuid_patch.c) for hosts without CPUID faulting. Nothing here changes the silicon: caches, clocks and the
 * micro-architecture are still the host's.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "cpuid_mask.h"

#define ARCH_SET_CPUID 0x1012

static void set_cpuid_faulting(int on) { syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1); }

static void real_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static void on_sigsegv(int sig, siginfo_t *info, void *ctx) {
    ucontext_t *uc = (ucontext_t *)ctx;
    greg_t *g = uc->uc_mcontext.gregs;
    const uint8_t *pc = (const uint8_t *)g[REG_RIP];
    if (pc[0] != 0x0f || pc[1] != 0xa2) {       /* a real segfault: die as without the shim */
        signal(SIGSEGV, SIG_DFL);
        raise(sig);
        return;
    }
    uint32_t r[4];
    uint32_t leaf = (uint32_t)g[REG_RAX], sub = (uint32_t)g[REG_RCX];
    set_cpuid_faulting(0);
    real_cpuid(leaf, sub, r);
    set_cpuid_faulting(1);
    avx2_mask_cpuid(leaf, sub, r);
    g[REG_RAX] = r[0];
    g[REG_RBX] = r[1];
    g[REG_RCX] = r[2];
    g[REG_RDX] = r[3];
    g[REG_RIP] += 2;
    (void)info;
}

__attribute__((constructor)) static void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsegv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
        fprintf(stderr, "cpuid_avx2: this CPU or kernel has no CPUID faulting (ARCH_SET_CPUID); "
                        "run on an AVX2-only host instead\n");
        _exit(3);
    }
}
