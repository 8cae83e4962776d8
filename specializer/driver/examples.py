"""The bundled example models (examples/*.py): capture each, run it, one row each."""

from __future__ import annotations

from pathlib import Path

from specializer.capture.capture import capture
from specializer.errors import UserError
from specializer.driver.run import run_model
from specializer.run.measure import Row
from specializer.tools import shipped

EXAMPLES = ("quadratic", "elementwise", "softmax", "mlp", "loop", "while_loop", "cond",
            "mlp256", "lenet", "kws_dscnn", "anomaly_ae", "mlp_int8", "resnet8",
            "mobilenet_vww", "mlp256_pruned", "kws_int8", "anomaly_ae_int8", "resnet8_int8",
            "mobilenet_vww_int8")


def example_path(name: str) -> Path:
    return shipped("examples") / f"{name}.py"


def run_examples(names: list[str], out: Path) -> list[Row]:
    rows = []
    for name in names or EXAMPLES:
        if not example_path(name).is_file():
            raise UserError(f"no example named '{name}' (have: {', '.join(EXAMPLES)})")
        c = capture(example_path(name), name, out / name)
        row, _ = run_model(c.model_ll, out / name / "build")
        rows.append(row)
    return rows
