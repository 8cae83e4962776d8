/* Buffered semihosting output for the test firmware: lines of hex words. */
#ifndef TEST_IO_H
#define TEST_IO_H
#include <stdint.h>

void io_str(const char *s);     /* append text */
void io_hex32(uint32_t v);      /* append " xxxxxxxx" */
void io_hex64(uint64_t v);      /* append " xxxxxxxxxxxxxxxx" */
void io_flush(void);            /* write everything out */
void report_fault(uint32_t pc); /* "hard fault at PC 0x...", exit 3 */
#endif
