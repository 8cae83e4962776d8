/* DSP instructions written as GCC inline asm in the forms CMSIS-NN's arm_nn_compiler.h and
 * CMSIS-Core use (one instruction per asm, "r" operands, "I"/"i" immediates, optional shift or
 * rotation). tests/test_inline_asm.py builds this file twice -- once assembled by clang, once
 * through specializer.inline_asm (asm -> LLVM intrinsics) and llvmlite -- and runs both on QEMU.
 * Output format as intrinsics.c: "values v...", then one line per operation:
 *   unary r[i] = f(v[i]); binary r[i*N+j] = f(v[i], v[j]); ternary r[i*N+j] = f(v[i], v[j], v[(i+j) % N]). */
#include <stdint.h>

#include "io.h"

static const uint32_t V[] = {
    0x00000000u, 0x00000001u, 0xffffffffu, 0x7fffffffu, 0x80000000u, 0x7f7f7f7fu, 0x80808080u,
    0x7fff8000u, 0x80007fffu, 0x0180ff7fu, 0x12345678u, 0xdeadbeefu, 0x00ff00ffu, 0xff00ff00u,
    0x00010002u, 0xfffe8001u,
};
#define N ((int)(sizeof V / sizeof V[0]))
static volatile uint32_t vv[N];

#define R1(NAME, INSN)                                                                                    \
    static uint32_t u_##NAME(uint32_t a)                                                                  \
    {                                                                                                     \
        uint32_t r;                                                                                       \
        __asm(INSN " %0, %1" : "=r"(r) : "r"(a));                                                         \
        return r;                                                                                         \
    }
#define R1_ROR(NAME, INSN, ROT)                                                                           \
    static uint32_t u_##NAME(uint32_t a)                                                                  \
    {                                                                                                     \
        uint32_t r;                                                                                       \
        __asm volatile(INSN " %0, %1, ROR %2" : "=r"(r) : "r"(a), "i"(ROT));                              \
        return r;                                                                                         \
    }
#define SAT(NAME, INSN, BITS)                                                                             \
    static uint32_t u_##NAME(uint32_t a)                                                                  \
    {                                                                                                     \
        uint32_t r;                                                                                       \
        __asm(INSN " %0, %1, %2" : "=r"(r) : "I"(BITS), "r"(a));                                          \
        return r;                                                                                         \
    }
#define R2(NAME, INSN)                                                                                    \
    static uint32_t b_##NAME(uint32_t a, uint32_t b)                                                      \
    {                                                                                                     \
        uint32_t r;                                                                                       \
        __asm volatile(INSN " %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));                                    \
        return r;                                                                                         \
    }
#define R2_SHIFT(NAME, INSN, SHIFT, N_)                                                                   \
    static uint32_t b_##NAME(uint32_t a, uint32_t b)                                                      \
    {                                                                                                     \
        uint32_t r;                                                                                       \
        __asm(INSN " %0, %1, %2, " SHIFT " %3" : "=r"(r) : "r"(a), "r"(b), "I"(N_));                      \
        return r;                                                                                         \
    }
#define R2_ROR(NAME, INSN, ROT)                                                                           \
    static uint32_t b_##NAME(uint32_t a, uint32_t b)                                                      \
    {                                                                                                     \
        uint32_t r;                                                                                       \
        __asm volatile(INSN " %0, %1, %2, ROR %3" : "=r"(r) : "r"(a), "r"(b), "i"(ROT));                  \
        return r;                                                                                         \
    }
#define R3(NAME, INSN)                                                                                    \
    static uint32_t t_##NAME(uint32_t a, uint32_t b, uint32_t c)                                          \
    {                                                                                                     \
        uint32_t r;                                                                                       \
        __asm volatile(INSN " %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(c));                        \
        return r;                                                                                         \
    }

R1(SXTB16, "sxtb16")
R1(UXTB16, "uxtb16")
R1_ROR(SXTB16_RORn_8, "sxtb16", 8)
R1_ROR(SXTB16_RORn_16, "sxtb16", 16)
R1_ROR(SXTB16_RORn_24, "sxtb16", 24)
SAT(SSAT_1, "ssat", 1)
SAT(SSAT_8, "ssat", 8)
SAT(SSAT_16, "ssat", 16)
SAT(USAT_0, "usat", 0)
SAT(USAT_7, "usat", 7)
SAT(USAT_31, "usat", 31)
SAT(SSAT16_8, "ssat16", 8)
SAT(USAT16_7, "usat16", 7)

R2(SXTAB16, "sxtab16")
R2(UXTAB16, "uxtab16")
R2_ROR(SXTAB16_RORn_8, "sxtab16", 8)
R2_ROR(SXTAB16_RORn_24, "sxtab16", 24)
R2(QADD, "qadd")
R2(QSUB, "qsub")
R2(QADD8, "qadd8")
R2(QSUB16, "qsub16")
R2(SADD16, "sadd16")
R2(SHADD8, "shadd8")
R2(UQSUB8, "uqsub8")
R2(USAD8, "usad8")
R2(SMUAD, "smuad")
R2(SMUADX, "smuadx")
R2(SMUSD, "smusd")
R2(SMULBB, "smulbb")
R2(SMULBT, "smulbt")
R2(SMULTB, "smultb")
R2(SMULTT, "smultt")
R2(SMULWB, "smulwb")
R2(PKHBT_0, "pkhbt")
R2_SHIFT(PKHBT_8, "pkhbt", "lsl", 8)
R2_SHIFT(PKHBT_16, "pkhbt", "lsl", 16)
R2_SHIFT(PKHBT_31, "pkhbt", "lsl", 31)
R2(PKHTB_0, "pkhtb")
R2_SHIFT(PKHTB_1, "pkhtb", "asr", 1)
R2_SHIFT(PKHTB_16, "pkhtb", "asr", 16)

R3(SMLAD, "smlad")
R3(SMLADX, "smladx")
R3(SMLSD, "smlsd")
R3(SMLSDX, "smlsdx")
R3(SMLABB, "smlabb")
R3(SMLATT, "smlatt")
R3(SMLAWT, "smlawt")
R3(USADA8, "usada8")

#define ENTRY(P, NAME) {#NAME, P##_##NAME}
#define COUNT(a) ((int)(sizeof a / sizeof a[0]))

static const struct {
    const char *name;
    uint32_t (*f)(uint32_t);
} un[] = {
    ENTRY(u, SXTB16), ENTRY(u, UXTB16), ENTRY(u, SXTB16_RORn_8), ENTRY(u, SXTB16_RORn_16),
    ENTRY(u, SXTB16_RORn_24), ENTRY(u, SSAT_1), ENTRY(u, SSAT_8), ENTRY(u, SSAT_16), ENTRY(u, USAT_0),
    ENTRY(u, USAT_7), ENTRY(u, USAT_31), ENTRY(u, SSAT16_8), ENTRY(u, USAT16_7),
};
static const struct {
    const char *name;
    uint32_t (*f)(uint32_t, uint32_t);
} bin[] = {
    ENTRY(b, SXTAB16), ENTRY(b, UXTAB16), ENTRY(b, SXTAB16_RORn_8), ENTRY(b, SXTAB16_RORn_24),
    ENTRY(b, QADD), ENTRY(b, QSUB), ENTRY(b, QADD8), ENTRY(b, QSUB16), ENTRY(b, SADD16), ENTRY(b, SHADD8),
    ENTRY(b, UQSUB8), ENTRY(b, USAD8), ENTRY(b, SMUAD), ENTRY(b, SMUADX), ENTRY(b, SMUSD), ENTRY(b, SMULBB),
    ENTRY(b, SMULBT), ENTRY(b, SMULTB), ENTRY(b, SMULTT), ENTRY(b, SMULWB), ENTRY(b, PKHBT_0),
    ENTRY(b, PKHBT_8), ENTRY(b, PKHBT_16), ENTRY(b, PKHBT_31), ENTRY(b, PKHTB_0), ENTRY(b, PKHTB_1),
    ENTRY(b, PKHTB_16),
};
static const struct {
    const char *name;
    uint32_t (*f)(uint32_t, uint32_t, uint32_t);
} ter[] = {
    ENTRY(t, SMLAD), ENTRY(t, SMLADX), ENTRY(t, SMLSD), ENTRY(t, SMLSDX), ENTRY(t, SMLABB),
    ENTRY(t, SMLATT), ENTRY(t, SMLAWT), ENTRY(t, USADA8),
};

int main(void)
{
    for (int i = 0; i < N; i++) {
        vv[i] = V[i];
    }
    io_str("values");
    for (int i = 0; i < N; i++) {
        io_hex32(vv[i]);
    }
    io_str("\n");
    for (int u = 0; u < COUNT(un); u++) {
        io_str(un[u].name);
        for (int i = 0; i < N; i++) {
            io_hex32(un[u].f(vv[i]));
        }
        io_str("\n");
    }
    for (int b = 0; b < COUNT(bin); b++) {
        io_str(bin[b].name);
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < N; j++) {
                io_hex32(bin[b].f(vv[i], vv[j]));
            }
        }
        io_str("\n");
    }
    for (int t = 0; t < COUNT(ter); t++) {
        io_str(ter[t].name);
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < N; j++) {
                io_hex32(ter[t].f(vv[i], vv[j], vv[(i + j) % N]));
            }
        }
        io_str("\n");
    }
    io_str("end\n");
    io_flush();
    return 0;
}
