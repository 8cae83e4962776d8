"""The five variants of a captured model on QEMU: all match JAX, a rebuild is byte-identical, and
the per-function profile adds up to the measured run."""

import json
import subprocess
import sys

from specializer import inputs

from specializer.optimize import variants

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]
ARTIFACTS = ("linked.ll", "specialized.ll", "optimized.ll", "specialization.log", "specialization.json",
             "linked.diff.ll", "specialized.diff.ll", "optimized.diff.ll")


def test_every_variant_passes_and_rebuild_is_identical(captured, tmp_path):
    c = captured("mlp")  # XLA kernels with call frames and libjit matmul calls
    out = tmp_path / "a"
    r = subprocess.run([*SPECIALIZE, "--all-args", c.model_ll, "-o", out, "--json", "--diff-text"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    rows = {v["variant"]: v for v in data["variants"]}
    assert list(rows) == ["separate", "lto", "llvm-funcspec", "dims", "all-args"]
    for v in rows.values():
        # ran on QEMU and produced JAX's outputs within the manifest's tolerance
        assert v["status"] == "pass", v
        assert v["within_rtol"] is True and v["rtol"] == 1e-5
        assert "max_rel_err" not in v and "max_abs_err" not in v  # host-dependent digits stay out
        assert v["insns"] > 0 and v["cycles"] >= v["insns"]
        assert v["text"] > 0
        # flash and RAM as the rows define them, the measured stack included
        assert v["flash"] == v["text"] + v["rodata"] + v["data"] + v["lib_flash"]
        assert v["ram"] == v["static_ram"] + v["stack"] and v["stack"] > 0
    # separate counts the kernel library's object too: the matmul kernel is in its .text
    sep = out / "separate"
    assert "libjit_matmul_f32" in (sep / "profile.txt").read_text()
    assert rows["separate"]["vs_separate"]["flash"] == {"ratio": 1.0, "percent": 0.0}
    assert rows["all-args"]["clones"] > 0
    # the constant call frames and the weights were specialized, with their shapes in the log
    log = (out / "all-args" / "specialization.log").read_text()
    assert "arg 0 = @dot" not in log  # (mlp has no XLA dot kernels: libjit does the dots)
    assert "@mlp_w_w1 (f32[16x32], 2048 bytes, constant)" in log
    assert ".frame0 ({ ptr, ptr, i64, ptr }, 24 bytes, constant)" in log
    assert "@mlp_w_w1" not in (out / "dims" / "specialization.log").read_text().split("; round 2")[0]

    # per-function profile: the entry is there, and the functions add up to the run
    prof = json.loads((out / "all-args" / "profile.json").read_text())
    assert "mlp_run" in [f["name"] for f in prof]
    assert sum(f["insns"] for f in prof) == rows["all-args"]["insns"]
    assert sum(f["cycles"] for f in prof) == rows["all-args"]["cycles"]

    # rebuild (no run): every artifact a person diffs is byte-identical
    model = inputs.load(c.model_ll)
    for v in ("lto", "all-args"):  # with the unroll threshold and shape-only calls the comparison measured fastest
        o = variants.Options.of(unroll_threshold=rows[v]["unroll_threshold"], shape_only=frozenset(rows[v]["shape_only"]))
        variants.build(model, v, tmp_path / "b" / v, o, diff_text=True)
        assert (out / v / "optimized.diff.ll").exists() and (out / v / "linked.diff.ll").exists()
        # not asked for: no diff-oriented text, the rest the same
        variants.build(model, v, tmp_path / "c" / v, o)
        assert not list((tmp_path / "c" / v).glob("*.diff.ll"))
        assert (tmp_path / "c" / v / "optimized.ll").read_bytes() == (out / v / "optimized.ll").read_bytes()
        for name in ARTIFACTS:
            first = out / v / name
            if first.exists():
                assert (tmp_path / "b" / v / name).read_bytes() == first.read_bytes(), f"{v}/{name}"
        assert (tmp_path / "b" / v / "model.o").read_bytes() == (out / v / "model.o").read_bytes()
    assert (out / "report.json").read_text().count("/tmp") == 0  # no paths in the report


def test_pruned_weights_relaid_out_only_in_all_args(captured, tmp_path):
    """mlp256_pruned (80% zeros): all-args runs both layers on the sparse kernel with compressed
    copies of the weights, and still produces JAX's outputs; dims keeps the dense kernel."""
    from specializer.driver.compare import compare

    c = captured("mlp256_pruned")
    comp = compare(inputs.load(c.model_ll), tmp_path, which=("dims", "all-args"))
    assert comp.passed, comp.rows
    log = (tmp_path / "all-args" / "specialization.log").read_text()
    assert log.count("re-laid out as compressed sparse columns") == 2
    assert "libjit_vecmat_csc_f32" in (tmp_path / "all-args" / "optimized.ll").read_text()
    assert "libjit_vecmat_csc_f32" not in (tmp_path / "dims" / "optimized.ll").read_text()
    relaid = json.loads((tmp_path / "all-args" / "relayout.json").read_text())
    assert {r["weight"] for r in relaid} == {"mlp256_pruned_w_w1", "mlp256_pruned_w_w2"}
    assert all(r["nonzeros"] <= 0.2 * r["shape"][0] * r["shape"][1] + 1 for r in relaid)
