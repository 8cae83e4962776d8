"""A function built without the machine scheduler (target features -use-misched and
+disable-postra-scheduler, as libkernels/matmul_f32.c's are) keeps loads written together
together (with emit.CODEGEN_OPTIONS' -pre-RA-sched=source): on the Cortex-M4 a load right
after a load costs 1 cycle instead of 2, and the scheduler would put each load next to its use,
between the multiply-adds. The IR below is what vecmat's 16-column step becomes: two groups of 8
weight loads, each before its 8 products."""

from __future__ import annotations

import re

from specializer.llvm import emit, module
from specializer.library import libjit

NO_MISCHED = "-use-misched,+disable-postra-scheduler"


def _panel(features: str | None) -> str:
    lines = ['target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"',
             'target triple = "thumbv7em-none-unknown-eabihf"',
             "define void @panel(ptr noalias %w, ptr noalias %x, ptr noalias %acc, i32 %k) #0 {",
             "entry:", "  br label %loop", "loop:", "  %p = phi i32 [0, %entry], [%p1, %loop]"]
    lines += [f"  %a{i} = phi float [0.0, %entry], [%s{i}, %loop]" for i in range(16)]
    lines += ["  %xp = getelementptr float, ptr %x, i32 %p", "  %v = load float, ptr %xp, align 4",
              "  %row = mul i32 %p, 64", "  %wp = getelementptr float, ptr %w, i32 %row"]
    for g in (0, 8):
        for i in range(g, g + 8):
            lines += [f"  %q{i} = getelementptr float, ptr %wp, i32 {i}",
                      f"  %w{i} = load float, ptr %q{i}, align 4"]
        for i in range(g, g + 8):
            lines += [f"  %m{i} = fmul float %v, %w{i}", f"  %s{i} = fadd float %a{i}, %m{i}"]
    lines += ["  %p1 = add i32 %p, 1", "  %c = icmp slt i32 %p1, %k",
              "  br i1 %c, label %loop, label %done", "done:"]
    for i in range(16):
        lines += [f"  %o{i} = getelementptr float, ptr %acc, i32 {i}",
                  f"  store float %s{i}, ptr %o{i}, align 4"]
    attrs = f'"target-cpu"="cortex-m4" "target-features"="{features}"' if features else '"target-cpu"="cortex-m4"'
    return "\n".join(lines + ["  ret void", "}", f"attributes #0 = {{ {attrs} }}", ""])


def _load_runs(features: str | None) -> list[int]:
    mod = module.parse(_panel(features), "panel.ll")
    asm = emit.emit_assembly(mod)
    body = asm[asm.index("panel:"):]
    mnemonics = [line.split()[0] for line in body.splitlines()
                 if line.startswith("\t") and not line.startswith("\t.")]
    return [r.count("vldr") for r in re.findall(r"(?:vldr )+", " ".join(mnemonics) + " ")]


def test_grouped_loads_stay_grouped():
    runs = _load_runs(NO_MISCHED)
    # 16 weight loads (+ x's): each group of 8 in one run of loads, none spread between products
    assert sorted(runs)[-2:] >= [8, 8], runs
    assert sum(r for r in runs if r >= 8) >= 16, runs


def test_the_scheduler_spreads_them():
    """What the features are for: with the machine scheduler, no run of 8 loads is left."""
    assert max(_load_runs(None)) < 8


def test_matmul_kernels_are_built_without_the_scheduler():
    """libkernels/matmul_f32.c's pragma reaches the bitcode; other kernels keep the scheduler."""
    text = str(module.parse_bitcode(libjit.build().bitcode))
    groups = dict(re.findall(r"^attributes #(\d+) = \{ (.*) \}$", text, re.M))

    def features(name: str) -> str:
        group = re.search(rf"^define [^\n]*@{name}\([^\n]*\) [^\n]*#(\d+)", text, re.M)
        assert group, name
        return groups[group.group(1)]

    for name in ("libjit_matmul_f32", "jitk_gemm_f32"):
        assert "-use-misched" in features(name) and "+disable-postra-scheduler" in features(name), name
    assert "use-misched" not in features("libjit_conv2d_f32")
