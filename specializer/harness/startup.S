/* Startup and measurement window for the mps2-an386 (Cortex-M4F) harness. */
    .syntax unified
    .thumb

    .section .vectors, "a"
    .global harness_vectors
harness_vectors:
    .word __stack_top
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
    /* The stacked frame is on MSP or PSP; its PC is word 6. */
    tst lr, #4
    ite eq
    mrseq r0, msp
    mrsne r0, psp
    ldr r0, [r0, #24]
    b harness_report_fault

/* uint32_t harness_measure(void (*fn)(void)): FPGAIO 25 MHz counter ticks around fn().
 * Also paints the free stack and records fn's entry sp (harness_entry_sp) for the stack scan.
 * Written in assembly so the instructions around the call are fixed: a calibration run on
 * harness_empty (one `bx lr`) measures them. `harness_measure_return` is where the QEMU
 * plugin stops counting; it starts at fn's first instruction. */
    .thumb_func
    .global harness_measure
harness_measure:
    push {r4, r5, r6, lr}
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
    ldr r4, =0x40028018
    ldr r5, [r4]
    blx r0
    .global harness_measure_return
harness_measure_return:
    ldr r6, [r4]
    subs r0, r6, r5
    pop {r4, r5, r6, pc}

    .thumb_func
    .global harness_empty
harness_empty:
    bx lr
