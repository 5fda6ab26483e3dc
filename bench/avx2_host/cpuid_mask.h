/*
 * What an AVX2-only x86 CPU answers: the feature bits the AVX2 shim clears from CPUID and XCR0.
 * Shared by both of its modes (cpuid_avx2.c, CPUID faulting; cpuid_patch.c, patched instructions)
 * so the two hide exactly the same features.
 */
#ifndef VDLA_CPUID_MASK_H
#define VDLA_CPUID_MASK_H

#include <stdint.h>

/* XCR0 state components an AVX2 CPU lacks: AVX-512 (opmask 5, ZMM_Hi256 6, Hi16_ZMM 7) and the AMX
 * tiles (XTILECFG 17, XTILEDATA 18).  CPUID leaf 0xD sub-leaf 0 EAX reports the same bits. */
#define AVX2_XCR0_HIDDEN (0xe0ull | 0x60000ull)

/* Clear, in the answer r = {EAX, EBX, ECX, EDX} of CPUID(leaf, sub), everything beyond AVX2 + FMA. */
static inline void avx2_mask_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
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
        r[3] &= ~((1u << 4) | (1u << 5) | (1u << 19));
    } else if (leaf == 0xd && sub == 0) {
        r[0] &= ~(uint32_t)AVX2_XCR0_HIDDEN;
    }
}

#endif
