"""Call numbers (callsites.py) and the per-call choice of shape-only clones (callchoice.py)."""

import pytest

from specializer.llvm import module
from specializer.optimize import callsites
from specializer.driver import callchoice
from specializer.driver.callchoice import CallCost

MODEL = """\
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

declare void @kernel(ptr, i32)
declare float @llvm.maxnum.f32(float, float)

define internal void @"fused.1"(ptr %p) {
entry:
  call void @kernel(ptr %p, i32 4)
  ret void
}

define void @run(ptr %a) {
entry:
  %x = call float @llvm.maxnum.f32(float 1.0, float 2.0)
  call void @"fused.1"(ptr %a)
  tail call void @kernel(ptr %a, i32 8), !dbg !0
  ret void
}

!0 = !{i32 99}
"""


def test_number_tags_each_call_of_a_function_in_module_order():
    text = callsites.number(MODEL)
    module.parse(text, "numbered.ll")  # still valid IR
    # intrinsics are not the model's calls; existing metadata keeps its ids
    assert callsites.calls(text) == [("fused.1", "kernel", 1), ("run", "fused.1", 2), ("run", "kernel", 3)]
    assert "tail call void @kernel(ptr %a, i32 8), !dbg !0, !specializer.call !3" in text
    assert "!1 = !{i32 1}" in text and "!0 = !{i32 99}" in text
    assert "llvm.maxnum.f32(float 1.0, float 2.0)\n" in text


def test_number_is_idempotent_and_survives_llvm_printing():
    once = callsites.number(MODEL)
    assert callsites.number(once) == once
    printed = str(module.parse(once, "numbered.ll"))  # LLVM renumbers the metadata nodes
    assert [n for _, _, n in callsites.calls(printed)] == [1, 2, 3]


def test_a_module_without_calls_is_unchanged():
    text = MODEL.replace('  call void @kernel(ptr %p, i32 4)\n', '').replace(
        '  call void @"fused.1"(ptr %a)\n  tail call void @kernel(ptr %a, i32 8), !dbg !0\n', '')
    assert callsites.number(text) == text


@pytest.mark.parametrize("text", ["", "3,7", "0", "3+", "x", "-1"])
def test_call_sets_are_positive_numbers_joined_by_plus(text):
    with pytest.raises(ValueError):
        callsites.parse_set(text)


def test_call_sets_round_trip():
    assert callsites.parse_set("11+3+7") == frozenset({3, 7, 11})
    assert callsites.format_set(frozenset({11, 3, 7})) == "3+7+11"


SPECIALIZED = """\
define void @run() {
entry:
  call void @conv.spec.a(), !specializer.call !0
  call void @conv.spec.a(), !specializer.call !1
  call void @add.spec.b(), !specializer.call !2
  call void @gone.spec.c(), !specializer.call !3
  ret void
}
!0 = !{i32 1}
!1 = !{i32 2}
!2 = !{i32 3}
!3 = !{i32 4}
"""

OPTIMIZED = """\
define void @run() {
entry:
  tail call fastcc void @conv.spec.a()
  tail call fastcc void @conv.spec.a()
  tail call fastcc void @add.spec.b()
  ret void
}
define internal fastcc void @conv.spec.a() {
  call void @memclr.spec.d()
  ret void
}
define internal fastcc void @add.spec.b() {
  call void @memclr.spec.d()
  ret void
}
define internal void @memclr.spec.d() {
  ret void
}
"""


def test_call_costs_follow_the_callee_and_split_shared_callees_by_entries():
    profile = [dict(name="conv.spec.a", cycles=1000, calls=2), dict(name="add.spec.b", cycles=300, calls=1),
               dict(name="memclr.spec.d", cycles=90, calls=3), dict(name="run", cycles=10, calls=1)]
    costs = callchoice.call_costs(SPECIALIZED, OPTIMIZED, profile)
    # conv: 1000 own + 2/3 of memclr's 90, over its 2 entries; add: 300 + 1/3 of 90
    assert costs == {1: CallCost(1, "conv.spec.a", 530.0), 2: CallCost(2, "conv.spec.a", 530.0),
                     3: CallCost(3, "add.spec.b", 330.0)}  # call 4's callee was inlined away: no cost


def test_choose_takes_the_calls_dims_ran_faster():
    dims = {1: CallCost(1, "conv.spec.x", 500.0), 2: CallCost(2, "conv.spec.x", 500.0),
            3: CallCost(3, "add.spec.y", 300.0)}
    all_args = {1: CallCost(1, "conv.spec.a", 530.0), 2: CallCost(2, "conv.spec.b", 480.0),
                3: CallCost(3, "add.spec.b", 300.0), 4: CallCost(4, "pool.spec.c", 9.0)}
    assert callchoice.choose(dims, all_args) == frozenset({1})  # a tie or a call dims lacks stays
