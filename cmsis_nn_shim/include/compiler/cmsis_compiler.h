/*
 * cmsis_compiler.h -- the compiler layer CMSIS-DSP and CMSIS-NN expect from CMSIS-Core,
 * written for this project so those libraries build for thumbv7em (Cortex-M4) with clang
 * without CMSIS-Core.
 *
 * Provides:
 *   - the attribute macros (__STATIC_FORCEINLINE, __ALIGNED, __PACKED, __RESTRICT, __WEAK,
 *     __UNALIGNED_UINT32_READ, ...);
 *   - the core intrinsics (__CLZ, __ROR, __SSAT, __USAT, __REV, __RBIT, barriers, ...);
 *   - when the target has the DSP extension (__ARM_FEATURE_DSP == 1, e.g. -mcpu=cortex-m4),
 *     the SIMD/saturating intrinsics (__SMLAD, __SXTB16, __QADD8, __PKHBT, __SMMLA, ...),
 *     with CMSIS-Core's names and types.
 *
 * On clang for Arm every intrinsic maps to a clang builtin (__builtin_arm_*) or to plain C
 * that LLVM selects as the one instruction (PKHBT/PKHTB, SMMLA, ROR); none is inline asm,
 * so LLVM can still optimize, specialize and constant-fold around them. On other compilers
 * (a host build of the plain-C paths) only the attribute macros and the portable core
 * intrinsics are defined; without __ARM_FEATURE_DSP the DSP intrinsics are left undefined,
 * exactly like CMSIS-Core, so CMSIS-DSP's own C fallbacks (dsp/none.h) take over.
 */
#ifndef __CMSIS_COMPILER_H
#define __CMSIS_COMPILER_H

#include <stdint.h>

#if defined(__clang__) && (defined(__arm__) || defined(__thumb__))
#define CMSIS_SHIM_ARM_CLANG 1
#endif
#if defined(__ARM_FEATURE_DSP) && (__ARM_FEATURE_DSP == 1)
#if !defined(CMSIS_SHIM_ARM_CLANG)
#error "cmsis_compiler.h (shim): the DSP intrinsics need clang for an Arm target"
#endif
#define CMSIS_SHIM_DSP 1
#endif

/* ------------------------------------------------------------------ attributes */
#ifndef __ASM
#define __ASM __asm
#endif
#ifndef __INLINE
#define __INLINE inline
#endif
#ifndef __STATIC_INLINE
#define __STATIC_INLINE static inline
#endif
#ifndef __STATIC_FORCEINLINE
#define __STATIC_FORCEINLINE __attribute__((always_inline)) static inline
#endif
#ifndef __NO_RETURN
#define __NO_RETURN __attribute__((__noreturn__))
#endif
#ifndef __USED
#define __USED __attribute__((used))
#endif
#ifndef __WEAK
#define __WEAK __attribute__((weak))
#endif
#ifndef __PACKED
#define __PACKED __attribute__((packed, aligned(1)))
#endif
#ifndef __PACKED_STRUCT
#define __PACKED_STRUCT struct __attribute__((packed, aligned(1)))
#endif
#ifndef __PACKED_UNION
#define __PACKED_UNION union __attribute__((packed, aligned(1)))
#endif
#ifndef __ALIGNED
#define __ALIGNED(x) __attribute__((aligned(x)))
#endif
#ifndef __RESTRICT
#define __RESTRICT __restrict
#endif
#ifndef __COMPILER_BARRIER
#define __COMPILER_BARRIER() __ASM volatile("" ::: "memory")
#endif
#ifndef __NO_INIT
#define __NO_INIT __attribute__((section(".bss.noinit")))
#endif

/* Unaligned accesses, through memcpy so they are well-defined C (one LDR/STR on v7E-M). */
__STATIC_FORCEINLINE uint16_t __cmsis_shim_rd16(const void *addr)
{
    uint16_t v;
    __builtin_memcpy(&v, addr, sizeof v);
    return v;
}
__STATIC_FORCEINLINE uint32_t __cmsis_shim_rd32(const void *addr)
{
    uint32_t v;
    __builtin_memcpy(&v, addr, sizeof v);
    return v;
}
__STATIC_FORCEINLINE void __cmsis_shim_wr16(void *addr, uint16_t v) { __builtin_memcpy(addr, &v, sizeof v); }
__STATIC_FORCEINLINE void __cmsis_shim_wr32(void *addr, uint32_t v) { __builtin_memcpy(addr, &v, sizeof v); }
#ifndef __UNALIGNED_UINT16_READ
#define __UNALIGNED_UINT16_READ(addr) __cmsis_shim_rd16((const void *)(addr))
#endif
#ifndef __UNALIGNED_UINT16_WRITE
#define __UNALIGNED_UINT16_WRITE(addr, val) __cmsis_shim_wr16((void *)(addr), (uint16_t)(val))
#endif
#ifndef __UNALIGNED_UINT32_READ
#define __UNALIGNED_UINT32_READ(addr) __cmsis_shim_rd32((const void *)(addr))
#endif
#ifndef __UNALIGNED_UINT32_WRITE
#define __UNALIGNED_UINT32_WRITE(addr, val) __cmsis_shim_wr32((void *)(addr), (uint32_t)(val))
#endif

/* ------------------------------------------------------------------ core intrinsics */
#if defined(CMSIS_SHIM_ARM_CLANG)
#define __NOP() __builtin_arm_nop()
#define __WFI() __builtin_arm_wfi()
#define __WFE() __builtin_arm_wfe()
#define __SEV() __builtin_arm_sev()
#define __ISB() __builtin_arm_isb(0xF)
#define __DSB() __builtin_arm_dsb(0xF)
#define __DMB() __builtin_arm_dmb(0xF)
#define __BKPT(value) __ASM volatile("bkpt " #value)
#endif

/* Count leading zeros; 32 for 0 (the CLZ instruction's result, unlike __builtin_clz). */
__STATIC_FORCEINLINE uint8_t __CLZ(uint32_t value)
{
    if (value == 0U) {
        return 32U;
    }
    return (uint8_t)__builtin_clz(value);
}

/* Rotate right by op2 mod 32. */
__STATIC_FORCEINLINE uint32_t __ROR(uint32_t op1, uint32_t op2)
{
    op2 &= 31U;
    return op2 == 0U ? op1 : (op1 >> op2) | (op1 << (32U - op2));
}

__STATIC_FORCEINLINE uint32_t __REV(uint32_t value) { return __builtin_bswap32(value); }

/* Byte-reverse each halfword. */
__STATIC_FORCEINLINE uint32_t __REV16(uint32_t value)
{
    return ((value & 0xFF00FF00U) >> 8) | ((value & 0x00FF00FFU) << 8);
}

/* Byte-reverse the low halfword and sign-extend it. */
__STATIC_FORCEINLINE int16_t __REVSH(int16_t value)
{
    return (int16_t)__builtin_bswap16((uint16_t)value);
}

__STATIC_FORCEINLINE uint32_t __RBIT(uint32_t value)
{
#if defined(CMSIS_SHIM_ARM_CLANG)
    return __builtin_arm_rbit(value);
#else
    uint32_t r = 0U;
    for (int i = 0; i < 32; i++) {
        r = (r << 1) | ((value >> i) & 1U);
    }
    return r;
#endif
}

#if defined(CMSIS_SHIM_ARM_CLANG)
/* Signed saturate to `sat` bits (1..32) / unsigned saturate to `sat` bits (0..31);
   `sat` must be a constant, as for the instruction. */
#define __SSAT(ARG1, ARG2) __builtin_arm_ssat((int32_t)(ARG1), (ARG2))
#define __USAT(ARG1, ARG2) __builtin_arm_usat((int32_t)(ARG1), (ARG2))
#else
__STATIC_FORCEINLINE int32_t __SSAT(int32_t val, uint32_t sat)
{
    if (sat >= 1U && sat <= 32U) {
        const int32_t max = (int32_t)((1U << (sat - 1U)) - 1U);
        const int32_t min = -1 - max;
        if (val > max) {
            return max;
        }
        if (val < min) {
            return min;
        }
    }
    return val;
}
__STATIC_FORCEINLINE uint32_t __USAT(int32_t val, uint32_t sat)
{
    if (sat <= 31U) {
        const uint32_t max = (1U << sat) - 1U;
        if (val > (int32_t)max) {
            return max;
        }
        if (val < 0) {
            return 0U;
        }
    }
    return (uint32_t)val;
}
#endif

/* ------------------------------------------------------------------ DSP / SIMD intrinsics */
#if defined(CMSIS_SHIM_DSP)

#define __CMSIS_SHIM_U2(NAME, BUILTIN)                                                             \
    __STATIC_FORCEINLINE uint32_t NAME(uint32_t op1, uint32_t op2)                               \
    {                                                                                            \
        return (uint32_t)BUILTIN((int)op1, (int)op2);                                            \
    }
#define __CMSIS_SHIM_U3(NAME, BUILTIN)                                                             \
    __STATIC_FORCEINLINE uint32_t NAME(uint32_t op1, uint32_t op2, uint32_t op3)                 \
    {                                                                                            \
        return (uint32_t)BUILTIN((int)op1, (int)op2, (int)op3);                                  \
    }
#define __CMSIS_SHIM_U64(NAME, BUILTIN)                                                            \
    __STATIC_FORCEINLINE uint64_t NAME(uint32_t op1, uint32_t op2, uint64_t acc)                 \
    {                                                                                            \
        return (uint64_t)BUILTIN((int)op1, (int)op2, (long long)acc);                            \
    }

/* lane-wise 8-bit: wrapping (S/U), saturating (Q/UQ), halving (SH/UH) */
__CMSIS_SHIM_U2(__SADD8, __builtin_arm_sadd8)
__CMSIS_SHIM_U2(__QADD8, __builtin_arm_qadd8)
__CMSIS_SHIM_U2(__SHADD8, __builtin_arm_shadd8)
__CMSIS_SHIM_U2(__UADD8, __builtin_arm_uadd8)
__CMSIS_SHIM_U2(__UQADD8, __builtin_arm_uqadd8)
__CMSIS_SHIM_U2(__UHADD8, __builtin_arm_uhadd8)
__CMSIS_SHIM_U2(__SSUB8, __builtin_arm_ssub8)
__CMSIS_SHIM_U2(__QSUB8, __builtin_arm_qsub8)
__CMSIS_SHIM_U2(__SHSUB8, __builtin_arm_shsub8)
__CMSIS_SHIM_U2(__USUB8, __builtin_arm_usub8)
__CMSIS_SHIM_U2(__UQSUB8, __builtin_arm_uqsub8)
__CMSIS_SHIM_U2(__UHSUB8, __builtin_arm_uhsub8)
/* lane-wise 16-bit */
__CMSIS_SHIM_U2(__SADD16, __builtin_arm_sadd16)
__CMSIS_SHIM_U2(__QADD16, __builtin_arm_qadd16)
__CMSIS_SHIM_U2(__SHADD16, __builtin_arm_shadd16)
__CMSIS_SHIM_U2(__UADD16, __builtin_arm_uadd16)
__CMSIS_SHIM_U2(__UQADD16, __builtin_arm_uqadd16)
__CMSIS_SHIM_U2(__UHADD16, __builtin_arm_uhadd16)
__CMSIS_SHIM_U2(__SSUB16, __builtin_arm_ssub16)
__CMSIS_SHIM_U2(__QSUB16, __builtin_arm_qsub16)
__CMSIS_SHIM_U2(__SHSUB16, __builtin_arm_shsub16)
__CMSIS_SHIM_U2(__USUB16, __builtin_arm_usub16)
__CMSIS_SHIM_U2(__UQSUB16, __builtin_arm_uqsub16)
__CMSIS_SHIM_U2(__UHSUB16, __builtin_arm_uhsub16)
/* add/subtract with exchange */
__CMSIS_SHIM_U2(__SASX, __builtin_arm_sasx)
__CMSIS_SHIM_U2(__QASX, __builtin_arm_qasx)
__CMSIS_SHIM_U2(__SHASX, __builtin_arm_shasx)
__CMSIS_SHIM_U2(__UASX, __builtin_arm_uasx)
__CMSIS_SHIM_U2(__UQASX, __builtin_arm_uqasx)
__CMSIS_SHIM_U2(__UHASX, __builtin_arm_uhasx)
__CMSIS_SHIM_U2(__SSAX, __builtin_arm_ssax)
__CMSIS_SHIM_U2(__QSAX, __builtin_arm_qsax)
__CMSIS_SHIM_U2(__SHSAX, __builtin_arm_shsax)
__CMSIS_SHIM_U2(__USAX, __builtin_arm_usax)
__CMSIS_SHIM_U2(__UQSAX, __builtin_arm_uqsax)
__CMSIS_SHIM_U2(__UHSAX, __builtin_arm_uhsax)
/* sum of absolute differences, select by GE flags */
__STATIC_FORCEINLINE uint32_t __USAD8(uint32_t op1, uint32_t op2) { return __builtin_arm_usad8(op1, op2); }
__STATIC_FORCEINLINE uint32_t __USADA8(uint32_t op1, uint32_t op2, uint32_t op3)
{
    return __builtin_arm_usada8(op1, op2, op3);
}
__CMSIS_SHIM_U2(__SEL, __builtin_arm_sel)
/* dual 16-bit multiplies */
__CMSIS_SHIM_U2(__SMUAD, __builtin_arm_smuad)
__CMSIS_SHIM_U2(__SMUADX, __builtin_arm_smuadx)
__CMSIS_SHIM_U2(__SMUSD, __builtin_arm_smusd)
__CMSIS_SHIM_U2(__SMUSDX, __builtin_arm_smusdx)
__CMSIS_SHIM_U3(__SMLAD, __builtin_arm_smlad)
__CMSIS_SHIM_U3(__SMLADX, __builtin_arm_smladx)
__CMSIS_SHIM_U3(__SMLSD, __builtin_arm_smlsd)
__CMSIS_SHIM_U3(__SMLSDX, __builtin_arm_smlsdx)
__CMSIS_SHIM_U64(__SMLALD, __builtin_arm_smlald)
__CMSIS_SHIM_U64(__SMLALDX, __builtin_arm_smlaldx)
__CMSIS_SHIM_U64(__SMLSLD, __builtin_arm_smlsld)
__CMSIS_SHIM_U64(__SMLSLDX, __builtin_arm_smlsldx)
/* 16x16 (bottom/top halves) and 32x16 multiplies */
__CMSIS_SHIM_U2(__SMULBB, __builtin_arm_smulbb)
__CMSIS_SHIM_U2(__SMULBT, __builtin_arm_smulbt)
__CMSIS_SHIM_U2(__SMULTB, __builtin_arm_smultb)
__CMSIS_SHIM_U2(__SMULTT, __builtin_arm_smultt)
__CMSIS_SHIM_U3(__SMLABB, __builtin_arm_smlabb)
__CMSIS_SHIM_U3(__SMLABT, __builtin_arm_smlabt)
__CMSIS_SHIM_U3(__SMLATB, __builtin_arm_smlatb)
__CMSIS_SHIM_U3(__SMLATT, __builtin_arm_smlatt)
__CMSIS_SHIM_U2(__SMULWB, __builtin_arm_smulwb)
__CMSIS_SHIM_U2(__SMULWT, __builtin_arm_smulwt)
__CMSIS_SHIM_U3(__SMLAWB, __builtin_arm_smlawb)
__CMSIS_SHIM_U3(__SMLAWT, __builtin_arm_smlawt)
/* sign/zero extension of bytes 0 and 2 into two halfwords (optionally added to op1) */
__STATIC_FORCEINLINE uint32_t __SXTB16(uint32_t op1) { return (uint32_t)__builtin_arm_sxtb16((int)op1); }
__STATIC_FORCEINLINE uint32_t __UXTB16(uint32_t op1) { return (uint32_t)__builtin_arm_uxtb16((int)op1); }
__CMSIS_SHIM_U2(__SXTAB16, __builtin_arm_sxtab16)
__CMSIS_SHIM_U2(__UXTAB16, __builtin_arm_uxtab16)
/* ... of the operand rotated right first (LLVM folds a constant 8/16/24 rotation into the
   instruction's ROR field) */
__STATIC_FORCEINLINE uint32_t __SXTB16_RORn(uint32_t op1, uint32_t rotate)
{
    return __SXTB16(__ROR(op1, rotate));
}
__STATIC_FORCEINLINE uint32_t __SXTAB16_RORn(uint32_t op1, uint32_t op2, uint32_t rotate)
{
    return __SXTAB16(op1, __ROR(op2, rotate));
}
/* saturating 32-bit add/subtract */
__STATIC_FORCEINLINE int32_t __QADD(int32_t op1, int32_t op2) { return __builtin_arm_qadd(op1, op2); }
__STATIC_FORCEINLINE int32_t __QSUB(int32_t op1, int32_t op2) { return __builtin_arm_qsub(op1, op2); }
/* saturate both halfwords (constant width) */
#define __SSAT16(ARG1, ARG2) ((uint32_t)__builtin_arm_ssat16((int)(ARG1), (ARG2)))
#define __USAT16(ARG1, ARG2) ((uint32_t)__builtin_arm_usat16((int)(ARG1), (ARG2)))
/* pack halfwords: bottom of ARG1 with (ARG2 << ARG3) top / top of ARG1 with (ARG2 >> ARG3)
   bottom (ARG3 constant, 0..16 for PKHTB; LLVM selects PKHBT/PKHTB) */
#define __PKHBT(ARG1, ARG2, ARG3)                                                                  \
    ((((uint32_t)(ARG1)) & 0x0000FFFFUL) | ((((uint32_t)(ARG2)) << (ARG3)) & 0xFFFF0000UL))
#define __PKHTB(ARG1, ARG2, ARG3)                                                                  \
    ((((uint32_t)(ARG1)) & 0xFFFF0000UL) | ((((uint32_t)(ARG2)) >> (ARG3)) & 0x0000FFFFUL))
/* most significant word multiply-accumulate, truncating: op3 + (op1 * op2) >> 32
   (the low word of op3 << 32 is zero, so no carry is lost; LLVM selects SMMLA) */
__STATIC_FORCEINLINE int32_t __SMMLA(int32_t op1, int32_t op2, int32_t op3)
{
    return (int32_t)((uint32_t)op3 + (uint32_t)(((int64_t)op1 * op2) >> 32));
}

#undef __CMSIS_SHIM_U2
#undef __CMSIS_SHIM_U3
#undef __CMSIS_SHIM_U64

#endif /* CMSIS_SHIM_DSP */

#endif /* __CMSIS_COMPILER_H */
