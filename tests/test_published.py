"""The MLPerf Tiny section of reports/imported.md: our variants beside the published Cortex-M4
results, cycles per MAC from the model's own MAC count, RAM beside TFLite Micro's arena."""

from specializer.report import published, tables as report


def _row(variant: str, cycles: int, status: str = "pass") -> report.VariantRow:
    return report.VariantRow(variant, status, 40_000, 20_000, 0, 60_000, cycles // 2, cycles, 0.0, 0.0,
                             rtol=1e-5, stack=500)


def _kws(status: str = "pass") -> report.Comparison:
    rows = (_row("lto", 7_525_999), _row("all-args", 7_161_420, status))
    return report.Comparison("kws_ref_model", "captured", rows, macs=2_656_768, reference="TFLite Micro",
                             checked_inputs=20)


def test_variants_beside_each_published_stack():
    md, data = published.beside_published([_kws()], ("lto", "all-args"), {"kws_ref_model": 24_272})
    lines = md.splitlines()
    row = next(ln for ln in lines if ln.startswith("| specializer all-args (est.)"))
    assert row.split("|")[2].strip() == "7.16 M (2.70)"
    st = next(ln for ln in lines if ln.startswith("| ST X-CUBE-AI 9.0 (v1.2, measured)"))
    assert st.split("|")[2].strip() == "5.18 M (1.95)"  # 5.18 M / 2.66 M MACs, as ../shared/DESIGN.md says
    assert "all-args against the fastest published: KWS 1.38x." in lines
    assert any("flash wait states" in ln for ln in lines)
    arena = next(ln for ln in lines if ln.startswith("| TFLite Micro's arena (host)"))
    assert arena.split("|")[2].strip() == "- / 24,272"
    task = data["tasks"]["KWS"]
    assert task["tflite_micro_arena"] == 24_272 and task["specializer"]["all-args"]["cycles"] == 7_161_420
    assert task["published"]["Plumerai (v1.1)"] == 5.73e6


def test_a_failed_variant_has_no_numbers():
    md, data = published.beside_published([_kws("FAIL")], ("lto", "all-args"), {})
    row = next(ln for ln in md.splitlines() if ln.startswith("| specializer all-args (est.)"))
    assert row.split("|")[2].strip() == "-"
    assert "all-args" not in data["tasks"]["KWS"]["specializer"]


def test_other_models_have_no_section():
    c = report.Comparison("my_model", "captured", (_row("lto", 1000),), macs=100)
    assert published.beside_published([c], ("lto",), {}) == ("", {})


def test_an_imported_models_report_names_its_reference():
    c = _kws()
    assert "rel err against TFLite Micro on 20 inputs: every variant <= 1e-05" in report.table(c)
    d = c.as_dict()
    assert d["reference"] == "TFLite Micro" and d["checked_inputs"] == 20
    jax = report.Comparison("m", "captured", (_row("lto", 1000),))
    assert "reference" not in jax.as_dict() and "rel err against JAX:" in report.table(jax)
    assert report.note() == report.NOTE and "against JAX" in report.NOTE.replace("\n", " ")
    assert "against TFLite Micro" in report.note("TFLite Micro").replace("\n", " ")
