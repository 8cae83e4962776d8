/* Harness main: feed the inputs, run the entry once under measurement, print the outputs,
 * compare them with JAX's reference, exit through semihosting with 0 (match) or 1 (mismatch).
 * The model-specific tables come from the generated io.c. */
#include <stdint.h>
#include <string.h>

#include "harness.h"

static int semihost(int op, const void *arg) {
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

static void put(const char *s) { semihost(0x04, s); } /* SYS_WRITE0 */

void harness_exit(int code) {
    /* SYS_EXIT_EXTENDED: ADP_Stopped_ApplicationExit with an exit code QEMU passes on */
    uint32_t block[2] = {0x20026, (uint32_t)code};
    semihost(0x20, block);
    for (;;) {
    }
}

static char *hex32(char *p, uint32_t v) {
    for (int i = 7; i >= 0; i--) *p++ = "0123456789abcdef"[(v >> (4 * i)) & 0xF];
    return p;
}

/* "tag 0x........ 0x........ ...": at most 7 words */
static void put_words(const char *tag, const uint32_t *w, int n) {
    char buf[16 + 7 * 11 + 2], *p = buf;
    while (*tag) *p++ = *tag++;
    for (int i = 0; i < n; i++) {
        *p++ = ' '; *p++ = '0'; *p++ = 'x';
        p = hex32(p, w[i]);
    }
    *p++ = '\n';
    *p = 0;
    put(buf);
}

static void put_line_u32(const char *tag, uint32_t a, uint32_t b) {
    uint32_t w[2] = {a, b};
    put_words(tag, w, 2);
}

#define REG(addr) (*(volatile uint32_t *)(addr))
#define CFSR_STACKING_FAILED ((1u << 4) | (1u << 12)) /* MSTKERR, STKERR: no frame to read */

/* Every fault and the instruction limit's timer IRQ end here, on the handlers' MSP stack.
 * One line for Python to decode against the ELF (specializer/run/faults.py):
 *   fault <exception> <pc> <cfsr> <hfsr> <mmfar> <bfar> <psp>   (pc 0xffffffff: not stacked)
 *   limit <pc> */
void harness_report_fault(const uint32_t *frame) {
    uint32_t ipsr, psp, cfsr = REG(0xE000ED28);
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    __asm__ volatile("mrs %0, psp" : "=r"(psp));
    uint32_t pc = (cfsr & CFSR_STACKING_FAILED) ? 0xFFFFFFFFu : frame[6];
    if ((ipsr & 0x1FF) == 16 + 8) { /* timer0: the instruction limit */
        put_words("limit", &pc, 1);
        harness_exit(4);
    }
    uint32_t w[7] = {ipsr & 0x1FF, pc, cfsr, REG(0xE000ED2C), REG(0xE000ED34), REG(0xE000ED38), psp};
    put_words("fault", w, 7);
    harness_exit(3);
}

/* Outputs as raw little-endian hex words, 8 per line: Python recomputes the errors exactly. */
static void dump(unsigned index, const uint8_t *data, uint32_t bytes) {
    char buf[8 * 9 + 24], *p;
    put_line_u32("output", index, bytes);
    for (uint32_t i = 0; i < bytes;) {
        p = buf;
        for (int w = 0; w < 8 && i < bytes; w++, i += 4) {
            uint32_t v = 0;
            for (uint32_t k = 0; k < 4 && i + k < bytes; k++) v |= (uint32_t)data[i + k] << (8 * k);
            p = hex32(p, v);
            *p++ = ' ';
        }
        p[-1] = '\n';
        *p = 0;
        put(buf);
    }
}

uint32_t harness_entry_sp;
uint32_t harness_ret[4]; /* r0, r1, s0, s1 right after the measured call (startup.S) */

/* Bytes of stack the measured call used: from its entry sp down to the lowest word that no
 * longer holds the paint. A word fn wrote with the paint value itself at its deepest point
 * would hide 4 bytes; nothing else can. */
static uint32_t stack_used(void) {
    const uint32_t *p = __stack_limit, *top = (const uint32_t *)harness_entry_sp;
    while (p < top && *p == HARNESS_STACK_PAINT) p++;
    return (uint32_t)((const uint8_t *)top - (const uint8_t *)p);
}

static float fabs_(float x) { return x < 0 ? -x : x; }

static int matches(const struct harness_tensor *t) {
    for (uint32_t i = 0; i < t->count; i++) {
        if (t->kind == HARNESS_F32) {
            float a = ((const float *)t->model)[i], b = ((const float *)t->data)[i];
            /* NaN where JAX has NaN (any sign: x86 and Arm make default NaNs of opposite sign),
               inf of the same sign where JAX has inf, finite values within tolerance */
            if (b != b) { if (a == a) return 0; continue; }
            if (b - b != 0.0f) { if (a != b) return 0; continue; }
            float scale = fabs_(b) > HARNESS_ATOL ? fabs_(b) : HARNESS_ATOL;
            if (!(fabs_(a - b) <= HARNESS_RTOL * scale)) return 0; /* a NaN or inf fails here */
        } else {
            uint32_t w = t->elem_bytes;
            if (memcmp((const uint8_t *)t->model + i * w, (const uint8_t *)t->data + i * w, w)) return 0;
        }
    }
    return 1;
}

static void load_inputs(unsigned v) {
    for (unsigned i = 0; i < harness_n_inputs; i++) {
        const struct harness_tensor *t = &harness_inputs[v * harness_n_inputs + i];
        memcpy(t->model, t->data, t->count * t->elem_bytes);
    }
}

static int check_outputs(unsigned v) {
    int ok = 1;
    for (unsigned i = 0; i < harness_n_outputs; i++) {
        const struct harness_tensor *t = &harness_outputs[v * harness_n_outputs + i];
        dump(i, (const uint8_t *)t->model, t->count * t->elem_bytes);
        ok &= matches(t);
    }
    return ok;
}

int main(void) {
    load_inputs(0);
    uint32_t calib = harness_measure(harness_empty);
    if (harness_div0_trap) REG(0xE000ED14) |= 1u << 4; /* CCR.DIV_0_TRP: SDIV/UDIV by 0 faults */
    uint32_t ticks = harness_measure(harness_entry_fn);
    uint32_t stack = stack_used(); /* before any deeper call dirties the painted area */
    put_line_u32("counter", ticks, calib);
    /* used, and the free stack there was: equal when fn reached the end of .bss (overflow) */
    put_line_u32("stack", stack, harness_entry_sp - (uint32_t)__stack_limit);
    put_line_u32("return", harness_ret[0], harness_ret[1]);
    put_line_u32("return-fp", harness_ret[2], harness_ret[3]);
    int ok = check_outputs(0);
    /* more input vectors (a checking run): the same program called again on each, as a device
       calls it again, each vector's outputs after a `vector` line */
    for (unsigned v = 1; v < harness_n_vectors; v++) {
        load_inputs(v);
        harness_measure(harness_entry_fn);
        put_line_u32("vector", v, 0);
        ok &= check_outputs(v);
    }
    put(ok ? "result match\n" : "result MISMATCH\n");
    harness_exit(ok ? 0 : 1);
    return 0;
}
