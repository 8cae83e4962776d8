"""Reports are byte-identical whatever host computed JAX's reference: errors only as pass/tolerance."""

from specializer.report import tables as report


def _comparison(rel: float, abs_: float) -> report.Comparison:
    rows = (report.VariantRow("separate", "pass", 100, 8, 0, 64, 50, 90, abs_, rel, rtol=1e-5),
            report.VariantRow("lto", "pass", 90, 8, 0, 64, 45, 80, abs_ / 2, rel / 3, rtol=1e-5))
    return report.Comparison("m", "captured", rows)


def test_host_dependent_error_digits_do_not_reach_reports():
    # errors as two hosts computed them, on both sides of 1e-6 (a decade bucket would flip)
    a, b = _comparison(1.6e-6, 1.6e-7), _comparison(9.7e-7, 2.4e-7)
    assert report.json_text(a) == report.json_text(b)
    assert report.table(a) == report.table(b)
    row = a.as_dict()["variants"][0]
    assert row["within_rtol"] is True and row["rtol"] == 1e-5
    assert "max_rel_err" not in row and "max_abs_err" not in row
    assert "<= 1e-05" in report.table(a)


def test_error_over_tolerance_is_shown():
    c = _comparison(3e-5, 1e-3)
    assert c.as_dict()["variants"][0]["within_rtol"] is False
    assert "> 1e-05" in report.table(c)


def test_tables_fit_100_columns():
    """The widest numbers the board allows (4 MiB of flash, 9-digit counts) still fit; details in JSON."""
    rows = tuple(report.VariantRow(v, "pass", 3_999_000, 190_000, 4_000, 4_000_000, 987_654_321, 999_999_999,
                                   1e-7, 1e-7, clones=99, refused=9, rtol=1e-5, lib_flash=9_000, lib_ram=1_080,
                                   stack=123_456)
                 for v in ("separate", "lto", "llvm-funcspec", "dims", "all-args"))
    c = report.Comparison("mobilenet_vww", "captured", rows, macs=12_501_632)
    text, _ = report.summary([c], tuple(r.variant for r in rows))
    for out in (report.table(c), text, report.per_mac_table([c], tuple(r.variant for r in rows)), report.NOTE):
        assert max(len(line) for line in out.splitlines()) <= 100, out
    row = c.as_dict()["variants"][0]
    assert row["flash"] == 3_999_000 + 190_000 + 4_000 + 9_000
    assert row["ram"] == 4_000 + 4_000_000 + 1_080 + 123_456 and row["static_ram"] == row["ram"] - 123_456


def test_run_table_fits_100_columns():
    from specializer.cli.run import table as _table
    from specializer.run.measure import Row

    r = Row("mobilenet_vww", "pass", 1e-7, 1.2e-7, 3_999_000, 190_000, 4_000, 4_000_000, 987_654_321, 999_999_999,
            9_000, 1_080, 123_456)
    out = _table([r])
    assert max(len(line) for line in out.splitlines()) <= 100, out
    assert f"| {r.flash} |" in out and f"| {r.ram} |" in out and r.ram == 4_000 + 4_000_000 + 1_080 + 123_456


def test_a_failed_variant_is_never_reported_within_tolerance():
    from specializer.report.tables import Comparison, VariantRow, table

    rows = (VariantRow("lto", "pass", 100, 0, 0, 0, 10, 20, 0.0, 0.0, rtol=1e-5),
            VariantRow("all-args", "FAIL", 100, 0, 0, 0, 10, 20, 0.0, 0.0, rtol=1e-5))
    text = table(Comparison("m", "captured", rows))
    assert "all-args does not match" in text and "every variant <=" not in text


def test_call_numbers_print_as_ranges():
    from specializer.report.tables import _ranges

    assert _ranges((1, 2, 3, 7, 9, 10)) == "1-3, 7, 9-10"
    assert _ranges([5]) == "5" and _ranges(()) == ""
