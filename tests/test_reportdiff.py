"""`specialize diff`: regressions over thresholds, exit codes, added/removed rows, bad input."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from specializer import cli

from specializer.report import reportdiff, tables as report
from specializer.errors import UserError

ROOT = Path(__file__).resolve().parent.parent


def _comparison(model: str, scale: float = 1.0) -> report.Comparison:
    rows = tuple(report.VariantRow(v, "pass", text=1000 + 10 * i, rodata=200, data=0, bss=512,
                                   insns=int(5000 * scale) - i, cycles=int(9000 * scale) - 3 * i, stack=64 + 8 * i)
                 for i, v in enumerate(("separate", "lto", "dims")))
    return report.Comparison(model, "captured", rows)


def _report(*models: report.Comparison) -> dict:
    """The shape scripts/benchmark.py writes (reports/variants.json)."""
    return {"options": {}, "environment": {}, "summary": {}, "failed": {}, "models": [c.as_dict() for c in models]}


def _before_memory_accounting(data: dict) -> dict:
    """A report as written before rows had flash and RAM (only `size` = .text + .rodata)."""
    old = copy.deepcopy(data)
    for m in old["models"]:
        for r in m["variants"]:
            for k in ("flash", "ram", "static_ram", "stack", "lib_flash", "lib_ram"):
                del r[k]
    return old


def _write(tmp_path: Path, name: str, data) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


@pytest.fixture
def base(tmp_path):
    return _report(_comparison("mlp"), _comparison("kws"))


def run(capsys, *args):
    code = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_identical_reports_exit_0(tmp_path, base, capsys):
    a, b = _write(tmp_path, "a.json", base), _write(tmp_path, "b.json", base)
    code, out, _ = run(capsys, "diff", a, b, "--fail-on", "cycles:+2%,flash:+1%,ram:+1%")
    assert code == 0
    assert "0 regression(s)" in out
    assert "REGRESSED" not in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_ten_percent_cycle_regression_exits_1(tmp_path, base, capsys):
    new = copy.deepcopy(base)
    row = new["models"][1]["variants"][2]  # kws / dims
    row["cycles"] = round(row["cycles"] * 1.10)
    a, b = _write(tmp_path, "a.json", base), _write(tmp_path, "b.json", new)
    code, out, _ = run(capsys, "diff", a, b, "--fail-on", "cycles:+2%,flash:+1%")
    assert code == 1
    assert "1 regression(s)" in out
    assert "- kws/dims: cycles 8,994 -> 9,893 (+10.00%) over cycles:+2%" in out
    # the same change under a looser limit passes
    assert run(capsys, "diff", a, b, "--fail-on", "cycles:+10.5%")[0] == 0
    # no thresholds: the change is shown, nothing fails
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 0 and "+10.00%" in out


def test_absolute_limit_and_flash(tmp_path, base, capsys):
    new = copy.deepcopy(base)
    new["models"][0]["variants"][0]["flash"] += 300
    a, b = _write(tmp_path, "a.json", base), _write(tmp_path, "b.json", new)
    assert run(capsys, "diff", a, b, "--fail-on", "flash:+256")[0] == 1
    assert run(capsys, "diff", a, b, "--fail-on", "flash:+300")[0] == 0


def test_failing_variant_is_a_regression(tmp_path, base, capsys):
    new = copy.deepcopy(base)
    new["models"][0]["variants"][1]["status"] = "FAIL"
    code, out, _ = run(capsys, "diff", _write(tmp_path, "a.json", base), _write(tmp_path, "b.json", new))
    assert code == 1
    assert "mlp/lto: result pass -> FAIL" in out


def test_added_and_removed_are_listed_not_errors(tmp_path, base, capsys):
    new = _report(_comparison("kws"), _comparison("resnet8"))
    del new["models"][0]["variants"][1]  # kws/lto gone
    code, out, _ = run(capsys, "diff", _write(tmp_path, "a.json", base), _write(tmp_path, "b.json", new),
                       "--fail-on", "cycles:+2%")
    assert code == 0
    assert "only in NEW: resnet8" in out
    assert "only in BASE: mlp, kws/lto" in out


def test_flash_and_ram_come_from_the_rows(tmp_path, base, capsys):
    """Today's rows carry flash and RAM (report.VariantRow): a RAM regression is caught."""
    row = base["models"][0]["variants"][1]
    assert row["flash"] == row["text"] + row["rodata"] + row["data"] + row["lib_flash"]
    assert row["ram"] == row["data"] + row["bss"] + row["lib_ram"] + row["stack"]
    new = copy.deepcopy(base)
    new["models"][0]["variants"][1]["ram"] += 100  # e.g. the stack grew
    code, out, _ = run(capsys, "diff", _write(tmp_path, "a.json", base), _write(tmp_path, "b.json", new),
                       "--fail-on", "ram:+10%")
    assert code == 1 and "mlp/lto: ram 584 -> 684" in out


def test_ram_is_compared_when_both_reports_have_it(tmp_path, base, capsys):
    # RAM was not in older reports: n/a, and a threshold on it is reported as not checked
    a = _write(tmp_path, "a.json", _before_memory_accounting(base))
    code, out, _ = run(capsys, "diff", a, a, "--fail-on", "ram:+1%")
    assert code == 0 and "n/a" in out and "not checked (a report lacks the metric): ram:+1%" in out
    # once rows carry a 'ram' field, it is a metric like the others
    with_ram = _before_memory_accounting(base)
    for m in with_ram["models"]:
        for r in m["variants"]:
            r["ram"] = 4096
    more = copy.deepcopy(with_ram)
    more["models"][0]["variants"][0]["ram"] = 4200
    code, out, _ = run(capsys, "diff", _write(tmp_path, "r1.json", with_ram), _write(tmp_path, "r2.json", more),
                       "--fail-on", "ram:+1%")
    assert code == 1 and "mlp/separate: ram 4,096 -> 4,200 (+2.54%) over ram:+1%" in out


def test_markdown_and_json(tmp_path, base, capsys):
    new = copy.deepcopy(base)
    new["models"][0]["variants"][0]["cycles"] += 9000
    a, b = _write(tmp_path, "a.json", base), _write(tmp_path, "b.json", new)
    code, out, _ = run(capsys, "diff", a, b, "--fail-on", "cycles:+2%", "--format", "md")
    assert code == 1
    assert out.startswith("### specialize diff: `a.json` -> `b.json`")
    assert "| model " in out and "|---" in out and "**1 regression(s)**" in out
    code, out, _ = run(capsys, "diff", a, b, "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["regressed"] is False
    m = d["rows"][0]["metrics"]["cycles"]
    assert (m["base"], m["new"], m["percent"]) == (9000, 18000, 100.0)


def test_single_comparison_json_is_accepted(tmp_path, capsys):
    """What 'specialize --json' prints (one comparison) diffs too."""
    a = tmp_path / "a.json"
    a.write_text(report.json_text(_comparison("mlp")))
    b = tmp_path / "b.json"
    b.write_text(report.json_text(_comparison("mlp", scale=1.5)))
    code, out, _ = run(capsys, "diff", a, b, "--fail-on", "insns:+40%")
    assert code == 1 and "+50.0" in out


@pytest.mark.parametrize("spec", ["cycles", "cycles:+", "cycles:+x%", "cycles:-2%", "flsh:+1%", "cycles:+2%,",
                                  "cycles:+2%%"])
def test_bad_fail_on_syntax(spec):
    with pytest.raises(UserError, match="--fail-on"):
        reportdiff.parse_fail_on(spec)


def test_fail_on_parses():
    t = reportdiff.parse_fail_on("cycles:+2%, flash:1%,ram:+0.5%,insns:+100")
    assert [str(x) for x in t] == ["cycles:+2%", "flash:+1%", "ram:+0.5%", "insns:+100"]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "specializer.cli", *map(str, args)], capture_output=True,
                          text=True)


def test_cli_bad_input_is_one_line_exit_2(tmp_path, base):
    a = _write(tmp_path, "a.json", base)
    for args, fragment in [(("diff", a, a, "--fail-on", "cycles:2x"), "--fail-on: bad item 'cycles:2x'"),
                           (("diff", a, tmp_path / "missing.json"), "missing.json: no such file"),
                           (("diff", a, _write(tmp_path, "list.json", {"x": 1})), "not a variants report")]:
        r = _cli(*args)
        assert r.returncode == 2, r
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in r.stderr, r.stderr
        assert r.stdout == ""
    bad = tmp_path / "bad.json"
    bad.write_text('{"models": [\n oops')
    r = _cli("diff", a, bad)
    assert r.returncode == 2 and r.stderr.strip() == f"specialize: error: {bad}:2:2: not JSON: Expecting value"


def test_committed_report_diffs_clean_against_itself():
    p = ROOT / "reports" / "variants.json"
    d = reportdiff.compare_reports(reportdiff.load(p), reportdiff.load(p), reportdiff.parse_fail_on("cycles:+0%,flash:+0%,insns:+0%"))
    assert not d.regressed and not d.added and not d.removed
    assert len(d.rows) == sum(len(m) for m in reportdiff.load(p).models.values()) > 0


def test_version():
    r = _cli("--version")
    assert r.returncode == 0
    from specializer import __version__

    assert r.stdout.splitlines()[0] == f"specialize {__version__}"
    assert "LLVM" in r.stdout


def test_ci_workflow():
    text = (ROOT / ".github" / "workflows" / "compare.yml").read_text()
    assert "specialize diff reports/variants.json" in text and "GITHUB_STEP_SUMMARY" in text
    yaml = pytest.importorskip("yaml")
    wf = yaml.safe_load(text)
    steps = [s for job in wf["jobs"].values() for s in job["steps"]]
    assert any("scripts/benchmark.py" in s.get("run", "") for s in steps)
    # the models over a job matrix, merged before the diff
    shard = wf["jobs"]["shard"]
    assert len(shard["strategy"]["matrix"]["shard"]) == int(wf["env"]["SHARDS"])
    assert any("--shard ${{ matrix.shard }}/$SHARDS" in s.get("run", "") for s in shard["steps"])
    merge = wf["jobs"]["compare"]
    assert merge["needs"] == "shard" and any("--merge" in s.get("run", "") for s in merge["steps"])
    assert any(s.get("uses", "").startswith("actions/cache") for s in shard["steps"])


def test_metric_compared_under_the_field_both_reports_have(tmp_path, base, capsys):
    """A report whose rows add 'flash' (a wider definition) is compared on 'size' with an older one."""
    base = _before_memory_accounting(base)
    new = copy.deepcopy(base)
    for m in new["models"]:
        for r in m["variants"]:
            r["flash"] = r["size"] + 5000
    a, b = _write(tmp_path, "a.json", base), _write(tmp_path, "b.json", new)
    code, out, _ = run(capsys, "diff", a, b, "--fail-on", "flash:+1%")
    assert code == 0 and "0 regression(s)" in out
    more = copy.deepcopy(new)
    more["models"][0]["variants"][0]["flash"] += 1000
    code, out, _ = run(capsys, "diff", b, _write(tmp_path, "c.json", more), "--fail-on", "flash:+1%")
    assert code == 1 and "mlp/separate: flash 6,200 -> 7,200" in out
