"""Buffer addresses as symbols (specializer/optimize/bufalias.py). The rewrite of large arena offsets:
tests/ir/bufalias_arena_offsets.ll (tests/test_ir.py)."""

from specializer.optimize.bufalias import rewrite


def test_nothing_to_rewrite_leaves_text_alone():
    text = "@g = internal global [8 x i8] zeroinitializer\n"
    assert rewrite(text) == (text, [])
