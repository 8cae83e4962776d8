"""The call-site specializer: rounds, clone names, sizes, sections for the separate build, the
CLI's emit mode and its bad-input errors. Its FileCheck tests on hand-written modules are
tests/ir/specialize_*.ll, run from their RUN lines by tests/test_ir.py.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specializer.llvm import irtext, module, transforms
from specializer.optimize import rounds
from specializer.optimize.rounds import Specialize, specialize_rounds
from specializer.errors import UserError
from specializer.optimize.specialize import CodeSizes, specialize

IR = Path(__file__).parent / "ir"
SPECIALIZE = [sys.executable, "-m", "specializer.cli"]
HEADER = ('target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"\n'
          'target triple = "thumbv7em-unknown-none-eabihf"\n')


def test_output_is_byte_identical():
    """The same module twice in one process: the same IR and log."""
    text = (IR / "specialize_shared.ll").read_text()

    def once():
        spec = specialize_rounds(text, Specialize(mode="dims", rounds=1, max_growth=None))
        return spec.text, spec.log_text()

    assert once() == once()


MODULE = HEADER + """
@w = internal constant [3 x i32] [i32 1, i32 2, i32 3]

define internal i32 @inner(ptr %p, i32 %n) noinline {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi i32 [ 0, %entry ], [ %sum, %loop ]
  %q = getelementptr i32, ptr %p, i32 %i
  %v = load i32, ptr %q
  %sum = add i32 %acc, %v
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret i32 %sum
}

define internal i32 @outer(ptr %p, i32 %n) noinline {
  %r = call i32 @inner(ptr %p, i32 %n)
  %s = mul i32 %r, 2
  ret i32 %s
}

define i32 @run() {
  %a = call i32 @outer(ptr @w, i32 3)
  ret i32 %a
}
"""


def test_round_two_specializes_what_round_one_made_constant():
    spec = specialize_rounds(MODULE, Specialize(mode="all-args", max_growth=None, rounds=3))
    log = spec.log_text()
    # round 1: the call in @run; round 2: @inner's call, constant only once @outer's clone has
    # the constants in its body
    assert "; round 1\n#1 @run -> @outer: kept @outer.spec.446f5657" in log
    assert "; round 2\n#2 @outer.spec.446f5657 -> @inner: kept @inner.spec.3577a77d" in log
    assert [s.round for s in spec.sites] == [1, 2]
    assert spec.rounds == 2  # round 3 found nothing new and was not logged


def test_later_rounds_size_only_their_clones_and_carry_the_rest(monkeypatch):
    """Round 2's scratch build defines only its clone, the clone's callee and what they reach
    (and a stub per call site, calling it as the site did); the functions left out count for the
    flash budget with the bytes round 1 measured (here 100 per function; stubs are not counted)."""
    scratches = []

    def sizer(text):
        lines = text.split("\n")
        spans = irtext.function_spans(lines)
        scratches.append({f: lines[a] for f, (a, _) in spans.items()})
        return CodeSizes({f: 100 for f in spans},
                         {f: sorted({c for line in lines[a:b + 1] if (c := irtext.callee(line))})
                          for f, (a, b) in spans.items()})

    monkeypatch.setattr(rounds, "code_sizes", lambda text, *options: sizer(text))
    spec = specialize_rounds(MODULE, Specialize(mode="all-args", max_growth=None, rounds=3, flash_budget=450))
    first, second = scratches
    assert set(first) == {"run", "outer", "inner", "outer.spec.446f5657"}
    # round 2: the clone, its callee, and a stub standing for the clone's caller (left out)
    assert set(second) == {"inner", "inner.spec.3577a77d", "scratch.call.inner.spec.3577a77d.0"}
    assert irtext.has_keyword(second["inner.spec.3577a77d"], "internal")  # its stub keeps it
    # round 1: 4 x 100 fits 450; round 2: the 300 bytes left out + 2 x 100 defined = 500 do not
    (site,) = [s for s in spec.sites if s.round == 2]
    assert site.status == "refused" and "would need 500 bytes of flash > 450" in site.reason


def test_clone_names_are_not_reused_across_rounds():
    spec = specialize_rounds(MODULE, Specialize(mode="dims", max_growth=None, rounds=3))
    assert len(spec.clones) == len(set(spec.clones))


def test_clone_names_do_not_depend_on_call_site_order():
    """A clone is named by its callee and constants: a call site added before the others (an
    edited earlier layer) adds its clone and renames none of the others."""
    base = (IR / "specialize_shared.ll").read_text()
    edited = base.replace("  call void @relu(ptr %a, i32 16)\n",
                          "  call void @relu(ptr %b, i32 8)\n  call void @relu(ptr %a, i32 16)\n")
    assert edited != base
    before, after = (specialize(t, "dims") for t in (base, edited))
    assert [s.clone for s in before.sites] == ["relu.spec.c4722f32", "relu.spec.412d416b", "relu.spec.c4722f32"]
    assert [s.clone for s in after.sites] == ["relu.spec.4165a057", *(s.clone for s in before.sites)]


def test_clone_name_collision_gets_a_number():
    from specializer.optimize.specialize import ConstArg, clone_name

    const = (ConstArg(1, "i32 16", "i32 16"),)
    first = clone_name("relu", const)
    assert first == "relu.spec.c4722f32"
    assert clone_name("relu", const, {first}) == first + ".2"
    assert clone_name("relu", const, {first, first + ".2"}) == first + ".3"
    # a clone whose lineage is unknown is named after its root, with its own name in the hash
    assert clone_name(first, const).startswith("relu.spec.") and clone_name(first, const) != first


def test_a_clones_clone_is_named_by_everything_it_fixes():
    """f with arg 2 fixed in round 1, then arg 0 of that clone in round 2, is f with args 0 and 2
    fixed: the same name as one round fixing both (no matter which round found which)."""
    from specializer.optimize.specialize import ConstArg, Site, clone_name, lineage

    first = Site(1, 1, "run", "f", 3, (ConstArg(2, "i32 1", "i32 1"),), "kept", "f.spec.0000aaaa")
    history = lineage([first])
    assert history["f.spec.0000aaaa"] == ("f", ((2, "i32 1"),), (0, 1))
    two_rounds = clone_name("f.spec.0000aaaa", (ConstArg(0, "ptr @w", "@w"),), history=history)
    one_round = clone_name("f", (ConstArg(0, "ptr @w", "@w"), ConstArg(2, "i32 1", "i32 1")))
    assert two_rounds == one_round and two_rounds.startswith("f.spec.")
    # arg 1 of the clone is f's arg 1: another name
    assert clone_name("f.spec.0000aaaa", (ConstArg(1, "ptr @w", "@w"),), history=history) != one_round


def test_budget_needs_a_sizer_and_a_positive_factor():
    with pytest.raises(ValueError):
        specialize(MODULE, "all-args", max_growth=2.0)
    with pytest.raises(UserError, match="must be positive"):
        specialize(MODULE, "all-args", max_growth=0, sizer=lambda t: {})
    with pytest.raises(UserError, match="unknown specialization mode"):
        specialize(MODULE, "weights")


def test_code_sizes_count_what_a_function_reaches():
    sizes = CodeSizes({"wrapper": 8, "kernel": 900, "helper": 100, "clone": 300},
                      {"wrapper": ["kernel"], "kernel": ["helper", "memcpy"], "clone": ["helper"]})
    assert sizes.reach("wrapper") == {"wrapper", "kernel", "helper"}  # memcpy: not defined here
    assert sizes.total(sizes.reach("wrapper")) == 1008
    assert sizes.reach("clone") - sizes.reach("wrapper") == {"clone"}


def test_json_log_lists_every_site():
    spec = specialize(MODULE, "all-args")
    data = json.loads(spec.log_json())
    assert data["mode"] == "all-args" and data["counts"] == {"kept": 1, "shared": 0, "refused": 0}
    (site,) = data["sites"]
    assert site["caller"] == "run" and site["callee"] == "outer" and site["clone"] == "outer.spec.446f5657"
    assert [a["summary"] for a in site["const"]] == ["@w (i32[3], 12 bytes, constant)", "i32 3"]


def test_internalize_keeps_libcall_targets():
    """llvm.roundeven.f32 becomes a call of roundevenf only in the code generator: its definition
    (libjit provides it) must survive internalize + globaldce; an unused helper must not."""
    from specializer.llvm import module

    mod = module.parse(HEADER + """
define float @roundevenf(float %x) { ret float %x }
define void @helper() { ret void }
define float @run(float %x) {
  %r = call float @llvm.roundeven.f32(float %x)
  ret float %r
}
declare float @llvm.roundeven.f32(float)
""", "t.ll")
    assert transforms.internalize(mod, {"run"}) == ["run"]
    text = str(mod)
    assert "define float @roundevenf(" in text
    assert "@helper" not in text


def test_with_sections_gives_every_symbol_its_own_section():
    text = str(module.parse(HEADER + """
@c = internal constant [2 x i32] [i32 1, i32 2], align 4
@z = global [8 x i8] zeroinitializer, align 8
@d = global i32 5
define void @f() #0 { ret void }
attributes #0 = { nounwind }
""", "t.ll"))
    out = irtext.with_sections(text)
    module.parse(out, "t.ll")
    assert 'define void @f() #0 section ".text.f" {' in out
    assert '@c = internal constant [2 x i32] [i32 1, i32 2], section ".rodata.c", align 4' in out
    assert '@z = global [8 x i8] zeroinitializer, section ".bss.z", align 8' in out
    assert '@d = global i32 5, section ".data.d"' in out


# --------------------------------------------------------------------------- the CLI


def run_cli(*args, cwd=None):
    return subprocess.run([*SPECIALIZE, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def assert_one_line_error(r, *fragments):
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("specialize: error: ")
    for f in fragments:
        assert f in lines[0], lines[0]


def test_emit_writes_the_specialized_module(tmp_path):
    ll = tmp_path / "kernel.ll"
    ll.write_text(MODULE)
    spec_ll, opt_ll, log = tmp_path / "s.ll", tmp_path / "o.ll", tmp_path / "spec.log"
    r = run_cli("--all-args", ll, "--emit", "specialized-ll", "-o", spec_ll, "--log", log)
    assert r.returncode == 0, r.stderr
    spec = spec_ll.read_text()
    assert "i32 @outer.spec.446f5657()" in spec and "i32 @inner.spec.3577a77d()" in spec  # rounds 1 and 2
    assert "#1 @run -> @outer (call 2): kept @outer.spec.446f5657" in log.read_text()  # call 1: in @outer
    r = run_cli("--all-args", ll, "-S", "-o", opt_ll)
    assert r.returncode == 0, r.stderr
    opt = opt_ll.read_text()
    # @inner's loop over the constant weights is unrolled by O2 and folded: 1 + 2 + 3
    assert "i32 @inner.spec.3577a77d()" in opt and "ret i32 6" in opt


def test_wrong_target_triple(tmp_path):
    ll = tmp_path / "model.ll"
    ll.write_text('target triple = "aarch64-unknown-linux-gnu"\ndefine void @f() {\n  ret void\n}\n')
    assert_one_line_error(run_cli("--all-args", ll), "aarch64-unknown-linux-gnu", "expected thumbv7em")


def test_no_entry_point(tmp_path):
    ll = tmp_path / "lib.ll"
    ll.write_text(HEADER + "define internal void @f() {\n  ret void\n}\n")
    assert_one_line_error(run_cli("--all-args", ll), "no entry point")


def test_manifest_entry_missing_from_module(tmp_path, captured):
    c = captured("quadratic")
    (tmp_path / "model.json").write_text(c.manifest_json.read_text())
    ll = tmp_path / "model.ll"
    ll.write_text(c.model_ll.read_text().replace("@quadratic_run(", "@renamed_run("))
    assert_one_line_error(run_cli(ll), "no entry point", "quadratic_run")


def test_xla_module_without_kernels(tmp_path):
    ll = tmp_path / "fusion.ir-no-opt.ll"
    ll.write_text('target triple = "x86_64-unknown-linux-gnu"\n'
                  "define internal void @helper() {\n  ret void\n}\n")
    assert_one_line_error(run_cli(ll), "no entry point", "XLA kernel")


def test_xla_optimized_ir_is_refused(tmp_path):
    ll = tmp_path / "fusion.ir-with-opt.ll"
    ll.write_text('target triple = "x86_64-unknown-linux-gnu"\n')
    assert_one_line_error(run_cli(ll), "ir-no-opt.ll")


def test_raw_xla_kernel_module_is_built_not_run(tmp_path):
    r = run_cli(IR / "retarget_x86_kernel.ll", "--all-args", "-o", tmp_path / "out", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["kind"] == "xla-kernels"
    assert [v["variant"] for v in data["variants"]] == ["separate", "lto", "llvm-funcspec", "dims", "all-args"]
    assert all(v["status"] == "not run" and v["insns"] is None for v in data["variants"])
    assert all(v["text"] > 0 for v in data["variants"])
    # flash is known without a run; RAM needs the stack, which only a run measures
    assert all(v["flash"] >= v["text"] and v["ram"] is None and v["stack"] is None for v in data["variants"])
    assert (tmp_path / "out" / "all-args" / "specialization.log").is_file()
    table = run_cli(IR / "retarget_x86_kernel.ll", "--variants", "lto", "-o", tmp_path / "t")
    assert "not run: no inputs" in table.stdout
