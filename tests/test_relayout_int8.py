"""relayout.const_convs: the all-args rule sending int8 convs with constant per-channel
parameters to shim_convolve_wrapper_s8_const / shim_convolve_s8_const (and only those, only on
the shim)."""

from pathlib import Path

from specializer.optimize import callsites, relayout

MODULE = """@q = constant { ptr, ptr } { ptr @m, ptr @s }
@m = constant [2 x i32] [i32 1073741824, i32 1518500250]
@s = constant [2 x i32] [i32 -3, i32 -4]
@b = constant [2 x i32] [i32 5, i32 -7]
@bvar = global [2 x i32] zeroinitializer

define void @f(ptr %x, ptr %y) {
  %a = call i32 @arm_convolve_s8(ptr @c, ptr @p, ptr @q, ptr @d, ptr %x, ptr @d, ptr @w, ptr @d, ptr @b, ptr null, ptr @d, ptr %y)
  %b = call i32 @arm_convolve_s8(ptr @c, ptr @p, ptr @q, ptr @d, ptr %x, ptr @d, ptr @w, ptr @d, ptr @bvar, ptr null, ptr @d, ptr %y)
  ret void
}

declare i32 @arm_convolve_s8(ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr)
"""


def test_constant_conv_calls_the_unrolled_kernel_and_is_logged():
    text, notes = relayout.const_convs(MODULE, shim=True)
    calls = [ln for ln in text.splitlines() if " call " in ln]
    assert "@shim_convolve_s8_const(ptr @c, ptr @p, ptr @q," in calls[0]
    assert "@arm_convolve_s8(" in calls[1]  # bias is a mutable global: left alone
    assert "declare i32 @shim_convolve_s8_const(" in text
    assert [n.kernel for n in notes] == ["shim_convolve_s8_const", ""]
    assert "calls @shim_convolve_s8_const" in notes[0].log_line()
    assert "not a constant global" in notes[1].log_line()


def test_constant_wrapper_call_calls_the_unrolled_wrapper():
    wrapper = MODULE.replace("@arm_convolve_s8(", "@arm_convolve_wrapper_s8(").replace("ptr null, ", "")
    wrapper = wrapper.replace("ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr)", "ptr, " * 10 + "ptr)")
    text, notes = relayout.const_convs(wrapper, shim=True)
    calls = [ln for ln in text.splitlines() if " call " in ln]
    assert "@shim_convolve_wrapper_s8_const(ptr @c, ptr @p, ptr @q," in calls[0] and calls[0].endswith("ptr %y)")
    assert "@arm_convolve_wrapper_s8(" in calls[1]
    assert "declare i32 @shim_convolve_wrapper_s8_const(" + "ptr, " * 10 + "ptr)" in text
    assert "shim_convolve_s8_const" not in text
    assert [n.kernel for n in notes] == ["shim_convolve_wrapper_s8_const", ""]
    assert "left on arm_convolve_wrapper_s8 (quant params or bias not" in notes[1].log_line()
    text, notes = relayout.const_convs(wrapper, shim=False)
    assert text == wrapper and "has no shim_convolve_wrapper_s8_const" in notes[0].log_line()


def test_a_call_chosen_shape_only_is_left_alone():
    numbered = callsites.number(MODULE)
    text, notes = relayout.const_convs(numbered, shim=True, skip=frozenset({1}))
    assert text == numbered and [n.kernel for n in notes] == [""]  # call 2's bias is mutable anyway
    text, notes = relayout.relayout(numbered, True, frozenset({2}))
    assert "@shim_convolve_s8_const(ptr @c" in text.splitlines()[7]


def test_real_cmsis_nn_checkout_keeps_arm_convolve_s8():
    text, notes = relayout.const_convs(MODULE, shim=False)
    assert text == MODULE
    assert all(not n.kernel for n in notes) and "checkout" in notes[0].log_line()


def test_only_all_args_relays_out(monkeypatch):
    # dims must never get the rule: optimized() calls relayout for all-args alone
    seen = []
    monkeypatch.setattr(relayout, "relayout", lambda text, *a: (seen.append(text), (text, ()))[1])
    from specializer.optimize import link, variants

    class Stop(Exception):
        pass

    def stop(*a, **k):
        raise Stop

    monkeypatch.setattr(link, "linked", stop)
    model = type("M", (), {"text": MODULE, "path": Path("m.ll"), "shapes": {}})()  # what a pipeline reads
    for variant in ("dims", "lto", "llvm-funcspec"):
        try:
            variants.optimized(model, variant)
        except Stop:
            pass
    assert seen == []
    try:
        variants.optimized(model, "all-args")
    except Stop:
        pass
    assert seen == [callsites.number(MODULE)]  # relayout sees the model's calls numbered


def test_shape_only_call_is_measured_and_bit_exact(tmp_path, monkeypatch):
    """A comparison rebuilds all-args with the calls callchoice picks (here forced: call 1, the
    conv) shape-only, runs both builds, keeps the faster, and the rebuild is bit-exact too."""
    from specializer import inputs
    from specializer.capture.capture import capture
    from specializer.optimize import variants
    from specializer.driver import callchoice
    from specializer.driver.compare import compare

    model_py = Path(__file__).parent / "data" / "int8_blocks" / "blocks_model.py"
    c = capture(model_py, "conv", tmp_path / "cap")
    model = inputs.load(c.model_ll)
    picked = []
    monkeypatch.setattr(callchoice, "choose", lambda dims, all_args: picked.append(set(all_args)) or frozenset({1}))
    # one job: the rebuilds run in this process, where the patched choice records what it saw
    comp = compare(model, tmp_path / "cmp", variants.Options.of(unroll_candidates=()), which=("dims", "all-args"),
                   jobs=1)
    assert picked and all(p == {1} for p in picked)  # the conv call was costed in each build
    row = comp.row("all-args")
    assert row.status == "pass" and row.max_abs_err == 0
    assert row.shape_only in ((), (1,)) and not (tmp_path / "cmp" / ".unroll").exists()
    kept = (tmp_path / "cmp" / "all-args" / "pipeline.txt").read_text()
    assert ("shape-only=1" in kept) == (row.shape_only == (1,))

    # the shape-only build itself: the conv stays on the form it called, specialized by dims' rule
    only = compare(model, tmp_path / "only", variants.Options.of(unroll_candidates=(), shape_only=frozenset({1})),
                   which=("all-args",))
    r = only.row("all-args")
    assert r.status == "pass" and r.max_abs_err == 0 and r.shape_only == (1,)
    log = (tmp_path / "only" / "all-args" / "specialization.log").read_text()
    assert "-> @arm_convolve_s8 (call 1, shape-only): kept" in log
    assert "shim_convolve_s8_const" not in log and "shim_convolve_wrapper_s8_const" not in log


def _body(text: str, prefix: str) -> list[str]:
    """The lines of the one function of `text` whose name starts with `prefix`."""
    (start,) = [i for i, ln in enumerate(text.splitlines()) if ln.startswith("define") and f"@{prefix}" in ln]
    lines = text.splitlines()[start:]
    return lines[:lines.index("}") + 1]


def test_wrapper_dispatch_folds_away_once_specialized(tmp_path):
    """A pointwise conv captured as the form the wrapper picks (arm_convolve_1x1_s8_fast): in dims
    its clone is the 1x1 form's code with no call left and no other form in the optimized IR; in
    all-args the call goes to libjit_conv_s8 (relayout_conv.py), whose clone is all that is left:
    no CMSIS-NN conv and no const wrapper."""
    from specializer import inputs
    from specializer.capture.capture import capture
    from specializer.optimize import variants

    c = capture(Path(__file__).parent / "data" / "int8_blocks" / "blocks_model.py", "pointwise_fast", tmp_path / "c")
    model = inputs.load(c.model_ll)
    dims = variants.build(model, "dims", tmp_path / "dims")
    text = (dims.dir / "optimized.ll").read_text()
    for other in ("arm_convolve_s8", "arm_convolve_1x1_s8(", "arm_convolve_1x1_s8.", "arm_convolve_1_x_n_s8",
                  "arm_convolve_wrapper_s8"):
        assert f"@{other}" not in text, other
    body = _body(text, "arm_convolve_1x1_s8_fast.spec.")
    assert not any(" call " in ln and "@arm_" in ln for ln in body)  # the 1x1 form's code, inlined
    args = variants.build(model, "all-args", tmp_path / "all-args")
    text = (args.dir / "optimized.ll").read_text()
    assert "@arm_convolve" not in text and "@shim_convolve" not in text
    body = _body(text, "pointwise_fast_run")
    calls = [ln for ln in body if " call " in ln and "@llvm." not in ln]
    assert calls and all("@libjit_conv_s8." in ln for ln in calls), calls
