/*
 * LD_AUDIT library: the AVX2 shim's patch mode, for hosts without CPUID faulting (most VMs).
 *
 * The launcher (bench/avx2_host/run.py) finds, offline with objdump, every CPUID and XGETBV
 * instruction of the libraries that choose kernels by them (onnxruntime's MLAS, LLVM, torch,
 * numpy) and writes a table (bench/avx2_host/sites.py): per file its device and inode, then each
 * site's linked address and kind. The dynamic linker calls la_objopen when it has mapped an
 * object, before its relocations and constructors run; for a listed object this library then
 * rewrites each site to ud2 (cpuid 0F A2 -> 0F 0B; xgetbv 0F 01 D0 -> 0F 0B 90), so none of that
 * object's code can read the CPU directly. Executing a rewritten site raises SIGILL; the handler
 * runs the real instruction and answers as an AVX2-only CPU (cpuid_mask.h, the same mask as the
 * faulting mode), then resumes after the instruction. A SIGILL anywhere else is a real one: the
 * process dies of it (or the handler installed before ours gets it) as without the shim.
 *
 * VDLA_AVX2_HOST_SITES names the table; VDLA_AVX2_HOST_TRACE, if set, names a file to which every
 * patched object and the first answer of each site are appended (the evidence that a library read
 * the masked CPU, and what it was told), one line per site:
 *   <library> cpuid <leaf>.<subleaf> at +0x<address> real <eax ebx ecx edx> told <eax ebx ecx edx>
 *   <library> xgetbv <index> at +0x<address> real <eax 0 0 edx> told <eax 0 0 edx>
 * and at exit, per object, "hits <library> <count> at <k> of <n> sites, busiest +0x<address> <count>".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#include "cpuid_mask.h"

enum { KIND_CPUID = 0, KIND_XGETBV = 1 };
static const unsigned site_len[2] = {2, 3};

/* One file of the table: its identity and its sites (linked addresses, ascending). */
struct listed {
    dev_t dev;
    ino_t ino;
    char *path;
    size_t n;
    uintptr_t *vaddr;
    uint8_t *kind;
};

/* One patched object as mapped in this process: what the SIGILL handler searches. */
struct patched {
    uintptr_t lo, hi;       /* first and last site address */
    const struct listed *file;
    uintptr_t base;         /* l_addr: run-time address = base + linked address */
    uint8_t *traced;        /* per site: its first answer was traced */
    uint64_t *hits;         /* per site: how often it ran (the trace's summary at exit) */
};

#define MAX_PATCHED 512
static struct listed *files;
static size_t n_files;
static struct patched patched[MAX_PATCHED];
static size_t n_patched;    /* published with release after the entry is complete */
static int trace_fd = -1;
static struct sigaction previous;  /* the SIGILL action before ours: real SIGILLs go there */

static void die(const char *what, const char *detail) {
    fprintf(stderr, "avx2_host (patch mode): %s%s\n", what, detail ? detail : "");
    _exit(3);
}

/* ---- trace output: async-signal-safe (write(2) and hand formatting only) ---- */

static size_t put_str(char *buf, size_t at, size_t cap, const char *s) {
    while (*s && at + 1 < cap) buf[at++] = *s++;
    return at;
}

static size_t put_hex(char *buf, size_t at, size_t cap, uint64_t v, int digits) {
    for (int i = digits - 1; i >= 0 && at + 1 < cap; i--) buf[at++] = "0123456789abcdef"[(v >> (4 * i)) & 0xf];
    return at;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void trace_answer(const struct patched *p, size_t i, uint32_t leaf, uint32_t sub, const uint32_t real[4],
                         const uint32_t told[4]) {
    char line[400];
    size_t n = 0;
    n = put_str(line, n, sizeof line, base_name(p->file->path));
    n = put_str(line, n, sizeof line, p->file->kind[i] == KIND_CPUID ? " cpuid " : " xgetbv ");
    n = put_hex(line, n, sizeof line, leaf, 8);
    n = put_str(line, n, sizeof line, p->file->kind[i] == KIND_CPUID ? "." : "");
    if (p->file->kind[i] == KIND_CPUID) n = put_hex(line, n, sizeof line, sub, 8);
    n = put_str(line, n, sizeof line, " at +0x");
    n = put_hex(line, n, sizeof line, p->file->vaddr[i], 8);
    n = put_str(line, n, sizeof line, " real");
    for (int r = 0; r < 4; r++) {
        n = put_str(line, n, sizeof line, " ");
        n = put_hex(line, n, sizeof line, real[r], 8);
    }
    n = put_str(line, n, sizeof line, " told");
    for (int r = 0; r < 4; r++) {
        n = put_str(line, n, sizeof line, " ");
        n = put_hex(line, n, sizeof line, told[r], 8);
    }
    n = put_str(line, n, sizeof line, "\n");
    ssize_t w = write(trace_fd, line, n);
    (void)w;
}

/* ---- the SIGILL handler ---- */

static void real_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static uint64_t real_xgetbv(uint32_t index) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(index));
    return ((uint64_t)hi << 32) | lo;
}

/* The patched site at pc, or -1: the object by address range, then a binary search of its sites. */
static long find_site(uintptr_t pc, const struct patched **out) {
    size_t count = __atomic_load_n(&n_patched, __ATOMIC_ACQUIRE);
    for (size_t o = 0; o < count; o++) {
        const struct patched *p = &patched[o];
        if (pc < p->lo || pc > p->hi) continue;
        size_t lo = 0, hi = p->file->n;
        uintptr_t want = pc - p->base;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (p->file->vaddr[mid] < want) lo = mid + 1;
            else hi = mid;
        }
        if (lo < p->file->n && p->file->vaddr[lo] == want) {
            *out = p;
            return (long)lo;
        }
    }
    return -1;
}

static void on_sigill(int sig, siginfo_t *info, void *ctx) {
    ucontext_t *uc = (ucontext_t *)ctx;
    greg_t *g = uc->uc_mcontext.gregs;
    const struct patched *p = NULL;
    long i = find_site((uintptr_t)g[REG_RIP], &p);
    if (i < 0) {
        /* A real illegal instruction. Hand it to the action before ours; with the default action,
         * returning re-executes the instruction and the process dies of SIGILL at that address. */
        if (previous.sa_flags & SA_SIGINFO) {
            previous.sa_sigaction(sig, info, ctx);
        } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
            previous.sa_handler(sig);
        } else {
            signal(SIGILL, SIG_DFL);
        }
        return;
    }
    uint32_t real[4], told[4], leaf = (uint32_t)g[REG_RAX], sub = (uint32_t)g[REG_RCX];
    if (p->file->kind[i] == KIND_CPUID) {
        real_cpuid(leaf, sub, real);
        memcpy(told, real, sizeof told);
        avx2_mask_cpuid(leaf, sub, told);
        g[REG_RAX] = told[0];
        g[REG_RBX] = told[1];
        g[REG_RCX] = told[2];
        g[REG_RDX] = told[3];
    } else {
        uint64_t xcr = real_xgetbv(leaf = (uint32_t)g[REG_RCX]);
        real[0] = (uint32_t)xcr, real[1] = 0, real[2] = 0, real[3] = (uint32_t)(xcr >> 32);
        if (leaf == 0 || leaf == 1) xcr &= ~AVX2_XCR0_HIDDEN;  /* XCR0 and XINUSE: same components */
        told[0] = (uint32_t)xcr, told[1] = 0, told[2] = 0, told[3] = (uint32_t)(xcr >> 32);
        g[REG_RAX] = told[0];
        g[REG_RDX] = told[3];
    }
    g[REG_RIP] += site_len[p->file->kind[i]];
    __atomic_fetch_add(&p->hits[i], 1, __ATOMIC_RELAXED);
    if (trace_fd >= 0 && !__atomic_exchange_n(&p->traced[i], 1, __ATOMIC_RELAXED))
        trace_answer(p, (size_t)i, leaf, sub, real, told);
}

/* Ours again if something replaced it; what replaced it then gets the real SIGILLs. */
static void keep_handler(const char *when) {
    struct sigaction now, sa;
    sigaction(SIGILL, NULL, &now);
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigill) return;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigill;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGILL, &sa, &previous);
    if (trace_fd >= 0 && when) dprintf(trace_fd, "SIGILL handler was replaced, reinstalled (%s)\n", when);
}

/* ---- the table ---- */

static void read_table(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) die("cannot read the CPUID site table ", path);
    char line[4096];
    size_t cap_files = 0, cap_sites = 0;
    struct listed *cur = NULL;
    while (fgets(line, sizeof line, f)) {
        unsigned long long dev, ino, vaddr;
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (line[0] == 'O') {
            int off = 0;
            if (sscanf(line, "O %llu %llu %n", &dev, &ino, &off) != 2 || off == 0) die("malformed table line: ", line);
            if (n_files == cap_files) {
                cap_files = cap_files ? 2 * cap_files : 16;
                files = realloc(files, cap_files * sizeof *files);
                if (!files) die("out of memory", NULL);
            }
            cur = &files[n_files++];
            memset(cur, 0, sizeof *cur);
            cur->dev = (dev_t)dev, cur->ino = (ino_t)ino, cur->path = strdup(line + off);
            cap_sites = 0;
        } else if ((line[0] == 'C' || line[0] == 'X') && cur && sscanf(line + 1, " %llx", &vaddr) == 1) {
            if (cur->n == cap_sites) {
                cap_sites = cap_sites ? 2 * cap_sites : 64;
                cur->vaddr = realloc(cur->vaddr, cap_sites * sizeof *cur->vaddr);
                cur->kind = realloc(cur->kind, cap_sites);
                if (!cur->vaddr || !cur->kind) die("out of memory", NULL);
            }
            if (cur->n && cur->vaddr[cur->n - 1] >= vaddr) die("table sites not ascending: ", line);
            cur->vaddr[cur->n] = (uintptr_t)vaddr;
            cur->kind[cur->n++] = line[0] == 'C' ? KIND_CPUID : KIND_XGETBV;
        } else if (line[0]) {
            die("malformed table line: ", line);
        }
    }
    fclose(f);
}

__attribute__((constructor)) static void init(void) {
    const char *table = getenv("VDLA_AVX2_HOST_SITES");
    if (!table || !*table) die("VDLA_AVX2_HOST_SITES is not set; start the command through bench/avx2_host/run.py", NULL);
    read_table(table);
    const char *trace = getenv("VDLA_AVX2_HOST_TRACE");
    if (trace && *trace) {
        trace_fd = open(trace, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (trace_fd < 0) die("cannot open the trace file ", trace);
    }
    keep_handler(NULL);
}

/* At a normal exit, per patched object: how many times its sites ran, and the busiest one. A count that
 * grows with the work (not just with start-up) would mean a trap per call in a hot path. */
__attribute__((destructor)) static void summary(void) {
    if (trace_fd < 0) return;
    for (size_t o = 0; o < __atomic_load_n(&n_patched, __ATOMIC_ACQUIRE); o++) {
        const struct patched *p = &patched[o];
        uint64_t total = 0, most = 0;
        size_t hit = 0, busiest = 0;
        for (size_t i = 0; i < p->file->n; i++) {
            uint64_t h = __atomic_load_n(&p->hits[i], __ATOMIC_RELAXED);
            total += h, hit += h > 0;
            if (h > most) most = h, busiest = i;
        }
        dprintf(trace_fd, "hits %s %llu at %zu of %zu sites, busiest +0x%lx %llu\n", base_name(p->file->path),
                (unsigned long long)total, hit, p->file->n, (unsigned long)p->file->vaddr[busiest],
                (unsigned long long)most);
    }
}

/* ---- rtld-audit interface ---- */

unsigned int la_version(unsigned int version) {
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

static void patch(const struct listed *file, struct link_map *map) {
    if (n_patched == MAX_PATCHED) die("too many patched objects for the site table: ", file->path);
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t base = (uintptr_t)map->l_addr;
    for (size_t i = 0; i < file->n; i++) {
        uint8_t *at = (uint8_t *)(base + file->vaddr[i]);
        const int cpuid = file->kind[i] == KIND_CPUID;
        /* The table is keyed by size and mtime; if these bytes differ, it is not this file's. */
        if (at[0] != 0x0f || (cpuid ? at[1] != 0xa2 : (at[1] != 0x01 || at[2] != 0xd0))) {
            char where[64];
            snprintf(where, sizeof where, " +0x%lx", (unsigned long)file->vaddr[i]);
            fprintf(stderr, "avx2_host (patch mode): %s%s is not a %s: the site table is stale; rerun "
                            "bench/avx2_host/run.py (it disassembles changed files again)\n",
                    file->path, where, cpuid ? "cpuid" : "xgetbv");
            _exit(3);
        }
        uintptr_t first = (uintptr_t)at & ~(uintptr_t)(page - 1);
        size_t span = ((uintptr_t)at + site_len[file->kind[i]] - first + page - 1) & ~(uintptr_t)(page - 1);
        if (mprotect((void *)first, span, PROT_READ | PROT_WRITE) != 0)
            die("mprotect of a code page failed: ", strerror(errno));
        at[1] = 0x0b;                  /* 0F 0B: ud2 */
        if (!cpuid) at[2] = 0x90;      /* nop: the handler resumes after the whole xgetbv anyway */
        if (mprotect((void *)first, span, PROT_READ | PROT_EXEC) != 0)
            die("mprotect of a code page failed: ", strerror(errno));
    }
    struct patched *p = &patched[n_patched];
    p->file = file;
    p->base = base;
    p->lo = base + file->vaddr[0];
    p->hi = base + file->vaddr[file->n - 1];
    p->traced = calloc(file->n, 1);
    p->hits = calloc(file->n, sizeof *p->hits);
    if (!p->traced || !p->hits) die("out of memory", NULL);
    __atomic_store_n(&n_patched, n_patched + 1, __ATOMIC_RELEASE);
    if (trace_fd >= 0) dprintf(trace_fd, "patched %zu sites of %s\n", file->n, file->path);
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
    (void)lmid, (void)cookie;
    keep_handler(map->l_name);
    struct stat st;
    if (!map->l_name || !*map->l_name || stat(map->l_name, &st) != 0) return 0;
    for (size_t f = 0; f < n_files; f++)
        if (files[f].dev == st.st_dev && files[f].ino == st.st_ino && files[f].n) {
            patch(&files[f], map);
            break;
        }
    return 0;  /* no symbol-binding callbacks: binding stays as fast as without the audit */
}

void la_preinit(uintptr_t *cookie) {
    (void)cookie;
    keep_handler("before the program's constructors");
}
