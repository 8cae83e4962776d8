#ifndef HARNESS_H
#define HARNESS_H
#include <stdint.h>

enum { HARNESS_F32 = 0, HARNESS_EXACT = 1 };

struct harness_tensor {
    void *model;      /* the model's global (plus offset) */
    const void *data; /* example input, or JAX's reference output */
    uint32_t count;
    uint32_t elem_bytes;
    uint32_t kind;
};

extern const struct harness_tensor harness_inputs[];
extern const struct harness_tensor harness_outputs[];
extern const unsigned harness_n_inputs, harness_n_outputs;
/* input and output rows: harness_n_inputs (outputs) per vector, vector 0 the measured one */
extern const unsigned harness_n_vectors;
extern const float HARNESS_RTOL, HARNESS_ATOL;
extern void (*const harness_entry_fn)(void);

uint32_t harness_measure(void (*fn)(void));
/* The word harness_measure paints the free stack with (startup.S spells it out too). */
#define HARNESS_STACK_PAINT 0x5AC3A55Au
extern uint32_t harness_entry_sp; /* sp at the measured call: fn's frames lie below it */
extern uint32_t __stack_limit[];  /* lowest stack address: the end of .bss (link.ld) */
void harness_empty(void);
void harness_exit(int code);
void harness_report_fault(const uint32_t *frame);
/* from io.c: timer ticks the measured call may run (3.2 per instruction; 0: no limit), and
 * whether integer division by zero traps */
extern const uint32_t harness_limit_ticks, harness_div0_trap;
extern uint32_t harness_ret[4];
#endif
