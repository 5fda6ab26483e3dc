/*
 * LD_PRELOAD shim: this process (and its threads and forks) sees an AVX2 + FMA x86 CPU.
 *
 * With CPUID faulting (Linux ARCH_SET_CPUID, the `cpuid_fault` CPU flag), every CPUID instruction
 * traps with SIGSEGV; the handler runs the real CPUID with faulting briefly off, clears the feature
 * bits of everything beyond AVX2 (AVX-512, AMX, AVX-VNNI, AVX-IFMA, AVX-NE-CONVERT, VPCLMULQDQ/GFNI/VAES)
 * and resumes after the instruction. Library dispatchers that read CPUID (onnxruntime's MLAS,
 * PyTorch's cpuinfo/oneDNN, LLVM's host detection) then pick their AVX2 code paths. glibc reads
 * CPUID before this library loads: its own string functions are masked with GLIBC_TUNABLES by the
 * launcher (bench/avx2_host/run.py). Nothing here changes the silicon: caches, clocks and the
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

#define ARCH_SET_CPUID 0x1012

static void set_cpuid_faulting(int on) { syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1); }

static void real_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static void mask(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    if (leaf == 7 && sub == 0) {
        /* EBX: AVX512F 16, DQ 17, IFMA 21, PF 26, ER 27, CD 28, BW 30, VL 31 */
        r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
                  (1u << 30) | (1u << 31));
        /* ECX: VBMI 1, VBMI2 6, GFNI 8, VAES 9, VPCLMULQDQ 10, VNNI 11, BITALG 12, VPOPCNTDQ 14 */
        r[2] &= ~((1u << 1) | (1u << 6) | (1u << 8) | (1u << 9) | (1u << 10) | (1u << 11) |
                  (1u << 12) | (1u << 14));
        /* EDX: 4VNNIW 2, 4FMAPS 3, VP2INTERSECT 8, AMX-BF16 22, AVX512-FP16 23, AMX-TILE 24, AMX-INT8 25 */
        r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25));
    } else if (leaf == 7 && sub == 1) {
        /* EAX: AVX-VNNI 4, AVX512-BF16 5, AMX-FP16 21, AVX-IFMA 23; EDX: AVX-VNNI-INT8 4, AVX-NE-CONVERT 5, AVX10 19 */
        r[0] &= ~((1u << 4) | (1u << 5) | (1u << 21) | (1u << 23));
        r[3] &= ~((1u << 4) | (1u << 5) | (1u << 19));  /* and AVX10 19 */
    } else if (leaf == 0xd && sub == 0) {
        r[0] &= ~(0xe0u | 0x60000u);            /* XCR0 components: AVX-512 state, AMX tiles */
    }
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
    mask(leaf, sub, r);
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
