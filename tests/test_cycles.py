"""The cost model (specializer/run/cycles.py), one instruction class at a time.

Each case is a hand-written Thumb work() (assembled into the qemu_smoke firmware in place of its
loop), run on QEMU through the plugin; the TRM-weighted estimate must be exactly the sum written
next to the instructions. Every work() returns with `bx lr`: 1 + P = 3.
"""

from __future__ import annotations

import pytest

from specializer.run import cycles, qemu

from test_qemu import build, window

CASES = {
    "alu": ("""
    movs r0, #1              @ 1
    adds r0, r0, #2          @ 1
    mul r1, r0, r0           @ 1
    mla r1, r0, r0, r1       @ 1 (single-cycle MAC on the M4)
    lsls r1, r1, #2          @ 1
    bx lr                    @ 3
""", 8),
    "load-store": ("""
    ldr r1, =0x20001000      @ 2 (literal load)
    str r0, [r1]             @ 1 (immediate offset: the data phase overlaps the next instruction)
    ldr r2, [r1]             @ 2 (nothing pipelines after a store)
    ldrb r3, [r1]            @ 1 (pipelined after a load)
    strh r3, [r1, #4]        @ 1
    bx lr                    @ 3
""", 10),
    "load-store-pipelining": ("""
    ldr r1, =0x20001000      @ 2
    movs r2, #0              @ 1
    str r2, [r1, #4]         @ 1 (immediate offset)
    ldr r3, [r1, r2]         @ 2 (nothing pipelines after a store)
    ldr r2, [r1, #4]         @ 1 (pipelined after a load)
    ldr r0, [r1, r2]         @ 2: r2, the previous load's destination, is in its address
    ldr r0, [r1]             @ 1 (pipelined)
    str r3, [r1, r2]         @ 1: register offset, pipelined after a load
    str r3, [r1, r2]         @ 2: register offset after a store
    vldr s0, [r1]            @ 2
    vldr s1, [r1, #4]        @ 1 (the FPU's loads pipeline the same way)
    vstr s1, [r1, #8]        @ 1
    ldrd r2, r3, [r1]        @ 3 (never pipelined)
    ldr r2, [r1]             @ 2 (not after LDRD)
    vldr d1, [r1]            @ 3 (two words, as LDRD)
    vstr d1, [r1, #8]        @ 3
    bx lr                    @ 3
""", 31),
    "load-store-double": ("""
    ldr r1, =0x20001000      @ 2
    ldrd r2, r3, [r1]        @ 3
    strd r2, r3, [r1, #8]    @ 3
    bx lr                    @ 3
""", 11),
    "load-store-multiple": ("""
    ldr r1, =0x20001000      @ 2
    push {r4, r5, r6}        @ 1+3
    pop {r4, r5, r6}         @ 1+3
    ldm r1, {r2, r3}         @ 1+2
    stm r1, {r2, r3}         @ 1+2
    vpush {d8}               @ 1+2 (a D register is two words)
    vpop {d8}                @ 1+2
    vldm r1, {s0-s3}         @ 1+4
    bx lr                    @ 3
""", 30),
    "divide": ("""
    movs r0, #100            @ 1
    movs r1, #7              @ 1
    sdiv r2, r0, r1          @ 7
    udiv r2, r0, r1          @ 7
    bx lr                    @ 3
""", 19),
    "floating-point": ("""
    movs r0, #0              @ 1
    vmov s0, r0              @ 1
    vadd.f32 s1, s0, s0      @ 1
    vmul.f32 s2, s1, s0      @ 1
    vmla.f32 s2, s1, s0      @ 3
    vfma.f32 s2, s1, s0      @ 3
    vdiv.f32 s3, s1, s2      @ 14
    vsqrt.f32 s3, s1         @ 14
    vmov r2, r3, d0          @ 2 (two core registers)
    vmov d1, r2, r3          @ 2
    vcvt.s32.f32 s0, s0      @ 1
    bx lr                    @ 3
""", 46),
    "if-then": ("""
    movs r0, #1              @ 1 (16-bit)
    it eq                    @ 0: folds into the 16-bit movs
    moveq r1, #2             @ 1
    cmp.w r0, #1             @ 1 (32-bit)
    ite ne                   @ 1: no folding after a 32-bit instruction
    movne r1, #3             @ 1
    moveq r1, #4             @ 1
    bx lr                    @ 3
""", 9),
    "if-then-first-in-block": ("""
    movs r0, #0              @ 1
    b 1f                     @ 1+2: taken, although to the next address
1:  it eq                    @ 1: first of its block, nothing to fold into
    moveq r1, #1             @ 1
    bx lr                    @ 3
""", 9),
    "conditional-branch": ("""
    movs r0, #3              @ 1
1:  subs r0, #1              @ 3 x 1
    bne 1b                   @ 3 x 1, taken twice: +2 x 2
    movs r0, #0              @ 1
    cbz r0, 2f               @ 1+2 (taken)
    nop                      @ skipped
2:  cbnz r0, 3f              @ 1 (not taken)
    nop                      @ 1
3:  bx lr                    @ 3
""", 20),
    "branches-writing-pc": ("""
    push {r4, lr}            @ 1+2
    bl sub1                  @ 1+2; sub1: adds 1, mov pc 1+2
    adr r3, tbl              @ 1
    movs r0, #1              @ 1
    tbb [r3, r0]             @ 2+2 (to the next instruction: still taken)
    ldr r3, =4f+1            @ 2
    bx r3                    @ 1+2 (to the next instruction)
4:  ldr r0, =5f+1            @ 2
    push {r0}                @ 1+1
    pop {pc}                 @ 1+1+2
5:  ldr r0, =6f+1            @ 2
    push {r0}                @ 1+1
    ldr pc, [sp], #4         @ 2+2
6:  cmp r0, r0               @ 1
    it ne                    @ 0 (folds)
    popne {r4, pc}           @ 1+2, condition fails: not taken
    pop {r4, pc}             @ 1+2+2
    .p2align 2
tbl: .byte 0, 0
    .p2align 1
    .thumb_func
sub1:
    adds r0, #1
    mov pc, lr
""", 46),
}


def _source(body: str) -> str:
    return f"""
    .thumb_func
    .global work
work:
{body}
    .ltorg
"""


def _run(tmp_path, name: str, source: str) -> qemu.Profile:
    src = tmp_path / f"{name}.S"
    src.write_text(source)
    elf, syms = build(tmp_path, name, f'WORK_S="{src}"')
    res = qemu.run(elf, method="plugin", timeout=30, **window(syms))
    assert res.exit_code == 0
    return res.profile


@pytest.mark.parametrize("name", list(CASES))
def test_instruction_class(tmp_path, name):
    body, want = CASES[name]
    prof = _run(tmp_path, name, _source(body))
    assert cycles.estimate(prof).cycles == want


# `work` at byte 1000 of a 1 KiB page: its code reaches the next page after 24 bytes
NEAR_PAGE_END = """
    .p2align 10
    .rept 500
    nop
    .endr
    .thumb_func
    .global work
work:
"""


def test_page_crossing_is_no_taken_branch(tmp_path):
    """A 32-bit instruction crossing a 1 KiB page ends QEMU's block without any branch."""
    prof = _run(tmp_path, "page", NEAR_PAGE_END + """\
    movs r0, #0              @ 1
1:  .rept 10
    nop                      @ 10 per iteration
    .endr
    add.w r0, r0, #1         @ at 1022: crosses the page; 1 per iteration
    cmp r0, #2               @ 1 per iteration
    bne 1b                   @ 1 per iteration, taken once: +2
    bx lr                    @ 3
""")
    cross = [b for b in prof.blocks if b.insns[0].text.startswith("add.w")]
    assert cross and (cross[0].addr & 0x3FF) == 0x3FE  # the case this test is about happened
    before = [b for b in prof.blocks if b.insns[-1].addr + b.insns[-1].size == cross[0].addr]
    assert before and all(b.insns[-1].size == 2 and b.taken == 0 for b in before)  # size corrected
    assert cycles.estimate(prof).cycles == 1 + 2 * 13 + 2 + 3


def test_loads_pair_across_a_block_split_at_a_page(tmp_path):
    """QEMU ends a block at a 1 KiB page even in straight code: the load after the page still
    pipelines after the load before it (the estimate must not depend on where code lands)."""
    prof = _run(tmp_path, "page_pair", NEAR_PAGE_END + """\
    mov r0, sp               @ 1
    .rept 10
    nop                      @ 10
    .endr
    ldr r1, [r0]             @ at 1022, the page's last halfword: 2
    ldr r2, [r0, #4]         @ at the next page, a block of its own: 1, pipelined
    bx lr                    @ 3
""")
    split = [b for b in prof.blocks if b.insns[0].text.startswith("ldr r2")]
    assert split and (split[0].addr & 0x3FF) == 0  # the case this test is about happened
    assert cycles.fallthrough(prof)[split[0].addr][0].text.startswith("ldr r1")
    assert cycles.estimate(prof).cycles == 1 + 10 + 2 + 1 + 3


def test_fallthrough_counts_only_what_fell_through():
    a = _block(["movs r0, #1", "ldr r1, [r0]"], execs=3)
    b = qemu.Block(0x104, (qemu.Insn(0x104, 2, "ldr r2, [r0, #4]"),), execs=5, taken=0)  # 2 entries by branch
    into = cycles.fallthrough(qemu.Profile(0, 0, (a, b)))
    assert into[0x104][1] == 3
    assert cycles.block_cycles(b, into[0x104]) == 3 * 1 + 2 * 2
    c = _block(["movs r0, #1", "b #0x104"], execs=3)  # a branch: not a split
    assert 0x104 not in cycles.fallthrough(qemu.Profile(0, 0, (c, b)))


def _block(texts, execs=1, taken=0, sizes=None):
    sizes = sizes or [2] * len(texts)
    insns, addr = [], 0x100
    for t, s in zip(texts, sizes):
        insns.append(qemu.Insn(addr, s, t))
        addr += s
    return qemu.Block(0x100, tuple(insns), execs, taken)


@pytest.mark.parametrize("text,kind", [
    ("b #0x100", "always"), ("bl #0x128", "always"), ("blx r3", "always"), ("bx lr", "always"),
    ("tbb [r3, r0]", "always"), ("tbh [pc, r1, lsl #1]", "always"), ("pop {r4, r5, pc}", "always"),
    ("ldm.w sp!, {r4, pc}", "always"), ("ldr.w pc, [sp], #4", "always"), ("mov pc, lr", "always"),
    ("add pc, r2", "always"), ("bne #0x10", "cond"), ("bls.w #0x200", "cond"), ("cbz r0, #0xfe", "cond"),
    ("cbnz r1, #0x104", "cond"), ("bxeq lr", "cond"), ("nop ", "none"), ("bic r0, r0, #1", "none"),
    ("bkpt #0xab", "none"), ("pop {r4, r5}", "none"), ("ldr r0, [pc, #8]", "none"), ("cmp pc, r0", "none"),
    ("bfi r0, r1, #0, #4", "none"),
])
def test_branch_kind(text, kind):
    assert cycles.branch_kind(text) == kind


def test_taken_from_the_last_instruction():
    # QEMU ended the block without a branch: whatever followed, no penalty
    assert cycles.taken(_block(["movs r0, #1", "nop "], execs=5, taken=5)) == 0
    # unconditional: every execution, even when the plugin saw a fall-through
    assert cycles.taken(_block(["movs r0, #1", "b #0x104"], execs=5, taken=0)) == 5
    # conditional: as the plugin saw it
    assert cycles.taken(_block(["subs r0, #1", "bne #0x100"], execs=5, taken=4)) == 4
    # a PC write inside an IT block is conditional
    assert cycles.taken(_block(["it ne", "pop {r4, pc}"], execs=3, taken=1)) == 1
    assert cycles.block_cycles(_block(["it ne", "pop {r4, pc}"], execs=3, taken=1)) == 3 * (1 + 3) + 2


def test_cost_table_lists_every_class():
    charged = {c.klass for c in cycles.COSTS}
    assert len(charged) == len(cycles.COSTS) >= 10
    assert all(c.cycles and c.model for c in cycles.COSTS)


def test_cost_model_page_documents_the_cost_table():
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "cost-model.md").read_text()
    for c in cycles.COSTS:
        assert f"| {c.klass} | {c.forms} | {c.cycles} | {c.model} |" in page, c.klass
