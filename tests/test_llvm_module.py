"""specializer/llvm/module.py: modules in contexts of their own."""

from __future__ import annotations

import subprocess
import sys

from specializer.llvm import module

# The garbage collector may finalize a context before a module of it (both held by a cycle, e.g.
# a traceback's frames); LLVM has then freed the module with its context. Run in a child: a
# double free is a segfault, which would take the test process with it.
AFTER_ITS_CONTEXT = """
from specializer.llvm import module
ctx = module.context()
m = module.parse("define i32 @f() {\\n  ret i32 1\\n}\\n", "f.ll", ctx)
ctx.close()
m.close()
print("survived")
"""


def test_a_module_finalized_after_its_context_is_not_freed_twice():
    r = subprocess.run([sys.executable, "-c", AFTER_ITS_CONTEXT], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "survived", (r.returncode, r.stderr[-400:])


def test_each_parse_gets_a_context_of_its_own():
    text = "%struct.T = type { i32 }\n@g = global %struct.T zeroinitializer\n"
    first, second = module.parse(text, "a.ll"), module.parse(text, "b.ll")
    # in one shared context the second would say %struct.T.1
    assert "%struct.T = type { i32 }" in str(first) and "%struct.T = type { i32 }" in str(second)
