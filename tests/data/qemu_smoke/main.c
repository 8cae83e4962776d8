/* Smoke-test firmware, the C half: measure, print, return the exit code.
   No libc (-nostdlib): just enough formatting for two lines. */
typedef unsigned int u32;

void sys_write0(const char *s);
void sys_exit(int code) __attribute__((noreturn));
u32 measure(void (*fn)(void));
void work(void);
void calib(void);
int finish(void);

/* write `v` in decimal (or 8 hex digits) at the end of buf; returns start */
static char *fmt_u32(char *end, u32 v, int hex)
{
    *--end = '\0';
    int n = 0;
    do {
        u32 d = hex ? (v & 0xF) : (v % 10);
        *--end = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v = hex ? (v >> 4) : (v / 10);
        n++;
    } while (v != 0 || (hex && n < 8));
    return end;
}

int main(void)
{
    char buf[16];
    u32 ticks = measure(work);     /* the plugin counts this call (start=work) */
    u32 calib_ticks = measure(calib);
    sys_write0("counter ");
    sys_write0(fmt_u32(buf + sizeof buf, ticks, 0));
    sys_write0(" ");
    sys_write0(fmt_u32(buf + sizeof buf, calib_ticks, 0));
    sys_write0("\n");
    return finish();
}

/* frame = the exception stack frame: r0-r3, r12, lr, pc, xpsr */
void hard_fault(const u32 *frame)
{
    char buf[16];
    sys_write0("hard fault at PC 0x");
    sys_write0(fmt_u32(buf + sizeof buf, frame[6], 1));
    sys_write0("\n");
    sys_exit(3);
}
