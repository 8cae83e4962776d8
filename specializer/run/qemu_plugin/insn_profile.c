/*
 * insn_profile: a QEMU TCG plugin (plugin API v1, QEMU 7.2) that counts the
 * guest instructions executed between two addresses and profiles the
 * translation blocks (TBs) run in between.
 *
 *   -plugin libinsn_profile.so,start=0xADDR,stop=0xADDR,out=PATH[,ctx=0xLO-0xHI]
 *
 * Counting is off at first.  It turns on when a TB whose first instruction is
 * at `start` begins executing (that TB is counted) and off when a TB whose
 * first instruction is at `stop` begins executing (that TB is not counted).
 * Bit 0 of start/stop (the Thumb bit of a function symbol) is ignored.
 *
 * Per TB, keyed by (vaddr, number of instructions) because icount mode may
 * retranslate a shorter TB at the same address: executions while counting,
 * and "taken": how often the next TB to execute did not start where this TB
 * ends (the last TB counted is compared with the `stop` TB too).  That is a
 * taken branch only if the TB's last instruction is a conditional branch:
 * QEMU also ends TBs that do not end in a branch, and an unconditional branch
 * to the next address is still taken.  cycles.py decides from the
 * instruction; this count answers "was the conditional branch taken".
 *
 * Instruction sizes come from the first halfword (Thumb: 0b11101, 0b11110,
 * 0b11111 in its top five bits start a 32-bit instruction).  QEMU 7.2 reports
 * the last instruction before a 32-bit instruction crossing a 1 KiB page 2
 * bytes too large (its translator peeks at the next halfword, and the plugin
 * API counts those bytes), which would misplace the TB's end.
 *
 * At exit, `out` gets (TBs with execs > 0, sorted by vaddr then ninsns):
 *
 *   insns <total counted instructions>
 *   taken <total taken branches>
 *   tb <vaddr hex> <ninsns> <execs> <taken>
 *   i <vaddr hex> <size> <disassembly>
 *   ...
 *
 * With ctx=0xLO-0xHI (the measured function's code), every execution is also
 * counted per *context*: the last TB run that lies in [LO, HI).  Code outside
 * the range (a function the measured one called, and what that called) runs in
 * the context of the TB whose last instruction made the call, so one library
 * function called from several places of the measured function is counted per
 * place.  Extra lines, after the TBs (pairs with execs > 0, sorted):
 *
 *   c <context TB vaddr> <context ninsns> <TB vaddr> <TB ninsns> <execs> <taken>
 *
 * Single vCPU is assumed (mps2-an386 has one); translation is locked anyway.
 * No glib: the header does not need it, and a small open-addressing table
 * keyed by (vaddr, ninsns) holds the TB records.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

typedef struct {
    uint64_t vaddr;
    uint32_t size;
    char *disas;
} InsnRec;

typedef struct {
    uint64_t vaddr;   /* first instruction */
    uint64_t end;     /* vaddr of the last instruction + its size */
    size_t ninsns;
    uint64_t execs;   /* executions while counting */
    uint64_t taken;   /* times its last instruction branched away */
    InsnRec *insns;
    struct PairRec *last_pair;   /* ctx: the pair of the last context it ran in */
} TbRec;

/* ctx: executions of a TB in one context */
typedef struct PairRec {
    TbRec *ctx;
    TbRec *tb;
    uint64_t execs;
    uint64_t taken;
    struct PairRec *next;        /* all pairs, a list */
} PairRec;

/* open-addressing hash table of TbRec pointers (records never move) */
static TbRec **table;
static size_t table_cap;   /* power of two */
static size_t table_len;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t start_addr, stop_addr;
static char *out_path;

static bool counting;
static TbRec *prev_tb;        /* previously executed TB while counting */
static bool have_ctx;
static uint64_t ctx_lo, ctx_hi;
static TbRec *cur_ctx;        /* ctx: the last TB run inside [ctx_lo, ctx_hi) */
static PairRec *prev_pair;    /* ctx: the pair prev_tb was counted in */
static PairRec *pairs;
static size_t n_pairs;
static uint64_t total_insns;
static uint64_t total_taken;

static inline size_t hash_key(uint64_t vaddr, size_t n)
{
    uint64_t h = vaddr * 0x9E3779B97F4A7C15ull ^ ((uint64_t)n * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 29;
    return (size_t)h;
}

static void table_insert(TbRec *r)
{
    size_t mask = table_cap - 1;
    size_t i = hash_key(r->vaddr, r->ninsns) & mask;
    while (table[i] != NULL) {
        i = (i + 1) & mask;
    }
    table[i] = r;
    table_len++;
}

static void table_grow(void)
{
    TbRec **old = table;
    size_t old_cap = table_cap;
    table_cap = old_cap ? old_cap * 2 : 4096;
    table = calloc(table_cap, sizeof(*table));
    if (table == NULL) {
        fprintf(stderr, "insn_profile: out of memory\n");
        abort();
    }
    table_len = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i] != NULL) {
            table_insert(old[i]);
        }
    }
    free(old);
}

static TbRec *table_find(uint64_t vaddr, size_t n)
{
    if (table_cap == 0) {
        return NULL;
    }
    size_t mask = table_cap - 1;
    size_t i = hash_key(vaddr, n) & mask;
    while (table[i] != NULL) {
        if (table[i]->vaddr == vaddr && table[i]->ninsns == n) {
            return table[i];
        }
        i = (i + 1) & mask;
    }
    return NULL;
}

/* open-addressing table of PairRec pointers keyed by (context, TB) */
static PairRec **pair_table;
static size_t pair_cap;

static inline size_t pair_hash(const TbRec *ctx, const TbRec *tb)
{
    uint64_t h = (uint64_t)(uintptr_t)ctx * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)tb * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    return (size_t)h;
}

static void pair_put(PairRec *p)
{
    size_t mask = pair_cap - 1, i = pair_hash(p->ctx, p->tb) & mask;
    while (pair_table[i] != NULL) {
        i = (i + 1) & mask;
    }
    pair_table[i] = p;
}

static PairRec *pair_get(TbRec *ctx, TbRec *tb)
{
    if (pair_cap) {
        size_t mask = pair_cap - 1, i = pair_hash(ctx, tb) & mask;
        for (; pair_table[i] != NULL; i = (i + 1) & mask) {
            if (pair_table[i]->ctx == ctx && pair_table[i]->tb == tb) {
                return pair_table[i];
            }
        }
    }
    if ((n_pairs + 1) * 2 > pair_cap) {
        pair_cap = pair_cap ? pair_cap * 2 : 4096;
        free(pair_table);
        pair_table = calloc(pair_cap, sizeof(*pair_table));
        if (pair_table == NULL) {
            fprintf(stderr, "insn_profile: out of memory\n");
            abort();
        }
        for (PairRec *q = pairs; q != NULL; q = q->next) {
            pair_put(q);
        }
    }
    PairRec *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        fprintf(stderr, "insn_profile: out of memory\n");
        abort();
    }
    p->ctx = ctx;
    p->tb = tb;
    p->next = pairs;
    pairs = p;
    n_pairs++;
    pair_put(p);
    return p;
}

static void tb_exec(unsigned int vcpu_index, void *userdata)
{
    TbRec *tb = userdata;
    (void)vcpu_index;

    if (!counting) {
        if (tb->vaddr != start_addr) {
            return;
        }
        counting = true;
        prev_tb = NULL;
        prev_pair = NULL;
        cur_ctx = NULL;
    } else if (tb->vaddr == stop_addr) {
        if (prev_tb != NULL && prev_tb->end != tb->vaddr) {
            prev_tb->taken++;
            total_taken++;
            if (prev_pair != NULL) {
                prev_pair->taken++;
            }
        }
        counting = false;
        prev_tb = NULL;
        prev_pair = NULL;
        return;
    }
    if (prev_tb != NULL && prev_tb->end != tb->vaddr) {
        prev_tb->taken++;
        total_taken++;
        if (prev_pair != NULL) {
            prev_pair->taken++;
        }
    }
    tb->execs++;
    total_insns += tb->ninsns;
    prev_tb = tb;
    if (have_ctx) {
        if (tb->vaddr >= ctx_lo && tb->vaddr < ctx_hi) {
            cur_ctx = tb;
        }
        PairRec *p = tb->last_pair;
        if (p == NULL || p->ctx != cur_ctx) {   /* the TB changed context: the pair table */
            p = pair_get(cur_ctx, tb);
            tb->last_pair = p;
        }
        p->execs++;
        prev_pair = p;
    }
}

/* the true size of a Thumb instruction (see the header comment) */
static uint32_t thumb_size(const struct qemu_plugin_insn *insn)
{
    uint32_t size = (uint32_t)qemu_plugin_insn_size(insn);
    const uint8_t *p = qemu_plugin_insn_data(insn);
    if (p == NULL || size < 2) {
        return size;
    }
    uint32_t hw = (uint32_t)p[0] | ((uint32_t)p[1] << 8);
    uint32_t want = (hw >> 11) >= 0x1D ? 4 : 2;
    return want < size ? want : size;
}

static char *clean_disas(char *s)
{
    /* one line, single spaces for tabs: the output is line-oriented */
    if (s == NULL) {
        return strdup("?");
    }
    for (char *p = s; *p; p++) {
        if (*p == '\t' || *p == '\n' || *p == '\r') {
            *p = ' ';
        }
    }
    return s;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
    if (n == 0) {
        return;
    }

    pthread_mutex_lock(&table_lock);
    TbRec *rec = table_find(vaddr, n);
    if (rec == NULL) {
        rec = calloc(1, sizeof(*rec));
        InsnRec *insns = calloc(n, sizeof(*insns));
        if (rec == NULL || insns == NULL) {
            fprintf(stderr, "insn_profile: out of memory\n");
            abort();
        }
        rec->vaddr = vaddr;
        rec->ninsns = n;
        rec->insns = insns;
        for (size_t i = 0; i < n; i++) {
            struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
            insns[i].vaddr = qemu_plugin_insn_vaddr(insn);
            insns[i].size = thumb_size(insn);
            insns[i].disas = clean_disas(qemu_plugin_insn_disas(insn));
        }
        rec->end = insns[n - 1].vaddr + insns[n - 1].size;
        if ((table_len + 1) * 2 > table_cap) {
            table_grow();
        }
        table_insert(rec);
    }
    pthread_mutex_unlock(&table_lock);

    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, rec);
}

static int cmp_tb(const void *a, const void *b)
{
    const TbRec *x = *(TbRec *const *)a;
    const TbRec *y = *(TbRec *const *)b;
    if (x->vaddr != y->vaddr) {
        return x->vaddr < y->vaddr ? -1 : 1;
    }
    if (x->ninsns != y->ninsns) {
        return x->ninsns < y->ninsns ? -1 : 1;
    }
    return 0;
}

static int cmp_pair(const void *a, const void *b)
{
    const PairRec *x = *(PairRec *const *)a;
    const PairRec *y = *(PairRec *const *)b;
    uint64_t xa = x->ctx ? x->ctx->vaddr : 0, ya = y->ctx ? y->ctx->vaddr : 0;
    size_t xn = x->ctx ? x->ctx->ninsns : 0, yn = y->ctx ? y->ctx->ninsns : 0;
    if (xa != ya) {
        return xa < ya ? -1 : 1;
    }
    if (xn != yn) {
        return xn < yn ? -1 : 1;
    }
    if (x->tb->vaddr != y->tb->vaddr) {
        return x->tb->vaddr < y->tb->vaddr ? -1 : 1;
    }
    if (x->tb->ninsns != y->tb->ninsns) {
        return x->tb->ninsns < y->tb->ninsns ? -1 : 1;
    }
    return 0;
}

static void write_profile(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    pthread_mutex_lock(&table_lock);

    size_t n = 0;
    TbRec **list = malloc((table_len ? table_len : 1) * sizeof(*list));
    if (list == NULL) {
        fprintf(stderr, "insn_profile: out of memory\n");
        abort();
    }
    for (size_t i = 0; i < table_cap; i++) {
        if (table[i] != NULL && table[i]->execs > 0) {
            list[n++] = table[i];
        }
    }
    qsort(list, n, sizeof(*list), cmp_tb);

    /* write to PATH.tmp, then rename: never a half-written profile */
    size_t plen = strlen(out_path);
    char *tmp = malloc(plen + 5);
    if (tmp == NULL) {
        abort();
    }
    memcpy(tmp, out_path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "insn_profile: cannot write %s\n", tmp);
    } else {
        fprintf(f, "insns %" PRIu64 "\n", total_insns);
        fprintf(f, "taken %" PRIu64 "\n", total_taken);
        for (size_t k = 0; k < n; k++) {
            TbRec *r = list[k];
            fprintf(f, "tb 0x%" PRIx64 " %zu %" PRIu64 " %" PRIu64 "\n",
                    r->vaddr, r->ninsns, r->execs, r->taken);
            for (size_t i = 0; i < r->ninsns; i++) {
                fprintf(f, "i 0x%" PRIx64 " %" PRIu32 " %s\n",
                        r->insns[i].vaddr, r->insns[i].size, r->insns[i].disas);
            }
        }
        if (have_ctx) {
            PairRec **plist = malloc((n_pairs ? n_pairs : 1) * sizeof(*plist));
            if (plist == NULL) {
                abort();
            }
            size_t m = 0;
            for (PairRec *p = pairs; p != NULL; p = p->next) {
                if (p->execs > 0) {
                    plist[m++] = p;
                }
            }
            qsort(plist, m, sizeof(*plist), cmp_pair);
            for (size_t k = 0; k < m; k++) {
                PairRec *p = plist[k];
                fprintf(f, "c 0x%" PRIx64 " %zu 0x%" PRIx64 " %zu %" PRIu64 " %" PRIu64 "\n",
                        p->ctx ? p->ctx->vaddr : 0, p->ctx ? p->ctx->ninsns : 0,
                        p->tb->vaddr, p->tb->ninsns, p->execs, p->taken);
            }
            free(plist);
        }
        if (fclose(f) != 0 || rename(tmp, out_path) != 0) {
            fprintf(stderr, "insn_profile: cannot write %s\n", out_path);
            remove(tmp);
        }
    }
    free(tmp);
    free(list);
    pthread_mutex_unlock(&table_lock);
}

static bool parse_addr(const char *val, uint64_t *out)
{
    char *end;
    if (*val == '\0') {
        return false;
    }
    unsigned long long v = strtoull(val, &end, 0);
    if (*end != '\0') {
        return false;
    }
    *out = (uint64_t)v & ~(uint64_t)1;   /* drop the Thumb bit */
    return true;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
                                           const qemu_info_t *info,
                                           int argc, char **argv)
{
    (void)info;
    bool have_start = false, have_stop = false;

    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        if (eq == NULL) {
            fprintf(stderr, "insn_profile: bad argument '%s'\n", arg);
            return -1;
        }
        size_t klen = (size_t)(eq - arg);
        const char *val = eq + 1;
        if (klen == 5 && strncmp(arg, "start", 5) == 0) {
            have_start = parse_addr(val, &start_addr);
        } else if (klen == 4 && strncmp(arg, "stop", 4) == 0) {
            have_stop = parse_addr(val, &stop_addr);
        } else if (klen == 3 && strncmp(arg, "ctx", 3) == 0) {
            const char *dash = strchr(val, '-');
            char lo[32];
            size_t llen = dash ? (size_t)(dash - val) : 0;
            if (dash == NULL || llen == 0 || llen >= sizeof(lo)) {
                fprintf(stderr, "insn_profile: bad ctx '%s' (ctx=0xLO-0xHI)\n", val);
                return -1;
            }
            memcpy(lo, val, llen);
            lo[llen] = '\0';
            if (!parse_addr(lo, &ctx_lo) || !parse_addr(dash + 1, &ctx_hi) || ctx_hi <= ctx_lo) {
                fprintf(stderr, "insn_profile: bad ctx '%s' (ctx=0xLO-0xHI)\n", val);
                return -1;
            }
            have_ctx = true;
        } else if (klen == 3 && strncmp(arg, "out", 3) == 0) {
            free(out_path);
            out_path = strdup(val);
        } else {
            fprintf(stderr, "insn_profile: unknown argument '%s'\n", arg);
            return -1;
        }
    }
    if (!have_start || !have_stop || out_path == NULL || *out_path == '\0') {
        fprintf(stderr, "insn_profile: need start=0xADDR,stop=0xADDR,out=PATH\n");
        return -1;
    }

    table_grow();
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, write_profile, NULL);
    return 0;
}
