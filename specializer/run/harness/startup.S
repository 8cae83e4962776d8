/* Startup and measurement window for the mps2-an386 (Cortex-M4F) harness.
 *
 * Stacks: thread mode (main, the measured call) runs on PSP, from the top of RAM down to an
 * MPU guard region (no access) above the fault handlers' own MSP stack, so a stack overflow
 * faults at the guard and the handler still has a stack to report it on (link.ld places them).
 * The reset table at 0 stays 7 words (the model's code after it keeps its addresses);
 * harness_vector_table, with the instruction-limit timer's IRQ, takes over through VTOR. */
    .syntax unified
    .thumb

    .section .vectors, "a"
    .global harness_vectors
harness_vectors:
    .word __handler_stack_top
    .word harness_reset
    .word harness_fault        /* NMI */
    .word harness_fault        /* HardFault */
    .word harness_fault        /* MemManage */
    .word harness_fault        /* BusFault */
    .word harness_fault        /* UsageFault */

    .text
    .thumb_func
    .global harness_reset
harness_reset:
    /* The FPU must be on before any float instruction: CPACR |= CP10, CP11 full access. */
    ldr r0, =0xE000ED88
    ldr r1, [r0]
    orr r1, r1, #(0xF << 20)
    str r1, [r0]
    /* VTOR: the full table (faults and the timer IRQ) */
    ldr r0, =0xE000ED08
    ldr r1, =harness_vector_table
    str r1, [r0]
    /* MPU region 0: the stack guard, 1 KiB, no access, execute never; the default map elsewhere
     * (MPU_CTRL PRIVDEFENA | ENABLE). Handlers run with the MPU off (HFNMIENA = 0). */
    ldr r0, =0xE000ED98
    movs r1, #0
    str r1, [r0]               /* RNR = 0 */
    ldr r1, =__stack_guard
    str r1, [r0, #4]           /* RBAR */
    ldr r1, =((1 << 28) | (9 << 1) | 1)
    str r1, [r0, #8]           /* RASR: XN, AP = no access, SIZE = 2^(9+1), ENABLE */
    movs r1, #5
    str r1, [r0, #-4]          /* MPU_CTRL */
    /* thread mode on PSP from the top of RAM; MSP (the reset value) stays the handlers' */
    ldr r0, =__stack_top
    msr psp, r0
    movs r0, #2
    msr control, r0
    dsb
    isb
    /* .data from flash to RAM, .bss zeroed */
    ldr r0, =__data_start
    ldr r1, =__data_end
    ldr r2, =__data_load
1:  cmp r0, r1
    bhs 2f
    ldr r3, [r2], #4
    str r3, [r0], #4
    b 1b
2:  ldr r0, =__bss_start
    ldr r1, =__bss_end
    movs r2, #0
3:  cmp r0, r1
    bhs 4f
    str r2, [r0], #4
    b 3b
4:  bl main
    bl harness_exit
5:  b 5b

    .thumb_func
    .global harness_fault
harness_fault:
    /* harness_report_fault(frame): the C side reads the stacked PC only when stacking
     * succeeded (CFSR), so a frame that could not be pushed into the guard is never read. */
    tst lr, #4
    ite eq
    mrseq r0, msp
    mrsne r0, psp
    b harness_report_fault

    /* VTOR needs the table aligned to its size rounded up to a power of two (25 words -> 128) */
    .section .text.harness_vector_table, "ax"
    .balign 128
    .global harness_vector_table
harness_vector_table:
    .word __handler_stack_top
    .word harness_reset
    .rept 14
    .word harness_fault        /* NMI, HardFault, MemManage, BusFault, UsageFault, ..., SysTick */
    .endr
    .rept 9
    .word harness_fault        /* IRQ 0-8; IRQ 8 is timer0, the instruction limit */
    .endr
    .text

/* uint32_t harness_measure(void (*fn)(void)): FPGAIO 25 MHz counter ticks around fn().
 * Also paints the free stack and records fn's entry sp (harness_entry_sp) for the stack scan.
 * fn starts on a 64-byte aligned sp: XLA's buffers on the stack are 64-byte aligned, so a
 * frame's padding, and with it the peak stack, would otherwise depend on the harness's own
 * frames above (a harness change moved three models' figures by 24 bytes).
 * Written in assembly so the instructions around the call are fixed: a calibration run on
 * harness_empty (one `bx lr`) measures them. `harness_measure_return` is where the QEMU
 * plugin stops counting; it starts at fn's first instruction. */
    .thumb_func
    .global harness_measure
harness_measure:
    push {r4, r5, r6, r7, r8, lr}
    mov r7, sp
    bic r8, r7, #63
    mov sp, r8
    /* Paint the free stack, [__stack_limit, sp), with HARNESS_STACK_PAINT (harness.h): after the
     * call the lowest word fn changed is its peak stack. Here, not in C, so that no frame of the
     * painting code sits between the painted area and fn's. */
    ldr r1, =__stack_limit
    ldr r2, =0x5AC3A55A
    mov ip, sp
6:  cmp r1, ip
    bhs 7f
    str r2, [r1], #4
    b 6b
7:  ldr r1, =harness_entry_sp
    str ip, [r1]
    /* The instruction limit: timer0 (CMSDK APB timer, 25 MHz, 3.2 ticks per instruction under
     * -icount shift=7) counts harness_limit_ticks down from here and raises IRQ 8 at zero.
     * Started after the painting, so the limit is the call's own. 0: no limit. */
    ldr r1, =harness_limit_ticks
    ldr r1, [r1]
    cbz r1, 8f
    ldr r2, =0x40000000
    str r1, [r2, #4]           /* VALUE */
    str r1, [r2, #8]           /* RELOAD */
    movs r1, #9
    str r1, [r2]               /* CTRL: enable, interrupt enable */
    ldr r1, =0xE000E100
    movs r2, #(1 << 8)
    str r2, [r1]               /* NVIC ISER0: IRQ 8 */
8:  ldr r4, =0x40028018
    ldr r5, [r4]
    blx r0
    .global harness_measure_return
harness_measure_return:
    ldr r6, [r4]
    /* the return registers, for a raw entry's value: r0, r1 (ints, pointers, i64), d0 (float, double) */
    ldr r2, =harness_ret
    strd r0, r1, [r2]
    vstr d0, [r2, #8]
    movs r1, #0
    ldr r2, =0x40000000
    str r1, [r2]               /* timer0 off: the next painting is not the call's */
    subs r0, r6, r5
    mov sp, r7
    pop {r4, r5, r6, r7, r8, pc}

    .thumb_func
    .global harness_empty
harness_empty:
    bx lr
