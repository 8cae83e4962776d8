/*
 * Smoke-test firmware for mps2-an386 (Cortex-M4F) under QEMU, for
 * tests/test_qemu.py.  Everything the tests measure is here, in assembly, so
 * the instruction counts are exact; main.c only formats and prints.
 *
 * Build variants (-D):  EXIT_CODE=n  exit code (default 0)
 *                       WORK_S="f.S" work() from f.S instead of the counted loop
 *                       FAULT        execute `udf` at fault_insn after measuring
 *                       HANG         spin forever at hang_insn after measuring
 */
    .syntax unified
    .cpu cortex-m4
    .fpu fpv4-sp-d16
    .thumb

/* ---- vector table at 0x0: initial SP, then handlers ----------------------- */
    .section .vectors, "a"
    .word __stack_top
    .word reset_handler
    .word default_handler        /* NMI */
    .word hardfault_handler      /* HardFault (UsageFault/BusFault escalate here) */
    .rept 12
    .word default_handler        /* MemManage .. SysTick */
    .endr

    .text
    .thumb_func
    .global reset_handler
reset_handler:
    /* enable the FPU: CPACR (0xE000ED88) |= 0xF << 20 (CP10+CP11 full access) */
    ldr   r0, =0xE000ED88
    ldr   r1, [r0]
    orr   r1, r1, #(0xF << 20)
    str   r1, [r0]
    dsb
    isb
    vmov  s0, r1                 /* faults (NOCP) if the FPU were still off */
    bl    main                   /* main(): returns the exit code */
    b     sys_exit

    .thumb_func
default_handler:
    b     default_handler

/* HardFault: pass the stacked exception frame (MSP or PSP, EXC_RETURN bit 2)
   to hard_fault() in main.c, which prints the stacked PC and exits 3. */
    .thumb_func
hardfault_handler:
    tst   lr, #4
    ite   eq
    mrseq r0, msp
    mrsne r0, psp
    b     hard_fault

/* ---- semihosting (bkpt 0xab, r0 = operation, r1 = argument) -------------- */
    .thumb_func
    .global sys_write0           /* void sys_write0(const char *s) */
sys_write0:
    mov   r1, r0
    movs  r0, #0x04              /* SYS_WRITE0 */
    bkpt  0xab
    bx    lr

    .thumb_func
    .global sys_exit             /* void sys_exit(int code): never returns */
sys_exit:
    sub   sp, #8
    ldr   r1, =0x20026           /* ADP_Stopped_ApplicationExit */
    str   r1, [sp]
    str   r0, [sp, #4]           /* exit code */
    mov   r1, sp                 /* r1 -> {reason, code} */
    movs  r0, #0x20              /* SYS_EXIT_EXTENDED */
    bkpt  0xab
    b     .

/* ---- the measured code ---------------------------------------------------- */
#ifndef LOOP_ITERS
#define LOOP_ITERS 1000
#endif
    .global LOOP_ITERS_VALUE
    .equ  LOOP_ITERS_VALUE, LOOP_ITERS

#ifdef WORK_S
/* work() from another file: a hand-written sequence (tests/test_cycles.py) */
#include WORK_S
#else
/* work(): 1 + 2*LOOP_ITERS + 1 instructions executed (= 2002 by default):
   ldr once, subs+bne per iteration, bx lr once. */
    .thumb_func
    .global work
work:
    ldr   r0, =LOOP_ITERS        /* 1 (gas emits mov.w when it fits) */
1:  subs  r0, r0, #1             /* LOOP_ITERS */
    bne   1b                     /* LOOP_ITERS (taken LOOP_ITERS-1 times) */
    bx    lr                     /* 1 */
#endif

/* calib(): a single instruction, to subtract the measuring overhead. */
    .thumb_func
    .global calib
calib:
    bx    lr

/* unsigned measure(void (*fn)(void)): FPGAIO 25 MHz counter ticks around
   one call of fn.  The plugin's window is start=work .. stop=after_call. */
    .thumb_func
    .global measure
measure:
    push  {r4, r5, r6, lr}
    ldr   r4, =0x40028018        /* MPS2 FPGAIO COUNTER (25 MHz) */
    mov   r5, r0
    ldr   r6, [r4]               /* t0 */
    blx   r5
    .global after_call
after_call:                      /* return address of the call: the stop TB */
    ldr   r0, [r4]               /* t1 */
    subs  r0, r0, r6
    pop   {r4, r5, r6, pc}

/* ---- after the measurement: the fault or hang variants ------------------- */
    .thumb_func
    .global finish
finish:
#ifdef FAULT
    .global fault_insn
fault_insn:
    udf   #0                     /* UsageFault -> HardFault, stacked PC = here */
#endif
#ifdef HANG
    .global hang_insn
hang_insn:
    b     hang_insn              /* never exits: the runner must time out */
#endif
#ifndef EXIT_CODE
#define EXIT_CODE 0
#endif
    movs  r0, #EXIT_CODE
    bx    lr

    .ltorg
