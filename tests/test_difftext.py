"""The diff-oriented text of a module (specializer/optimize/difftext.py): the properties diffing relies on.
What it looks like: tests/ir/difftext_module.ll (`specialize opt --diff-text`, tests/test_ir.py)."""

from pathlib import Path

from specializer.optimize import difftext
from specializer.optimize.specialize import ConstArg, Site

IR = Path(__file__).parent / "ir"
MODULE = (IR / "difftext_module.ll").read_text()


def test_same_module_twice_is_byte_identical():
    first = difftext.render(MODULE).text()
    difftext.render(MODULE.replace("@zeta", "@other"))  # another module in between, same process
    assert difftext.render(MODULE).text() == first


def test_function_order_and_numbering_do_not_matter():
    """The module with its functions swapped and renumbered gives the same text."""
    zeta = MODULE[MODULE.index("define i32 @zeta"):MODULE.index("define i32 @alpha")]
    swapped = MODULE.replace(zeta, "").replace("attributes #0", zeta + "attributes #0")
    # attribute groups and metadata numbered the other way round
    swapped = swapped.replace("#0", "#9").replace("#1", "#0").replace("#9", "#1")
    swapped = swapped.replace("!4", "!9").replace("!5", "!4").replace("!9", "!5")
    assert swapped.index("@alpha(") < swapped.index("@zeta(")
    assert difftext.render(swapped).text() == difftext.render(MODULE).text()


def test_an_instruction_added_to_one_function_renames_nothing_in_another():
    edited = MODULE.replace("  %1 = mul i32 %x, 3\n  ret i32 %1", "  %1 = mul i32 %x, 3\n  %2 = add i32 %1, 1\n  ret i32 %2")
    a, b = ({e.name: e.text for e in difftext.render(t).entities} for t in (MODULE, edited))
    assert a["@zeta"] != b["@zeta"] and "%add.1 = add i32 %mul.1, 1" in b["@zeta"]
    assert {k for k in a if a[k] != b[k]} == {"@zeta"}


def test_big_initializers_are_summarized_with_a_content_hash():
    one = {e.name: e.text for e in difftext.render(MODULE).entities}
    other = {e.name: e.text for e in difftext.render(MODULE.replace("i32 74]", "i32 75]")).entities}
    assert "i32 74" not in one["@big"] and "300 bytes" in one["@big"]
    assert one["@big"] != other["@big"]  # the hash follows the content
    assert one["@big"].split("sha256")[0] == other["@big"].split("sha256")[0]
    assert "i32 63]" in one["@small"]  # 256 bytes: printed


def test_a_summary_keeps_what_follows_the_initializer():
    arr = "[" + ", ".join(f"i32 {i}" for i in range(100)) + "]"
    text = MODULE.replace("\n@small", f'\n@g = internal constant [100 x i32] {arr}, section ".rodata.g", align 4, '
                                       f'!x !0 #0\n@small')
    (g,) = [e.text for e in difftext.render(text).entities if e.name == "@g"]
    assert g.startswith('@g = internal constant [100 x i32] ..., section ".rodata.g", align 4, !x !m.')
    assert ' nounwind  ; initializer summarized: i32[100], 400 bytes, sha256 ' in g


def test_clones_say_what_they_were_made_for():
    site = Site(1, 1, "run", "zeta", 1, (ConstArg(0, "i32 3", "i32 3"),), "kept", "zeta.spec.0123abcd")
    stack = Site(2, 2, "run", "alpha", 2, (ConstArg(1, "ptr <{ i32 1 }>", "stack object %5 (4 bytes, constant) = "
                                                   "<{ i32 1 }>", init="<{ i32 1 }>"),), "kept", "alpha.spec.1")
    # round 2 clones alpha.spec.1's (alpha's arg 0) with constant arg 0: alpha with args 0 and 1 fixed
    again = Site(3, 2, "run", "alpha.spec.1", 1, (ConstArg(0, "i32 7", "i32 7"),), "kept", "alpha.spec.2")
    notes = difftext.clone_notes([site, stack, again])
    assert notes["zeta.spec.0123abcd"] == ["specialized clone of @zeta for the constants:", "  arg 0 = i32 3"]
    assert notes["alpha.spec.1"][1] == "  arg 1 = stack object (4 bytes, constant) = <{ i32 1 }>"
    assert notes["alpha.spec.2"] == ["specialized clone of @alpha for the constants:", "  arg 0 = i32 7",
                                     "  arg 1 = stack object (4 bytes, constant) = <{ i32 1 }>"]
    text = difftext.render(MODULE, notes={"zeta": notes["zeta.spec.0123abcd"]}).text()
    assert ("; specialized clone of @zeta for the constants:\n;   arg 0 = i32 3\n"
            "define i32 @zeta(") in text
