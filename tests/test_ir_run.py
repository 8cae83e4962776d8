"""lit-style tests: the `; RUN: specialize ...` lines of tests/ir/*.ll run as LLVM's lit runs
them, with `%s` the file, `specialize` this package's CLI and `filecheck` the `filecheck`
package's; a RUN line passes when its whole pipe exits 0. (A RUN line that does not start with
`specialize` only says which test reads the file.)"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

IR = Path(__file__).parent / "ir"
RUN = re.compile(r"^; RUN: (specialize .*)$", re.M)
CASES = sorted(p for p in IR.glob("*.ll") if RUN.search(p.read_text()))
TOOLS = {"specialize": f"{shlex.quote(sys.executable)} -m specializer.cli",
         "filecheck": shlex.quote(str(Path(sys.executable).with_name("filecheck")))}


def commands(case: Path) -> list[str]:
    out = []
    for line in RUN.findall(case.read_text()):
        cmd = line.strip().replace("%s", shlex.quote(str(case)))
        # a tool's name where a command starts: the line's start or after a pipe
        out.append(re.sub(r"(^|\|\s*)(specialize|filecheck)\b", lambda m: m.group(1) + TOOLS[m.group(2)], cmd))
    return out


def test_some_case_has_run_lines():
    assert any(p.name == "pipeline_bisect.ll" for p in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_run_lines(case: Path):
    cmds = commands(case)
    assert cmds
    for cmd in cmds:
        r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True)
        assert r.returncode == 0, f"RUN: {cmd}\n{r.stdout}\n{r.stderr}"
