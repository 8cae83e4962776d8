#!/usr/bin/env python3
"""Write docs/cli.md, the CLI reference, from the parsers' own help, so it cannot drift from them.

    .venv/bin/python scripts/cli_reference.py           # (re)write docs/cli.md
    .venv/bin/python scripts/cli_reference.py --check   # exit 1 if docs/cli.md is not what it would write

The page holds `specialize --help`, then `specialize help NAME` for the comparison (`specialize`)
and for every command of `specializer.cli.COMMANDS`, each captured in-process. argparse wraps help
to the terminal's width ($COLUMNS, else the terminal's size), so the text is generated with
COLUMNS=100 whatever the terminal is. tests/test_docs.py fails while docs/cli.md is stale.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "cli.md"
COLUMNS = "100"  # the width argparse wraps to while the page is generated

sys.path.insert(0, str(ROOT))  # describe the package of this checkout, not another one installed

HEADER = """\
# CLI reference

Generated from the parsers' own help by `scripts/cli_reference.py` (do not edit by hand: run
`.venv/bin/python scripts/cli_reference.py`; `tests/test_docs.py` fails while this page is
stale). Every section is what `specialize help NAME` prints. How the commands fit together:
[the user guide](user-guide.md).
"""


def _stdout_of(argv: list[str]) -> str:
    """What `specialize ARGV` prints on stdout, run in this process with the fixed width."""
    from specializer import cli

    out = io.StringIO()
    with mock.patch.dict(os.environ, {"COLUMNS": COLUMNS}), contextlib.redirect_stdout(out):
        rc = cli.main(argv)
    if rc != 0:
        raise SystemExit(f"cli_reference: 'specialize {' '.join(argv)}' exited {rc}")
    return out.getvalue()


def _section(title: str, text: str) -> str:
    return f"## {title}\n\n```text\n{text.rstrip()}\n```\n"


def render() -> str:
    """The page: `specialize --help`, then one section per command."""
    from specializer import cli

    sections = [_section("`specialize --help`", _stdout_of(["--help"])),
                _section("`specialize` (the comparison)", _stdout_of(["help", "specialize"]))]
    sections += [_section(f"`specialize {name}`", _stdout_of(["help", name])) for name in cli.COMMANDS]
    return "\n".join([HEADER, *sections])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write docs/cli.md from the parsers' own help.")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 with one line if docs/cli.md differs from what it would write")
    a = p.parse_args(argv)
    text = render()
    if a.check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python scripts/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
