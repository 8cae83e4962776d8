/* Runs every intrinsic of the shim's cmsis_compiler.h on the target over a set of edge-case
 * words and prints one line per intrinsic:
 *   values v0 .. v{N-1}
 *   <NAME> r...   unary: r[i] = f(v[i]); binary: r[i*N+j] = f(v[i], v[j]);
 *                 ternary: r[i*N+j] = f(v[i], v[j], v[(i+j) % N]);
 *                 64-bit accumulate: acc = v[(i+j) % N] << 32 | v[(i+2j+1) % N]
 * tests/test_cmsis_nn.py compares the lines with a Python model of the Arm semantics.
 * The inputs are read through a volatile array, so the operations run on the target. */
#include <stdint.h>

#include "cmsis_compiler.h"
#include "io.h"

static const uint32_t V[] = {
    0x00000000u, 0x00000001u, 0xffffffffu, 0x7fffffffu, 0x80000000u, 0x7f7f7f7fu, 0x80808080u,
    0x7fff8000u, 0x80007fffu, 0x0180ff7fu, 0x12345678u, 0xdeadbeefu, 0x00ff00ffu, 0xff00ff00u,
    0x00010002u, 0xfffe8001u,
};
#define N ((int)(sizeof V / sizeof V[0]))
static volatile uint32_t vv[N];

typedef uint32_t (*un_fn)(uint32_t);
typedef uint32_t (*bin_fn)(uint32_t, uint32_t);
typedef uint32_t (*ter_fn)(uint32_t, uint32_t, uint32_t);
typedef uint64_t (*acc64_fn)(uint32_t, uint32_t, uint64_t);

#define UN(NAME, EXPR) static uint32_t u_##NAME(uint32_t a) { return (uint32_t)(EXPR); }
#define BIN(NAME, EXPR) static uint32_t b_##NAME(uint32_t a, uint32_t b) { return (uint32_t)(EXPR); }
#define TER(NAME, EXPR) static uint32_t t_##NAME(uint32_t a, uint32_t b, uint32_t c) { return (uint32_t)(EXPR); }
#define ACC64(NAME) static uint64_t l_##NAME(uint32_t a, uint32_t b, uint64_t c) { return NAME(a, b, c); }

UN(SXTB16, __SXTB16(a))
UN(UXTB16, __UXTB16(a))
UN(SXTB16_RORn_8, __SXTB16_RORn(a, 8))
UN(SXTB16_RORn_16, __SXTB16_RORn(a, 16))
UN(SXTB16_RORn_24, __SXTB16_RORn(a, 24))
UN(CLZ, __CLZ(a))
UN(REV, __REV(a))
UN(REV16, __REV16(a))
UN(REVSH, (int32_t)__REVSH((int16_t)a))
UN(RBIT, __RBIT(a))
UN(SSAT_1, __SSAT((int32_t)a, 1))
UN(SSAT_8, __SSAT((int32_t)a, 8))
UN(SSAT_16, __SSAT((int32_t)a, 16))
UN(SSAT_31, __SSAT((int32_t)a, 31))
UN(SSAT_32, __SSAT((int32_t)a, 32))
UN(USAT_0, __USAT((int32_t)a, 0))
UN(USAT_7, __USAT((int32_t)a, 7))
UN(USAT_8, __USAT((int32_t)a, 8))
UN(USAT_15, __USAT((int32_t)a, 15))
UN(USAT_31, __USAT((int32_t)a, 31))
UN(SSAT16_1, __SSAT16(a, 1))
UN(SSAT16_8, __SSAT16(a, 8))
UN(SSAT16_16, __SSAT16(a, 16))
UN(USAT16_0, __USAT16(a, 0))
UN(USAT16_7, __USAT16(a, 7))
UN(USAT16_15, __USAT16(a, 15))

BIN(SADD8, __SADD8(a, b))
BIN(QADD8, __QADD8(a, b))
BIN(SHADD8, __SHADD8(a, b))
BIN(UADD8, __UADD8(a, b))
BIN(UQADD8, __UQADD8(a, b))
BIN(UHADD8, __UHADD8(a, b))
BIN(SSUB8, __SSUB8(a, b))
BIN(QSUB8, __QSUB8(a, b))
BIN(SHSUB8, __SHSUB8(a, b))
BIN(USUB8, __USUB8(a, b))
BIN(UQSUB8, __UQSUB8(a, b))
BIN(UHSUB8, __UHSUB8(a, b))
BIN(SADD16, __SADD16(a, b))
BIN(QADD16, __QADD16(a, b))
BIN(SHADD16, __SHADD16(a, b))
BIN(UADD16, __UADD16(a, b))
BIN(UQADD16, __UQADD16(a, b))
BIN(UHADD16, __UHADD16(a, b))
BIN(SSUB16, __SSUB16(a, b))
BIN(QSUB16, __QSUB16(a, b))
BIN(SHSUB16, __SHSUB16(a, b))
BIN(USUB16, __USUB16(a, b))
BIN(UQSUB16, __UQSUB16(a, b))
BIN(UHSUB16, __UHSUB16(a, b))
BIN(SASX, __SASX(a, b))
BIN(QASX, __QASX(a, b))
BIN(SHASX, __SHASX(a, b))
BIN(UASX, __UASX(a, b))
BIN(UQASX, __UQASX(a, b))
BIN(UHASX, __UHASX(a, b))
BIN(SSAX, __SSAX(a, b))
BIN(QSAX, __QSAX(a, b))
BIN(SHSAX, __SHSAX(a, b))
BIN(USAX, __USAX(a, b))
BIN(UQSAX, __UQSAX(a, b))
BIN(UHSAX, __UHSAX(a, b))
BIN(USAD8, __USAD8(a, b))
BIN(SMUAD, __SMUAD(a, b))
BIN(SMUADX, __SMUADX(a, b))
BIN(SMUSD, __SMUSD(a, b))
BIN(SMUSDX, __SMUSDX(a, b))
BIN(SMULBB, __SMULBB(a, b))
BIN(SMULBT, __SMULBT(a, b))
BIN(SMULTB, __SMULTB(a, b))
BIN(SMULTT, __SMULTT(a, b))
BIN(SMULWB, __SMULWB(a, b))
BIN(SMULWT, __SMULWT(a, b))
BIN(SXTAB16, __SXTAB16(a, b))
BIN(UXTAB16, __UXTAB16(a, b))
BIN(SXTB16_RORn, __SXTB16_RORn(a, b))
BIN(SXTAB16_RORn_8, __SXTAB16_RORn(a, b, 8))
BIN(SXTAB16_RORn_24, __SXTAB16_RORn(a, b, 24))
BIN(QADD, __QADD((int32_t)a, (int32_t)b))
BIN(QSUB, __QSUB((int32_t)a, (int32_t)b))
BIN(ROR, __ROR(a, b))
BIN(PKHBT_0, __PKHBT(a, b, 0))
BIN(PKHBT_8, __PKHBT(a, b, 8))
BIN(PKHBT_16, __PKHBT(a, b, 16))
BIN(PKHBT_31, __PKHBT(a, b, 31))
BIN(PKHTB_0, __PKHTB(a, b, 0))
BIN(PKHTB_1, __PKHTB(a, b, 1))
BIN(PKHTB_8, __PKHTB(a, b, 8))
BIN(PKHTB_16, __PKHTB(a, b, 16))

TER(SMLAD, __SMLAD(a, b, c))
TER(SMLADX, __SMLADX(a, b, c))
TER(SMLSD, __SMLSD(a, b, c))
TER(SMLSDX, __SMLSDX(a, b, c))
TER(SMLABB, __SMLABB(a, b, c))
TER(SMLABT, __SMLABT(a, b, c))
TER(SMLATB, __SMLATB(a, b, c))
TER(SMLATT, __SMLATT(a, b, c))
TER(SMLAWB, __SMLAWB(a, b, c))
TER(SMLAWT, __SMLAWT(a, b, c))
TER(USADA8, __USADA8(a, b, c))
TER(SMMLA, __SMMLA((int32_t)a, (int32_t)b, (int32_t)c))
TER(SXTAB16_RORn, __SXTAB16_RORn(a, b, c))

ACC64(__SMLALD)
ACC64(__SMLALDX)
ACC64(__SMLSLD)
ACC64(__SMLSLDX)

#define E(P, NAME) {#NAME, P##_##NAME}
static const struct { const char *name; un_fn f; } un[] = {
    E(u, SXTB16), E(u, UXTB16), E(u, SXTB16_RORn_8), E(u, SXTB16_RORn_16), E(u, SXTB16_RORn_24),
    E(u, CLZ), E(u, REV), E(u, REV16), E(u, REVSH), E(u, RBIT),
    E(u, SSAT_1), E(u, SSAT_8), E(u, SSAT_16), E(u, SSAT_31), E(u, SSAT_32),
    E(u, USAT_0), E(u, USAT_7), E(u, USAT_8), E(u, USAT_15), E(u, USAT_31),
    E(u, SSAT16_1), E(u, SSAT16_8), E(u, SSAT16_16), E(u, USAT16_0), E(u, USAT16_7), E(u, USAT16_15),
};
static const struct { const char *name; bin_fn f; } bin[] = {
    E(b, SADD8), E(b, QADD8), E(b, SHADD8), E(b, UADD8), E(b, UQADD8), E(b, UHADD8),
    E(b, SSUB8), E(b, QSUB8), E(b, SHSUB8), E(b, USUB8), E(b, UQSUB8), E(b, UHSUB8),
    E(b, SADD16), E(b, QADD16), E(b, SHADD16), E(b, UADD16), E(b, UQADD16), E(b, UHADD16),
    E(b, SSUB16), E(b, QSUB16), E(b, SHSUB16), E(b, USUB16), E(b, UQSUB16), E(b, UHSUB16),
    E(b, SASX), E(b, QASX), E(b, SHASX), E(b, UASX), E(b, UQASX), E(b, UHASX),
    E(b, SSAX), E(b, QSAX), E(b, SHSAX), E(b, USAX), E(b, UQSAX), E(b, UHSAX),
    E(b, USAD8), E(b, SMUAD), E(b, SMUADX), E(b, SMUSD), E(b, SMUSDX),
    E(b, SMULBB), E(b, SMULBT), E(b, SMULTB), E(b, SMULTT), E(b, SMULWB), E(b, SMULWT),
    E(b, SXTAB16), E(b, UXTAB16), E(b, SXTB16_RORn), E(b, SXTAB16_RORn_8), E(b, SXTAB16_RORn_24),
    E(b, QADD), E(b, QSUB), E(b, ROR),
    E(b, PKHBT_0), E(b, PKHBT_8), E(b, PKHBT_16), E(b, PKHBT_31),
    E(b, PKHTB_0), E(b, PKHTB_1), E(b, PKHTB_8), E(b, PKHTB_16),
};
static const struct { const char *name; ter_fn f; } ter[] = {
    E(t, SMLAD), E(t, SMLADX), E(t, SMLSD), E(t, SMLSDX), E(t, SMLABB), E(t, SMLABT), E(t, SMLATB),
    E(t, SMLATT), E(t, SMLAWB), E(t, SMLAWT), E(t, USADA8), E(t, SMMLA), E(t, SXTAB16_RORn),
};
static const struct { const char *name; acc64_fn f; } acc64[] = {
    {"SMLALD", l___SMLALD}, {"SMLALDX", l___SMLALDX}, {"SMLSLD", l___SMLSLD}, {"SMLSLDX", l___SMLSLDX},
};
#define COUNT(a) ((int)(sizeof(a) / sizeof(a)[0]))

static const uint8_t bytes[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                  0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87};
static volatile uint32_t offset_sink;

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
    for (int t = 0; t < COUNT(acc64); t++) {
        io_str(acc64[t].name);
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < N; j++) {
                const uint64_t acc = ((uint64_t)vv[(i + j) % N] << 32) | vv[(i + 2 * j + 1) % N];
                io_hex64(acc64[t].f(vv[i], vv[j], acc));
            }
        }
        io_str("\n");
    }
    /* unaligned 16/32-bit reads at every offset of a byte string, and a write at offset 3 */
    io_str("UNALIGNED_UINT32_READ");
    for (int o = 0; o <= 12; o++) {
        offset_sink = (uint32_t)o;
        io_hex32(__UNALIGNED_UINT32_READ(bytes + offset_sink));
    }
    io_str("\nUNALIGNED_UINT16_READ");
    for (int o = 0; o <= 14; o++) {
        offset_sink = (uint32_t)o;
        io_hex32(__UNALIGNED_UINT16_READ(bytes + offset_sink));
    }
    io_str("\n");
    static uint8_t w[8];
    offset_sink = 3;
    __UNALIGNED_UINT32_WRITE(w + offset_sink, 0xa1b2c3d4u);
    io_str("UNALIGNED_UINT32_WRITE");
    for (int o = 0; o < 8; o++) {
        io_hex32(w[o]);
    }
    io_str("\nend\n");
    io_flush();
    return 0;
}
