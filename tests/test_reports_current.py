"""The committed reports are what this checkout builds: one bundled model (mlp_int8: capture,
quantize()'s int8 blocks on CMSIS-NN, all-args' relayout and the per-call choice) rebuilt by
scripts/benchmark.py in a fresh process without the build cache, its row in variants.json equal
to the committed one field for field. A change to what the builds are (a kernel, a pass, the
harness) that leaves reports/ as they were fails here: regenerate them (scripts/benchmark.py,
README's table from them). The whole set is rebuilt from a clean clone before a stop (issue 21
item 5); this is the part the suite can afford."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "mlp_int8"


def test_a_bundled_models_report_row_is_what_this_checkout_builds(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "benchmark.py"), MODEL, "-o", str(tmp_path / "out"),
                        "--reports", str(tmp_path / "reports"), "--no-cache"],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads((tmp_path / "reports" / "variants.json").read_text())
    committed = json.loads((ROOT / "reports" / "variants.json").read_text())
    assert got["options"] == committed["options"] and got["environment"] == committed["environment"]
    (row,) = got["models"]
    (want,) = [m for m in committed["models"] if m["model"] == MODEL]
    stale = [f"{v['variant']}.{k}: committed {w[k]}, built {v[k]}"
             for v, w in zip(row["variants"], want["variants"]) for k in v if v[k] != w.get(k)]
    assert row == want, f"reports/variants.json is stale for {MODEL} (regenerate the reports): {stale[:6]}"
