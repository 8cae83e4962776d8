"""Sizing the specializer's scratch modules with the per-function memo (optimize/codesizes.py):
what the memo gives is what emitting the function again gives, and only new functions are emitted."""

import pytest

from specializer.llvm import emit, irtext
from specializer.optimize import codesizes

HEADER = ('target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"\n'
          'target triple = "thumbv7em-unknown-none-eabihf"\n')

KERNEL = """
define internal void @kernel(ptr %out, ptr %in, i32 %n) noinline {
entry:
  %empty = icmp sle i32 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %src = getelementptr float, ptr %in, i32 %i
  %x = load float, ptr %src, !tbaa !1
  %y = fmul float %x, %x
  %dst = getelementptr float, ptr %out, i32 %i
  store float %y, ptr %dst, !tbaa !1
  %next = add i32 %i, 1
  %more = icmp slt i32 %next, %n
  br i1 %more, label %loop, label %done, !llvm.loop !4
done:
  ret void
}
!0 = !{!"root"}
!1 = !{!2, !2, i64 0}
!2 = !{!"float", !0, i64 0}
!4 = distinct !{!4, !5}
!5 = !{!"llvm.loop.unroll.disable"}
"""

# a tail call: its branch is short or long by where the callee lands, unless each function has a
# section of its own (as the variants are built)
WRAPPER = """
define void @wrapper(ptr %out, ptr %in, i32 %n) noinline {
  %m = add i32 %n, %SIZE
  tail call void @kernel(ptr %out, ptr %in, i32 %m)
  ret void
}
"""


@pytest.fixture
def memo(tmp_path, monkeypatch):
    """An empty memo in a build directory of the test's own; the emitted modules' functions."""
    monkeypatch.setenv("SPECIALIZER_BUILD_DIR", str(tmp_path))
    codesizes._SEEN.clear()
    emitted: list[list[str]] = []
    real = emit.emit_object

    def counting(mod, *a, **k):
        emitted.append(sorted(f.name for f in mod.functions if not f.is_declaration))
        return real(mod, *a, **k)

    monkeypatch.setattr(codesizes.emit, "emit_object", counting)
    yield emitted
    codesizes._SEEN.clear()


def _module(size: int) -> str:
    return HEADER + KERNEL + WRAPPER.replace("%SIZE", str(size))


def _alone(text: str):
    codesizes._SEEN.clear()
    import shutil

    from specializer import tools
    shutil.rmtree(tools.build_dir() / "sizes", ignore_errors=True)
    return codesizes.code_sizes(text)


def test_a_function_sized_before_is_not_emitted_again(memo):
    first = codesizes.code_sizes(_module(64))
    assert memo[-1] == ["kernel", "wrapper"]
    assert first.bytes["kernel"] > 0 and first.bytes["wrapper"] > 0
    assert first.calls["wrapper"] == ["kernel"]

    again = codesizes.code_sizes(_module(64))
    assert memo[-1] == [] and again == first  # everything from the memo

    changed = codesizes.code_sizes(_module(100))  # only the wrapper's text differs
    assert memo[-1] == ["wrapper"]
    assert changed.bytes["kernel"] == first.bytes["kernel"]
    assert changed == _alone(_module(100))  # what an empty memo gives


def test_sizes_and_data_do_not_depend_on_what_the_memo_holds(memo):
    """The wrapper's tail call and the module's data, sized with the kernel from the memo and
    with everything emitted: the same numbers."""
    data = "@table = constant [64 x i32] zeroinitializer\n@state = global i32 7\n"
    text = HEADER + data + KERNEL + WRAPPER.replace("%SIZE", "9").replace(
        "tail call", "%v = load volatile i32, ptr @table\n  store volatile i32 %v, ptr @state\n  tail call")
    codesizes.code_sizes(_module(9))  # the kernel into the memo
    with_memo = codesizes.code_sizes(text)
    assert memo[-1] == ["wrapper"]
    assert with_memo == _alone(text)
    assert with_memo.data == 64 * 4 + 4


def test_keys_ignore_module_numbering_and_see_real_changes():
    def key(fn: str, *rest: str) -> str:
        lines = (HEADER + fn + "\n".join(rest)).split("\n")
        keys, _ = codesizes._functions(lines, irtext.function_spans(lines))
        return keys["kernel"]

    base = key(KERNEL)
    renamed = (KERNEL.replace("%loop", "%loop7").replace("loop:", "loop7:")
               .replace("!4", "!40").replace("!5", "!50").replace("!1", "!11").replace("!2", "!12"))
    assert key(renamed) == base  # value/block names and metadata ids are only numbering
    assert key(KERNEL.replace("noinline", "noinline nounwind")) != base  # attributes count
    assert key(KERNEL.replace("fmul float %x, %x", "fadd float %x, %x")) != base
    assert key(KERNEL.replace('"llvm.loop.unroll.disable"', '"llvm.loop.vectorize.enable"')) != base
    assert key(KERNEL.replace("noinline", "noinline minsize")) is None  # never from the memo
