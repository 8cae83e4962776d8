"""Memory accounting: flash counts the libc/libm code a model reaches, RAM the measured peak stack."""

from pathlib import Path

import pytest

from specializer.capture.manifest import Manifest, Tensor
from specializer.driver.run import run_model
from specializer.target import TARGET


def _stack_model(tmp_path: Path, words: int) -> Path:
    """A model whose entry fills a local array of `words` i32 with volatile stores (kept by any
    optimizer) and copies its input to its output: it needs at least 4 * words bytes of stack."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    ll = tmp_path / "model.ll"
    ll.write_text(f"""target datalayout = "{TARGET.datalayout}"
target triple = "{TARGET.triple}"

@m_in_x = global [4 x i8] zeroinitializer, align 64
@m_out0 = global [4 x i8] zeroinitializer, align 64

define void @m_run() {{
entry:
  %buf = alloca [{words} x i32], align 4
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %p = getelementptr [{words} x i32], ptr %buf, i32 0, i32 %i
  store volatile i32 %i, ptr %p
  %next = add i32 %i, 1
  %done = icmp eq i32 %next, {words}
  br i1 %done, label %exit, label %loop
exit:
  %last = getelementptr [{words} x i32], ptr %buf, i32 0, i32 {words - 1}
  %v = load volatile i32, ptr %last
  %x = load float, ptr @m_in_x
  store float %x, ptr @m_out0
  ret void
}}
""")
    x = Tensor("x", (1,), "float32", "m_in_x", data=(1.5,))
    out = Tensor("out", (1,), "float32", "m_out0", data=(1.5,))
    (tmp_path / "model.json").write_text(Manifest("m", "m_run", (x,), (out,), ()).dumps())
    return ll


def test_stack_is_measured(tmp_path):
    big, _ = run_model(_stack_model(tmp_path / "big", 1000), tmp_path / "big" / "build")
    small, _ = run_model(_stack_model(tmp_path / "small", 2), tmp_path / "small" / "build")
    assert big.status == small.status == "pass"
    # the 4,000-byte array is on the stack, and little else
    assert 4000 <= big.stack < 4000 + 64
    assert small.stack < 64 and small.stack < big.stack
    # RAM is the static data plus the peak stack; the array is nowhere in flash
    assert big.ram == big.data + big.bss + big.lib_ram + big.stack
    assert big.ram - small.ram == big.stack - small.stack
    assert big.flash < 4000


def test_the_measured_call_starts_on_a_64_byte_aligned_stack(tmp_path):
    """XLA's stack buffers are 64-byte aligned: were the entry sp anywhere else, the padding, and
    the figure, would follow the harness's own frames."""
    import re

    from elftools.elf.elffile import ELFFile

    _, result = run_model(_stack_model(tmp_path, 2), tmp_path / "build")
    used, free = (int(v, 16) for v in re.search(r"^stack 0x(\w+) 0x(\w+)$", result.stdout, re.M).groups())
    with open(tmp_path / "build" / "firmware.elf", "rb") as f:
        limit = ELFFile(f).get_section_by_name(".symtab").get_symbol_by_name("__stack_limit")[0]["st_value"]
    assert (limit + free) % 64 == 0 and 0 < used < free


def test_stack_overflow_is_an_error(tmp_path):
    from specializer.errors import UserError

    # the MPU guard below the stack faults; the handler, on a stack of its own, reports it
    with pytest.raises(UserError, match=r"^stack overflow: the call needs more than the [\d,]+ bytes of stack"):
        run_model(_stack_model(tmp_path, 1 << 20), tmp_path / "build")  # 4 MiB: all of the board's RAM


def test_flash_counts_libm(captured, tmp_path):
    """elementwise calls newlib's logf and erff: their code is in the model's flash, not left out
    as harness."""
    from elftools.elf.elffile import ELFFile

    row, _ = run_model(captured("elementwise").model_ll, tmp_path)
    with open(tmp_path / "footprint.elf", "rb") as f:
        symbols = {s.name: s["st_size"] for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                   if s["st_info"]["type"] == "STT_FUNC"}
    assert "logf" in symbols and "erff" in symbols
    assert row.lib_flash >= symbols["logf"] + symbols["erff"]
    assert row.flash == row.text + row.rodata + row.data + row.lib_flash
    # a model without libm calls reaches no library code
    plain, _ = run_model(captured("quadratic").model_ll, tmp_path / "quadratic")
    assert plain.lib_flash == 0 and plain.lib_ram == 0


def test_run_is_the_lto_row_of_a_comparison(captured, tmp_path):
    """`specialize run` builds and accounts exactly as the lto variant of a comparison."""
    from specializer import inputs
    from specializer.driver.compare import compare

    c = captured("elementwise")
    row, _ = run_model(c.model_ll, tmp_path / "run")
    lto = compare(inputs.load(c.model_ll), tmp_path / "cmp", which=("lto",)).row("lto")
    assert (row.text, row.rodata, row.data, row.bss, row.lib_flash, row.lib_ram, row.stack) == \
           (lto.text, lto.rodata, lto.data, lto.bss, lto.lib_flash, lto.lib_ram, lto.stack)
    assert (row.flash, row.ram, row.insns, row.cycles) == (lto.flash, lto.ram, lto.insns, lto.cycles)
    assert row.text < 10_000  # the kernel library is internalized: only what the model calls is left
