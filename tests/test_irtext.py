"""llvm/irtext.py: every operation on IR as text, each on bare and quoted names and the edge
cases LLVM's printer produces."""

from __future__ import annotations

import re

import pytest

from specializer.llvm import irtext

# ------------------------------------------------------------------ names


@pytest.mark.parametrize("name, printed", [
    ("foo", "@foo"),
    ("a.b$c-d_0", "@a.b$c-d_0"),
    ("0start", '@"0start"'),  # a bare name may not start with a digit
    ("a b", '@"a b"'),
    ('say "hi"', '@"say \\22hi\\22"'),
    ("back\\slash", '@"back\\5Cslash"'),
    ("", '@""'),
])
def test_quote_and_unquote_are_inverse(name, printed):
    assert irtext.quote(name) == printed
    assert irtext.unquote(printed[1:]) == name


def test_unquote_reads_any_hex_escape():
    assert irtext.unquote('"tab\\09x\\7e"') == "tab\tx~"
    assert irtext.unquote("plain") == "plain"


def test_name_patterns_take_bare_and_quoted_names_whole():
    assert re.fullmatch(irtext.GLOBAL, '@"a \\22b\\22 c"')
    assert re.fullmatch(irtext.GLOBAL, "@x.y-1")
    assert re.fullmatch(irtext.LOCAL, "%0") and re.fullmatch(irtext.LOCAL, '%"my var"')
    assert not re.fullmatch(irtext.LOCAL, '%"unterminated')
    assert not re.fullmatch(irtext.BARE_LOCAL, '%"q"')


def test_global_refs_and_global_arg():
    v = 'ptr getelementptr (i8, ptr @"w 1", i32 4), ptr @b, ptr @"x\\22"'
    assert irtext.global_refs(v) == ["w 1", "b", 'x"']
    assert irtext.global_arg("ptr @w") == "w"
    assert irtext.global_arg('ptr @"a b"') == "a b"
    assert irtext.global_arg("ptr @w, i32 1") is None
    assert irtext.global_arg("i32 @w") is None and irtext.global_arg("ptr %w") is None


# ------------------------------------------------------------------ types


def test_types():
    assert irtext.is_scalar_type("i32") and irtext.is_scalar_type("bfloat") and irtext.is_scalar_type("i1")
    assert not irtext.is_scalar_type("ptr") and not irtext.is_scalar_type("<4 x float>")
    assert irtext.array_dims("[16 x [32 x float]]") == (["16", "32"], "float")
    assert irtext.array_dims("[2 x <4 x i8>]") == (["2"], "<4 x i8>")
    assert irtext.array_dims("float") == ([], "float")
    assert irtext.vector_type("<8 x bfloat>") == (8, "bfloat")
    assert irtext.vector_type("[8 x float]") is None and irtext.vector_type("<2 x <2 x i8>>") is None
    lines = ["%struct.T = type { i32, ptr }", '%"a b" = type <{ i8 }>', "  %x = add i32 1, 2", "@g = global i32 0"]
    assert irtext.type_defs(lines) == lines[:2]


# ------------------------------------------------------------------ argument lists


def test_split_args_at_top_level_commas():
    line = "  call void @f(ptr @a, { i32, i32 } { i32 1, i32 2 }, <2 x i8> <i8 1, i8 2>, [2 x i32] [i32 3, i32 4]) #0"
    args, end = irtext.split_args(line, line.index("("))
    assert args == ["ptr @a", "{ i32, i32 } { i32 1, i32 2 }", "<2 x i8> <i8 1, i8 2>", "[2 x i32] [i32 3, i32 4]"]
    assert line[end:] == " #0"


def test_split_args_skips_brackets_and_commas_in_strings():
    line = 'call void @f(ptr @"a,(b", ptr @"c\\22)") !x'
    args, end = irtext.split_args(line, line.index("("))
    assert args == ['ptr @"a,(b"', 'ptr @"c\\22)"']
    assert line[end:] == " !x"


def test_split_args_of_an_empty_list_and_an_unbalanced_one():
    assert irtext.split_args("f()", 1) == ([], 3)
    with pytest.raises(ValueError):
        irtext.split_args("f(i32 (", 1)
    assert irtext.split_args("[4 x [2 x i8]] zeroinitializer", 0) == (["4 x [2 x i8]"], len("[4 x [2 x i8]]"))


# ------------------------------------------------------------------ define and declare lines

DEFINE = 'define internal fastcc void @"k 1"(ptr noalias %0, i32 %n, ...) local_unnamed_addr #3 {'


def test_define_and_declare_names():
    assert irtext.define_name(DEFINE) == "k 1"
    assert irtext.define_name("define void @f() {") == "f"
    assert irtext.define_name("declare void @f()") is None
    assert irtext.declare_name('declare <4 x float> @"xla.exp.v4f32"(<4 x float>)') == "xla.exp.v4f32"
    assert irtext.declare_name("define void @f() {") is None
    text = "\n".join(["declare i32 @d(i32)", "define void @a() {", "  ret void", "}", DEFINE, "}"])
    assert irtext.defined(text) == ["a", "k 1"] and irtext.declared(text) == ["d"]


def test_signature():
    s = irtext.signature(DEFINE)
    assert (s.keyword, s.head, s.name) == ("define", "internal fastcc void", "k 1")
    assert s.params == ["ptr noalias %0", "i32 %n", "..."]
    assert DEFINE[s.name_at:s.params_at] == '@"k 1"' and DEFINE[s.end:] == " local_unnamed_addr #3 {"
    d = irtext.signature("declare noundef i32 @g(ptr nocapture readonly) #0")
    assert (d.keyword, d.head, d.name, d.params) == ("declare", "noundef i32", "g", ["ptr nocapture readonly"])
    assert irtext.signature("  call void @f()") is None


def test_calling_convention():
    assert irtext.calling_convention(DEFINE) == "fastcc "
    assert irtext.calling_convention("define arm_aapcs_vfpcc void @f() {") == "arm_aapcs_vfpcc "
    assert irtext.calling_convention("define cc 10 void @f() {") == "cc 10 "
    assert irtext.calling_convention("define void @fastcc() {") == ""  # a name is no convention


def test_attribute_groups_and_function_attributes():
    text = "attributes #0 = { nounwind }\nattributes #3 = { memory(argmem: read) \"x\"=\"#1\" }\n"
    groups = irtext.attribute_groups(text)
    assert groups == {0: "nounwind", 3: 'memory(argmem: read) "x"="#1"'}
    assert irtext.attribute_group("attributes #12 = { noinline }") == (12, "noinline")
    assert irtext.attribute_group("; attributes #1 = { x }") is None
    assert irtext.function_attributes(DEFINE, groups) == 'memory(argmem: read) "x"="#1"'
    # a #N inside the parameters is no group of the function's
    assert irtext.function_attributes('define void @f(ptr "a"="#0" %p) #3 {', groups).startswith("memory")


def test_keywords_and_dropping_attributes():
    assert irtext.has_keyword("nounwind alwaysinline", "alwaysinline")
    assert not irtext.has_keyword("nounwind noalwaysinlinex", "alwaysinline")
    assert irtext.has_keyword("[4 x i8]", "ptr", "i8") and not irtext.has_keyword("[4 x i16]", "i8")
    attrs = 'nounwind memory(argmem: read) alwaysinline "alloc-family"="malloc" allocsize(0) "memory"'
    out = irtext.without_attributes(attrs, ("memory(...)", "alwaysinline", "allocsize(...)"), ("alloc-family",))
    assert out == 'nounwind "memory"'  # the string attribute "memory" is no memory(...) attribute
    assert irtext.without_attributes("nounwind") == "nounwind"


@pytest.mark.parametrize("attrs, effect", [
    ("nounwind", None),
    ("memory(read)", "read"),
    ("memory(argmem: read, inaccessiblemem: write)", "read"),
    ("memory(readwrite, argmem: none)", "none"),
    ("memory(inaccessiblemem: write)", "readwrite"),  # argument memory at the default
    ("memory(write, inaccessiblemem: none)", "write"),
])
def test_argument_memory(attrs, effect):
    assert irtext.argument_memory(attrs) == effect


# ------------------------------------------------------------------ the module's pieces

MODULE = """; ModuleID = 'm.ll'
source_filename = "m.ll"
target triple = "thumbv7em-none-eabihf"

%T = type { i32 }
@"g x" = internal global [4 x i32] zeroinitializer, align 4
@c = private unnamed_addr constant [2 x float] [float 1.000000e+00, float 0x7FF8000000000000], align 4
@a = internal alias i8, getelementptr (i8, ptr @"g x", i32 4)

declare void @d(ptr)

define void @f(i32 %x) #0 {
entry:
  switch i32 %x, label %out [
    i32 0, label %out
  ]

out:
  call void @d(ptr @c), !specializer.call !1
  ret void
}

attributes #0 = { nounwind }

!0 = !{!"x"}
!1 = !{i32 7}
!llvm.module.flags = !{!0}
"""


def test_function_spans_and_instruction_starts():
    lines = MODULE.split("\n")
    spans = irtext.function_spans(lines)
    assert list(spans) == ["f"]
    a, b = spans["f"]
    assert lines[a].startswith("define void @f") and lines[b] == "}"
    starts = [lines[i].strip().split(" ")[0] for i in irtext.instruction_starts(lines, a, b)]
    assert starts == ["switch", "call", "ret"]  # not the switch's cases, nor its closing bracket


def test_pieces():
    kinds = [k for k, _ in irtext.pieces(MODULE)]
    assert kinds == ["header", "type", "global", "global", "global", "declare", "define", "attributes",
                     "metadata", "metadata", "metadata"]
    define = next(lines for k, lines in irtext.pieces(MODULE) if k == "define")
    assert define[0].startswith("define") and define[-1] == "}"


def test_module_id_and_triple():
    assert irtext.module_id(MODULE) == "m.ll"
    assert irtext.module_id("; ModuleID = ''\n") == ""
    assert irtext.module_id("target triple = \"x\"\n; ModuleID = 'late'") is None
    assert irtext.target_triple(MODULE) == "thumbv7em-none-eabihf"
    assert irtext.target_triple("; no triple\n") is None


# ------------------------------------------------------------------ globals


def test_global_def():
    lines = MODULE.split("\n")
    g = irtext.global_def(next(ln for ln in lines if ln.startswith('@"g x"')))
    assert (g.name, g.keywords, g.kind, g.type) == ("g x", ("internal",), "global", "[4 x i32]")
    line = next(ln for ln in lines if ln.startswith("@c"))
    c = irtext.global_def(line)
    assert (c.name, c.keywords, c.kind, c.type) == ("c", ("private", "unnamed_addr"), "constant", "[2 x float]")
    assert line[c.init_at:].startswith("[float 1.0")
    s = irtext.global_def("@s = constant <{ i16, ptr }> <{ i16 1, ptr @c }>")
    assert s.type == "<{ i16, ptr }>" and s.init_at == len("@s = constant <{ i16, ptr }> ")
    e = irtext.global_def("@e = external global ptr")
    assert e.type == "ptr" and e.init_at > len("@e = external global ptr")
    assert irtext.global_def("@a = internal alias i8, ptr @c") is None
    assert irtext.global_def("  %x = alloca i32") is None


def test_constant_defs_and_global_lines():
    lines = MODULE.split("\n")
    assert irtext.is_constant_def(next(ln for ln in lines if ln.startswith("@c")))
    assert not irtext.is_constant_def(next(ln for ln in lines if ln.startswith('@"g x"')))
    # only the start is read: a weight array's type fits, its megabyte of values need not
    assert irtext.is_constant_def("@w = constant [9 x float] [" + "float 0.0, " * 100_000)
    where = irtext.global_lines(lines)
    assert set(where) == {"g x", "c", "a"} and lines[where["a"]].startswith("@a =")
    assert irtext.global_name('@"q\\22" = global i8 0') == 'q"' and irtext.global_name("@x") is None


def test_array_elements():
    assert irtext.array_elements("[i32 1, i32 -2, i32 3], align 4", "i32") == ["1", "-2", "3"]
    assert irtext.array_elements("zeroinitializer, align 4", "float") == []
    assert irtext.array_elements("[i32 1, i16 2]", "i32") is None
    assert irtext.array_elements("undef", "i32") is None


@pytest.mark.parametrize("tail", ["", ", align 4", ', section "s", align 4', ", align 16, !dbg !5 #2",
                                  ", comdat($x), align 8", ' #1'])
def test_initializer_end_peels_what_follows(tail):
    line = "@g = constant [2 x i32] [i32 1, i32 2]" + tail
    start = line.index("[i32")
    assert line[start:irtext.initializer_end(line, start)] == "[i32 1, i32 2]"


# ------------------------------------------------------------------ instructions


@pytest.mark.parametrize("line, callee", [
    ("  call void @f(i32 1)", "f"),
    ("  %r = tail call fastcc i32 @g(i32 1)", "g"),
    ('  %"a b" = notail call { i32, i32 } @"q r"(ptr @h)', "q r"),
    ("  call void @llvm.memcpy.p0.p0.i32(ptr @a, ptr @b, i32 4, i1 false)", "llvm.memcpy.p0.p0.i32"),
    ("  call void %fp(i32 1)", None),  # indirect
    ("  store ptr @f, ptr %p", None),
    ("; call void @f()", None),
])
def test_callee(line, callee):
    assert irtext.callee(line) == callee


def test_alloca_and_i8_gep():
    a = irtext.alloca("  %buf = alloca [4 x i32], align 8")
    assert (a.name, a.type, a.align) == ("%buf", "[4 x i32]", 8)
    q = irtext.alloca('  %"s t" = alloca <{ i16, ptr }>, align 4, !dbg !3')
    assert (q.name, q.type, q.align) == ('%"s t"', "<{ i16, ptr }>", 4)
    assert irtext.alloca("  %x = alloca i32").align is None
    assert irtext.alloca("  %x = alloca i64, i32 1, align 8").type == "i64"  # an explicit count of one
    assert irtext.alloca("  %x = load i32, ptr %p") is None
    assert irtext.i8_gep_offset("  %q = getelementptr inbounds nuw i8, ptr %buf, i32 -8") == -8
    assert irtext.i8_gep_offset('  %q = getelementptr i8, ptr %"b c", i32 12, !dbg !1') == 12
    assert irtext.i8_gep_offset("  %q = getelementptr i32, ptr %buf, i32 1") is None


def test_constant_geps():
    v = 'ptr getelementptr inbounds nuw (i8, ptr @"a b", i32 4096)'
    m = irtext.CONST_GEP.search(v)
    assert (m.group("base"), m.group("index"), m.group("offset")) == ('@"a b"', "i32", "4096")
    assert irtext.global_plus_offset("<{ ptr getelementptr (i8, ptr @x, i32 -4), i16 1 }>") == "<{ ptr @x+-4, i16 1 }>"
    assert irtext.CONST_GEP.search("getelementptr (i32, ptr @x, i32 1)") is None


def test_null_based_pointers():
    assert irtext.is_null_based("ptr null")
    assert irtext.is_null_based("ptr getelementptr (i8, ptr null, i32 16)")
    assert irtext.is_null_based("ptr inttoptr (i32 0 to ptr)")
    assert not irtext.is_null_based("ptr inttoptr (i32 4 to ptr)")
    assert not irtext.is_null_based("ptr @nullish") and not irtext.is_null_based("ptr getelementptr (i8, ptr @g, i32 0)")


def test_direct_calls():
    lines = ["define void @m() {",
             "  call void @k(ptr @w, i32 4, i32 -1) #2",
             "  %r = call i32 @\"q r\"(i32 7), !specializer.call !3",
             "; call void @k(i32 0)",
             "  call void @kk(i32 1)",
             "}"]
    calls = list(irtext.direct_calls(lines, ("k", "q r")))
    assert [(c.line, c.callee, c.args) for c in calls] == [(1, "k", ["ptr @w", "i32 4", "i32 -1"]), (2, "q r", ["i32 7"])]
    assert lines[1][calls[0].start:calls[0].end] == "call void @k(ptr @w, i32 4, i32 -1)"
    assert calls[0].ints(1, 2) == [4, -1] and calls[0].ints(0, 2) is None and calls[0].ints(1, 3) is None


def test_call_args_and_replace_call():
    line = '  %r = call i32 @"f g"(i32 1, ptr @w) #4, !specializer.call !2'
    at, args, end = irtext.call_args(line, "f g")
    assert line[at:end] == '@"f g"(i32 1, ptr @w)' and args == ["i32 1", "ptr @w"]
    assert irtext.call_args(line, "h") is None
    assert irtext.replace_call(line, at, end, "f g.spec.1", ["i32 1"]) == \
        '  %r = call i32 @"f g.spec.1"(i32 1), !specializer.call !2'  # call-site attributes go, metadata stays
    assert irtext.replace_call("  call void @f(i32 1) #0", 12, 22, "c", []) == "  call void @c()"


def test_call_line_checks():
    line = '  call void @f(i32 1) [ "deopt"(i32 0) ]'
    assert irtext.has_operand_bundles(line, line.index(")") + 1)
    assert not irtext.has_operand_bundles("  call void @f(i32 1) #0", 21)


def test_declares_or_defines():
    assert irtext.declares_or_defines(MODULE, "d") and irtext.declares_or_defines(MODULE, "f")
    assert not irtext.declares_or_defines(MODULE, "c")  # a global
    assert irtext.declares_or_defines('declare void @"x.y"(ptr)\n', "x.y")
    assert not irtext.declares_or_defines("declare void @xay(ptr)\n", "x.y")  # the dot is no wildcard


# ------------------------------------------------------------------ metadata


def test_metadata():
    assert irtext.metadata_node("!12 = !{i32 3}") == ("12", "!{i32 3}")
    assert irtext.metadata_node("!llvm.module.flags = !{!0}") is None
    assert irtext.metadata_nodes(MODULE) == {0: '!{!"x"}', 1: "!{i32 7}"}
    assert irtext.metadata_int("!{i32 7}") == 7 and irtext.metadata_int('!{!"x"}') is None
    assert irtext.next_metadata_id(MODULE) == 2 and irtext.next_metadata_id("define void @f() {\n}") == 0
    flags = irtext.named_metadata(MODULE, "llvm.module.flags")
    assert flags.group(1) == "!0" and irtext.named_metadata(MODULE, "llvm.dbg.cu") is None


def test_attachments():
    line = irtext.attach("  call void @f()", "specializer.call", 4)
    assert line == "  call void @f(), !specializer.call !4"
    assert irtext.attachment_pattern("specializer.call").search(line).group(1) == "4"
    assert irtext.attachment_pattern("specializer.call").search("  call void @f(), !specializerXcall !4") is None


def test_outside_strings():
    line = 'call void @f(), !dbg !3 ; "!3 stays" !3'
    out = irtext.outside_strings(line, irtext.METADATA_REF, lambda m: "!n" + m.group(1))
    assert out == 'call void @f(), !dbg !n3 ; "!3 stays" !n3'
    assert irtext.outside_strings("x #1", irtext.ATTRIBUTE_REF, lambda m: " G") == "x G"


# ------------------------------------------------------------------ sections


def test_with_sections():
    out = irtext.with_sections(MODULE).split("\n")
    assert '@"g x" = internal global [4 x i32] zeroinitializer, section ".bss.g_x", align 4' in out
    assert any(ln.startswith("@c = ") and ln.endswith(', section ".rodata.c", align 4') for ln in out)
    assert 'define void @f(i32 %x) #0 section ".text.f" {' in out
    assert irtext.with_sections(MODULE, data=False).count("section") == 1
    quoted = irtext.with_sections('define internal void @"a b"(ptr "x(" %p) local_unnamed_addr #0 {')
    assert quoted == 'define internal void @"a b"(ptr "x(" %p) local_unnamed_addr #0 section ".text.a_b" {'
    assert irtext.with_sections('@d = global i32 1, align 4') == '@d = global i32 1, section ".data.d", align 4'


# ---- module-level lines (retarget's rewrites)

def test_set_target_replaces_both_lines_after_the_header():
    text = ('; ModuleID = \'k\'\nsource_filename = "k"\ntarget datalayout = "e-m:e"\n'
            'target triple = "x86_64-unknown-linux-gnu"\n\ndefine void @f() {\n  ret void\n}\n')
    out = irtext.set_target(text, "DL", "thumbv7em-unknown-none-eabihf")
    assert out.split("\n")[:4] == ["; ModuleID = 'k'", 'source_filename = "k"', 'target datalayout = "DL"',
                                   'target triple = "thumbv7em-unknown-none-eabihf"']
    assert out.count("target triple") == 1 and out.count("datalayout") == 1


def test_respell_target_keeps_every_line_where_it_was():
    text = 'target datalayout = "x"\ntarget triple = "thumbv7em-none-eabihf"\ndefine void @f() {\n  ret void\n}\n'
    out = irtext.respell_target(text, "DL", "T")
    assert out.split("\n") == ["", 'target datalayout = "DL" target triple = "T"', "define void @f() {",
                               "  ret void", "}", ""]


def test_an_attribute_group_left_empty_goes_with_its_references():
    text = ("define void @f() #0 {\n  call void @g() #1\n  ret void\n}\ndeclare void @g() #1\n"
            'attributes #0 = { nounwind "target-cpu"="x86-64" }\nattributes #1 = { "prefer-vector-width"="256" }\n')
    out = irtext.rewrite_attribute_groups(text, lambda body: re.sub(r'\s*"[^"]*"(?:="[^"]*")?', "", body))
    assert "attributes #0 = { nounwind }" in out and "#1" not in out
    assert "define void @f() #0 {" in out and "declare void @g()\n" in out


def test_metadata_attachment_and_module_flag_dropped():
    text = ("  %v = load float, ptr %p, align 4, !invariant.load !0\n"
            "!llvm.module.flags = !{!1, !2}\n!0 = !{}\n!1 = !{i32 1, !\"xla_dylib_index\", i64 0}\n"
            "!2 = !{i32 7, !\"frame-pointer\", i32 2}\n")
    out = irtext.without_module_flag(irtext.without_metadata(text, "invariant.load"), "xla_dylib_index")
    assert "  %v = load float, ptr %p, align 4\n" in out
    assert "!llvm.module.flags = !{!2}" in out and "xla_dylib_index" not in out
    alone = irtext.without_module_flag("!llvm.module.flags = !{!1}\n!1 = !{i32 1, !\"k\", i64 0}\n", "k")
    assert alone == ""


def test_a_counted_alloca_is_not_one_object():
    assert irtext.alloca("  %b = alloca [4 x i16], align 2").type == "[4 x i16]"
    assert irtext.alloca("  %s = alloca { ptr, i32 }, align 4").type == "{ ptr, i32 }"
    assert irtext.alloca("  %v = alloca i16, i32 %n, align 2") is None  # a C variable-length array
    assert irtext.alloca("  %v = alloca i16, i32 4, align 2") is None
