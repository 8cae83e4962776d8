"""Textual pass pipelines (pipeline.py): parse and print round-trip, one-line errors, the CLI's
--print-pipeline and `opt`, and `opt` rerunning a build's pipeline.txt on its linked.ll giving
its optimized.ll byte for byte."""

import subprocess
import sys

import pytest

from specializer import inputs

from specializer.optimize import pipeline, variants
from specializer.errors import UserError
from specializer.optimize.pipeline import O2, Constprop, Link, RelayoutPass, Specialize

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]
OPTIONS = [variants.Options(),
           variants.Options.of(max_growth=None, flash_budget=None, unroll_threshold=1000, rounds=3, pre_unroll=True),
           variants.Options.of(max_growth=0.5, flash_budget=65536, unroll_threshold=0, rounds=1),
           variants.Options.of(shape_only=frozenset({11, 3, 7}))]


@pytest.mark.parametrize("variant", variants.VARIANTS)
@pytest.mark.parametrize("options", OPTIONS, ids=["default", "no-budgets", "tight", "shape-only"])
def test_variant_pipelines_round_trip(variant, options):
    steps = variants.pipeline_for(variant, options)
    text = pipeline.to_text(steps)
    assert pipeline.parse(text) == steps
    assert pipeline.to_text(pipeline.parse(text)) == text


def test_options_left_out_take_their_defaults():
    assert pipeline.parse(" link , specialize{ mode = all-args },O2") == (Link(), Specialize(mode="all-args"), O2())
    assert pipeline.parse("constprop{unroll=true,unroll-threshold=llvm}") == (Constprop(unroll=True),)
    assert pipeline.parse("specialize{max-growth=2}")[0].max_growth == 2.0
    assert pipeline.to_text((Specialize(max_growth=None, unroll_threshold=500),)) == (
        "specialize{mode=dims,rounds=8,max-growth=none,flash-budget=4128768,unroll-threshold=500,pre-unroll=false,"
        "shape-only=none}")
    assert pipeline.parse("specialize{shape-only=7+3}")[0].shape_only == frozenset({3, 7})
    assert "relayout{shape-only=3+7+11,widen=0.5,unpack4=1.0}" in pipeline.to_text(
        variants.pipeline_for("all-args", variants.Options.of(shape_only=frozenset({11, 3, 7}))))
    assert "shape-only=none" in pipeline.to_text(  # dims has no shape-only calls: it is all shapes
        variants.pipeline_for("dims", variants.Options.of(shape_only=frozenset({3}))))


@pytest.mark.parametrize("text, message", [
    ("O2,nosuch", "unknown pass 'nosuch' (have: relayout, link, specialize, bufalias, constprop, O2, "
                  "llvm-funcspec, zeroweights, cleanup, normalize, retarget, fminmax, inline-asm;"),
    ("specialize{bogus=1}", "pass 'specialize' has no option 'bogus' (its options: mode, rounds, max-growth, "
                            "flash-budget, unroll-threshold, pre-unroll, shape-only)"),
    ("specialize{shape-only=3,7}", "pass 'specialize' has no option '7'"),
    ("specialize{shape-only=0}", "shape-only takes call numbers joined by + (3+7+11), or none"),
    ("relayout{shape-only=3+x},link", "shape-only takes call numbers joined by + (3+7+11), or none"),
    ("bufalias{x=1}", "pass 'bufalias' has no option 'x' (its options: none)"),
    ("specialize{rounds=0}", "specialize{rounds=0}: rounds takes an integer >= 1"),
    ("specialize{mode=weights}", "mode takes dims or all-args"),
    ("O2{unroll-threshold=lots}", "unroll-threshold takes an integer >= 0, or llvm"),
    ("specialize{max-growth=-1}", "max-growth takes a positive number, or none"),
    ("constprop{unroll}", "constprop{unroll}: write unroll=VALUE (true or false)"),
    ("O2{unroll-threshold=1,unroll-threshold=2}", "option 'unroll-threshold' given twice"),
    ("O2{", "'{' without '}'"),
    ("O2}", "'}' without '{'"),
    ("O2,,link", "'' is not a pass"),
    ("link,relayout", "'relayout' acts on the model before linking: it goes before 'link'"),
    ("relayout,O2", "'relayout' acts on the model before linking"),
    ("O2,link", "'O2' acts on the linked module: it goes after 'link'"),
    ("link,link", "'link' appears more than once"),
])
def test_bad_pipeline_is_one_clear_error(text, message):
    with pytest.raises(UserError) as e:
        pipeline.parse(text)
    assert message in str(e.value) and "\n" not in str(e.value)


def cli(*args, **kw):
    return subprocess.run([*SPECIALIZE, *map(str, args)], capture_output=True, text=True, **kw)


def test_model_passes_alone_rewrite_the_model():
    """`opt -passes=relayout model.ll` prints the model relayout made (tests/ir/relayout_*.ll)."""
    assert pipeline.parse("relayout") == (RelayoutPass(),)
    assert pipeline.needs_model(pipeline.parse("relayout"))


def test_unknown_pass_is_one_line_and_exit_2(tmp_path):
    r = cli("opt", "-passes=link,O2,nosuch", tmp_path / "linked.ll")  # reported before the file is read
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("specialize: error: pass pipeline: unknown pass 'nosuch' (have: relayout, link,")
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_print_pipeline_one_line_per_variant():
    r = cli("--print-pipeline", "--all-args", "--unroll-threshold", "1000", "--max-growth", "3")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [ln.split(": ", 1)[0] for ln in lines] == list(variants.VARIANTS)
    options = variants.Options.of(unroll_threshold=1000, max_growth=3.0, unroll_candidates=())
    for line in lines:
        v, text = line.split(": ", 1)
        assert pipeline.parse(text) == variants.pipeline_for(v, options)
    # auto: each threshold a comparison measures, one line each
    r = cli("--print-pipeline", "--variants", "lto,dims")
    assert [ln.split(": ", 1)[0] for ln in r.stdout.splitlines()] == ["lto", "dims (auto, llvm)", "dims (auto, 1000)"]


def test_help_opt_lists_every_pass_and_option():
    for args in (("help", "opt"), ("opt", "--help")):
        r = cli(*args)
        assert r.returncode == 0, r.stderr
        for name, p in pipeline.PASSES.items():
            assert f"  {name}  [" in r.stdout
            for f in pipeline.fields(p):
                assert f"{f.name.replace('_', '-')}=<" in r.stdout


def test_opt_on_linked_ll_reproduces_optimized_ll(captured, tmp_path):
    c = captured("mlp")
    model = inputs.load(c.model_ll)
    # llvm-funcspec numbers its clones by use-list order: linked.ll must keep it (pipeline.py)
    for v in ("lto", "llvm-funcspec", "dims", "all-args"):
        b = variants.build(model, v, tmp_path / v, variants.Options.of(unroll_threshold=1000))
        steps = (b.dir / "pipeline.txt").read_text()
        assert steps.endswith("\n") and steps.count("\n") == 1
        assert pipeline.parse(steps) == pipeline.after_link(variants.pipeline_for(v, variants.Options.of(
            unroll_threshold=1000)))
        manifest = ("--manifest", c.manifest_json) if v == "dims" else ()  # which globals are weights
        r = cli("opt", "-passes=" + steps.strip(), b.dir / "linked.ll", "-o", tmp_path / f"{v}.ll", *manifest)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / f"{v}.ll").read_bytes() == (b.dir / "optimized.ll").read_bytes(), v
    # the whole printed pipeline, from the model: the same module and log; a cut one runs as well
    full = pipeline.to_text(variants.pipeline_for("all-args", variants.Options.of(unroll_threshold=1000)))
    r = cli("opt", "-p", full, c.model_ll, "--log", tmp_path / "log.txt")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (tmp_path / "all-args" / "optimized.ll").read_text()
    assert (tmp_path / "log.txt").read_text() == (tmp_path / "all-args" / "specialization.log").read_text()
    cut = full.rsplit(",zeroweights", 1)[0]
    assert cut != full
    r = cli("opt", "-p", cut.split("link,", 1)[1], tmp_path / "all-args" / "linked.ll")
    assert r.returncode == 0 and r.stdout.startswith("; ModuleID = 'specialized.ll'"), r.stderr
    # a linked.ll is linked already: one line says to run only what follows `link`
    r = cli("opt", "-p", "link,O2", tmp_path / "lto" / "linked.ll")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "linked.ll: already linked (it defines libjit's kernels): run only the steps after 'link'" in r.stderr


def test_pipeline_text_and_context_determine_the_module(captured, monkeypatch):
    """Passes read the kernel library and the CMSIS-NN from the context they are given, never from
    the environment: with a context in hand, a $SPECIALIZER_CMSIS_NN naming no checkout (which
    cmsis.cmsis_nn() refuses) changes nothing."""
    from specializer.optimize.state import BuildContext, BuildState

    model = inputs.load(captured("mlp").model_ll)
    context = BuildContext.default()
    text = pipeline.to_text(variants.pipeline_for("all-args", variants.Options.of(unroll_threshold=1000)))

    def optimized() -> str:
        return pipeline.run(pipeline.parse(text), BuildState.of_model(model, context)).as_text()

    want = optimized()
    monkeypatch.setenv("SPECIALIZER_CMSIS_NN", "/nonexistent/cmsis-nn")
    with pytest.raises(UserError):
        BuildContext.default()  # the environment alone would now fail the build
    assert optimized() == want


def test_opt_guards_a_module_read_as_written(tmp_path):
    """opt reads a module as written (so reading's rewrites can run as passes), yet what would kill
    LLVM's backend is still one line, exit 2, as for every input (module.parse_input)."""
    ll = tmp_path / "x86.ll"
    ll.write_text("declare void @llvm.x86.sse2.pause()\ndefine void @f() {\n  call void @llvm.x86.sse2.pause()\n"
                  "  ret void\n}\n")
    for passes in ((), ("-passes=O2",), ("-passes=normalize,O2",)):
        r = cli("opt", *passes, ll)
        assert r.returncode == 2 and r.stdout == "", (passes, r.stdout)
        assert r.stderr.strip().splitlines() == [
            f"specialize: error: {ll}:1: calls the x86 intrinsic llvm.x86.sse2.pause, which Cortex-M4 has no "
            "instruction for"], passes
