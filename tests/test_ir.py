"""The IR tests: every tests/ir/*.ll is a lit test, its `; RUN:` lines the whole test.

As LLVM's lit runs them: `%s` is the file, `%t` a path of the test's own (`%t.log`), a line
ending in `\\` goes on on the next; `specialize` is this package's CLI on the running
interpreter, `filecheck` the `filecheck` package's executable next to it, `not CMD` succeeds
when CMD fails (exits non-zero, not killed by a signal). Each line runs in bash with pipefail
and passes when it exits 0; a file without RUN lines fails. E.g.

    ; RUN: specialize opt -passes='specialize{mode=dims,rounds=1,max-growth=none}' %s --log %t.log | filecheck %s
    ; RUN: filecheck --check-prefix=LOG %s < %t.log

This is the suite's one FileCheck helper: a new `.ll` test needs no Python.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

IR = Path(__file__).parent / "ir"
CASES = sorted(IR.glob("*.ll"))
RUN = re.compile(r"^; RUN:(.*)$", re.M)
_NOT = "import subprocess, sys; rc = subprocess.call(sys.argv[1:]); sys.exit(0 if rc > 0 else 1)"
TOOLS = {"specialize": f"{shlex.quote(sys.executable)} -m specializer.cli",
         "filecheck": shlex.quote(str(Path(sys.executable).with_name("filecheck"))),
         "not": f"{shlex.quote(sys.executable)} -c {shlex.quote(_NOT)}"}
# a tool's name where a command starts: the line's start, after a pipe, `;` or `&&`, or after `not`
_TOOL = re.compile(r"(^|[|;&]\s*)(not\s+)?(specialize|filecheck)\b")


def commands(case: Path, tmp: Path) -> list[str]:
    """The RUN lines of `case`, substituted, continuation lines joined."""
    lines, out = RUN.findall(case.read_text()), []
    joined = ""
    for line in lines:
        line = line.strip()
        if line.endswith("\\"):
            joined += line[:-1] + " "
            continue
        out.append(joined + line)
        joined = ""
    if joined:
        out.append(joined)
    subs = {"%s": shlex.quote(str(case)), "%t": shlex.quote(str(tmp / "t"))}
    cmds = []
    for cmd in out:
        cmd = re.sub(r"%[st]", lambda m: subs[m.group(0)], cmd)
        cmds.append(_TOOL.sub(lambda m: m.group(1) + (TOOLS["not"] + " " if m.group(2) else "") + TOOLS[m.group(3)],
                              cmd))
    return cmds


def run(case: Path, tmp: Path) -> str | None:
    """None when every RUN line of `case` passes, else what failed."""
    cmds = commands(case, tmp)
    if not cmds:
        return f"{case.name}: no '; RUN:' lines (every tests/ir/*.ll says how it is run)"
    for cmd in cmds:
        r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True)
        if r.returncode != 0:
            return f"{case.name}: RUN: {cmd}\nexit {r.returncode}\n{r.stdout[-4000:]}\n{r.stderr[-8000:]}"
    return None


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_ir(case: Path, tmp_path):
    failure = run(case, tmp_path)
    if failure:
        pytest.fail(failure, pytrace=False)  # the whole of FileCheck's report, untruncated


# --------------------------------------------------------------------------- the runner can fail


def test_a_wrong_check_line_fails(tmp_path):
    case = tmp_path / "wrong.ll"
    text = (IR / "bufalias_arena_offsets.ll").read_text()
    assert "; CHECK: @arena.at32000 = internal alias" in text
    case.write_text(text.replace("; CHECK: @arena.at32000 = internal alias", "; CHECK: @arena.at32001 = internal alias"))
    failure = run(case, tmp_path)
    assert failure is not None and "@arena.at32001" in failure


def test_a_file_without_run_lines_fails(tmp_path):
    case = tmp_path / "norun.ll"
    case.write_text("; CHECK: define void @f()\ndefine void @f() {\n  ret void\n}\n")
    assert "no '; RUN:' lines" in run(case, tmp_path)


def test_not_inverts_and_substitutions_quote(tmp_path):
    case = tmp_path / "a b.ll"  # a blank in the path: %s and %t are quoted
    case.write_text("; RUN: not specialize opt %s 2>&1 | filecheck --check-prefix=ERR %s\n"
                    "; RUN: echo x > %t.out && \\\n"
                    "; RUN:   test -s %t.out\n"
                    "; ERR: specialize: error: {{.*}}a b.ll:{{[0-9]+}}:{{[0-9]+}}: error:\n"
                    "define void @f() {\n  ret i32 0\n}\n")
    assert run(case, tmp_path) is None
    case.write_text("; RUN: not specialize opt %s\ndefine void @f() {\n  ret void\n}\n")
    assert run(case, tmp_path) is not None  # it succeeded: `not` fails
