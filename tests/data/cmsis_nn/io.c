#include "io.h"

void sys_write0(const char *s);
void sys_exit(int code) __attribute__((noreturn));

static char buf[4096];
static unsigned pos;

void io_flush(void)
{
    buf[pos] = '\0';
    sys_write0(buf);
    pos = 0;
}

void io_str(const char *s)
{
    while (*s) {
        if (pos + 1 >= sizeof buf) {
            io_flush();
        }
        buf[pos++] = *s++;
    }
}

static void hex(uint64_t v, int digits, int space)
{
    char t[20];
    char *p = t;
    if (space) {
        *p++ = ' ';
    }
    for (int i = 0; i < digits; i++) {
        *p++ = "0123456789abcdef"[(v >> (4 * (digits - 1 - i))) & 15];
    }
    *p = '\0';
    io_str(t);
}

void io_hex32(uint32_t v) { hex(v, 8, 1); }
void io_hex64(uint64_t v) { hex(v, 16, 1); }

void report_fault(uint32_t pc)
{
    io_flush();
    io_str("hard fault at PC 0x");
    hex(pc, 8, 0);
    io_str("\n");
    io_flush();
    sys_exit(3);
}
