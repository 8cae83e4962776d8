"""Buffer addresses as symbols (specializer/optimize/bufalias.py): the rewritten IR (FileCheck) is valid and
names each large arena offset once."""

import subprocess
import sys
from pathlib import Path

from specializer.llvm import module
from specializer.optimize.bufalias import rewrite

CASE = Path(__file__).parent / "ir" / "bufalias_arena_offsets.ll"


def test_large_arena_offsets_become_aliases():
    text, names = rewrite(CASE.read_text())
    assert names == ["arena.at32000", "arena.at64000"]
    printed = str(module.parse(text, CASE.name))
    exe = Path(sys.executable).with_name("filecheck")
    r = subprocess.run([str(exe), str(CASE)], input=printed, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + "\n--- input ---\n" + printed


def test_nothing_to_rewrite_leaves_text_alone():
    text = "@g = internal global [8 x i8] zeroinitializer\n"
    assert rewrite(text) == (text, [])
