/* Bare-metal startup for the CMSIS-NN shim tests on mps2-an386 (Cortex-M4F) under QEMU:
 * FPU on, .data copied, .bss zeroed, main() called, its return value becomes the exit code
 * (semihosting SYS_EXIT_EXTENDED). A fault prints "hard fault at PC 0x..." and exits 3. */
    .syntax unified
    .cpu cortex-m4
    .fpu fpv4-sp-d16
    .thumb

    .section .vectors, "a"
    .word __stack_top
    .word reset_handler
    .word fault_handler          /* NMI */
    .word fault_handler          /* HardFault */
    .word fault_handler          /* MemManage */
    .word fault_handler          /* BusFault */
    .word fault_handler          /* UsageFault */

    .text
    .thumb_func
    .global reset_handler
reset_handler:
    ldr   r0, =0xE000ED88        /* CPACR: CP10, CP11 full access */
    ldr   r1, [r0]
    orr   r1, r1, #(0xF << 20)
    str   r1, [r0]
    dsb
    isb
    ldr   r0, =__data_start
    ldr   r1, =__data_end
    ldr   r2, =__data_load
1:  cmp   r0, r1
    bhs   2f
    ldr   r3, [r2], #4
    str   r3, [r0], #4
    b     1b
2:  ldr   r0, =__bss_start
    ldr   r1, =__bss_end
    movs  r2, #0
3:  cmp   r0, r1
    bhs   4f
    str   r2, [r0], #4
    b     3b
4:  bl    main
    b     sys_exit

    .thumb_func
fault_handler:
    tst   lr, #4
    ite   eq
    mrseq r0, msp
    mrsne r0, psp
    ldr   r0, [r0, #24]          /* stacked PC */
    b     report_fault

    .thumb_func
    .global sys_write0           /* void sys_write0(const char *s) */
sys_write0:
    mov   r1, r0
    movs  r0, #0x04              /* SYS_WRITE0 */
    bkpt  0xab
    bx    lr

    .thumb_func
    .global sys_exit             /* void sys_exit(int code) */
sys_exit:
    sub   sp, #8
    ldr   r1, =0x20026           /* ADP_Stopped_ApplicationExit */
    str   r1, [sp]
    str   r0, [sp, #4]
    mov   r1, sp
    movs  r0, #0x20              /* SYS_EXIT_EXTENDED */
    bkpt  0xab
    b     .
    .ltorg
    .section .note.GNU-stack, "", %progbits
