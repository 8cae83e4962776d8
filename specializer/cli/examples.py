"""`specialize examples`: capture and run the bundled example models, one row each."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specializer.cli.args import output_dir
from specializer.cli.run import table


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="specialize examples", description="Capture and run the bundled examples.")
    p.add_argument("names", nargs="*")
    p.add_argument("--json", action="store_true")
    p.add_argument("-o", "--output", default="out/examples", type=output_dir, metavar="DIR")
    a = p.parse_args(argv)
    from specializer.driver.examples import run_examples

    rows = run_examples(a.names, Path(a.output))
    print(json.dumps([r.as_dict() for r in rows], indent=1, sort_keys=True) if a.json else table(rows))
    return 0 if all(r.status == "pass" for r in rows) else 1
