"""XLA IR syntax LLVM 22.1 rejects, normalized (specializer/capture/normalize.py). The rewrites
themselves: tests/ir/normalize_*.ll and retarget_*.ll (tests/test_ir.py)."""

from specializer.capture.normalize import normalize


def test_strings_and_comments_untouched():
    text = '@s = constant [4 x i8] c"f0x1"\n; +inf f0x3F800000\n'
    assert normalize(text) == text
