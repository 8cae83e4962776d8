"""Reports are byte-identical whatever host computed JAX's reference: errors only as pass/tolerance."""

from specializer import report


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
