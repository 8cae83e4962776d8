/* Minimal startup for trying a bundle on QEMU's mps2-an386 (Cortex-M4F) with newlib and
 * semihosting (--specs=rdimon.specs -nostartfiles). On a real board your device's startup
 * file takes its place; what a bundle needs from it is the same: the FPU enabled, .data
 * copied, .bss zeroed before the model's entry is called. */
    .syntax unified
    .thumb

    .section .vectors, "a"
    .global bundle_vectors
bundle_vectors:
    .word __stack_top
    .word bundle_reset
    .word bundle_fault         /* NMI */
    .word bundle_fault         /* HardFault */
    .word bundle_fault         /* MemManage */
    .word bundle_fault         /* BusFault */
    .word bundle_fault         /* UsageFault */

    .text
    .thumb_func
    .global bundle_reset
bundle_reset:
    /* FPU on before any float instruction: CPACR |= CP10, CP11 full access */
    ldr r0, =0xE000ED88
    ldr r1, [r0]
    orr r1, r1, #(0xF << 20)
    str r1, [r0]
    dsb
    isb
    ldr r0, =__data_start
    ldr r1, =__data_end
    ldr r2, =__data_load
1:  cmp r0, r1
    bhs 2f
    ldr r3, [r2], #4
    str r3, [r0], #4
    b 1b
2:  ldr r0, =__bss_start__
    ldr r1, =__bss_end__
    movs r2, #0
3:  cmp r0, r1
    bhs 4f
    str r2, [r0], #4
    b 3b
4:  bl initialise_monitor_handles   /* newlib's semihosting stdio (librdimon) */
    bl main
    bl exit
5:  b 5b

    .thumb_func
    .global bundle_fault
bundle_fault:
    /* semihosting SYS_EXIT_EXTENDED, ADP_Stopped_RunTimeErrorUnknown (0x20023), code 3 */
    ldr r1, =bundle_fault_block
    movs r0, #0x20
    bkpt 0xab
6:  b 6b

/* exit() runs newlib's __libc_fini_array, which calls _fini (crti.o's, left out by
 * -nostartfiles): nothing to finalize here */
    .thumb_func
    .weak _init, _fini
_init:
_fini:
    bx lr

    .section .rodata.bundle_fault_block, "a"
    .align 2
bundle_fault_block:
    .word 0x20023, 3
