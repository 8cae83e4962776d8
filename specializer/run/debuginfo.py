"""Line-table debug info that ties the model's machine code to its kernels and HLO instructions.

Before the module is optimized, every function of the model (the entry, XLA's kernels and their
helpers) gets a DISubprogram and every instruction in it a DILocation in a synthetic file,
`<model>.hlo`, whose line number is a *site*: line 1 is the entry's own code, then one line per
kernel function and one per library call the entry makes. After inlining, an instruction keeps
the line of the code it came from (its inlined-at chain is extra), so the ELF's DWARF line
table maps every address of inlined kernel code back to its kernel. The kernel library carries
no debug info: LLVM's inliner gives library code inlined into a kernel (or into the entry at a
library call) the location of the call, so that code counts for the kernel (or the call's HLO
instruction) too. Library functions that stay out of line keep their own symbols.

Only line tables are emitted (emissionKind: LineTablesOnly), no variables: the machine code is
the same with and without (tests/test_hloprofile.py compares the .text bytes), and the debug
sections are not allocated, so they take no flash.
"""

from __future__ import annotations

from dataclasses import dataclass

from specializer.llvm import irtext


@dataclass(frozen=True)
class Site:
    line: int
    kernel: str  # the function whose code this is: the entry, an XLA kernel or a library function called
    hlo: tuple[str, ...] = ()  # the HLO instructions it runs
    call: bool = False  # a library call of the entry (its code is the callee's, inlined or not)


def _instructions(lines: list[str], start: int, end: int):
    """Indices of the lines in a body that end an instruction (a switch's closing bracket)."""
    in_switch = False
    for i in range(start + 1, end):
        s = lines[i]
        if in_switch:
            if s.strip() == "]":
                in_switch = False
                yield i
            continue
        if not s.startswith("  ") or s.lstrip().startswith((";", "#dbg_")) or not s.strip():
            continue
        if s.rstrip().endswith("[") and " switch " in f" {s.strip()}":
            in_switch = True
            continue
        yield i


def _calls_of(lines: list[str], start: int, end: int) -> list[tuple[int, str]]:
    out = []
    for i in _instructions(lines, start, end):
        callee = irtext.callee(lines[i])
        if callee is not None:
            out.append((i, callee))
    return out


def sites(text: str, model_functions: list[str], entry: str,
          calls: tuple[tuple[str, str], ...]) -> tuple[list[Site], dict[str, int], dict[int, int]]:
    """(sites, line of each model function, line of each call line of the entry by line index).

    `calls`: (callee, HLO instruction) per call of the entry in text order (hlo.json): matched
    one for one when the entry makes exactly that many calls, else by callee in order; a call
    the list does not name (or a model captured without it) still gets a site, without HLO."""
    lines = text.split("\n")
    bodies = irtext.function_spans(lines)
    model = [f for f in model_functions if f in bodies]
    found: list[Site] = [Site(1, entry)]
    of_fn: dict[str, int] = {entry: 1}
    hlo_of: dict[int, list[str]] = {1: []}
    call_line: dict[int, int] = {}
    pending = list(calls)
    if entry in bodies:
        made = _calls_of(lines, *bodies[entry])
        # as many calls as hlo.json names: one for one, in order, whatever their callees are now
        # called (all-args' relayout, before link, calls arm_convolve_s8's replacement)
        in_order = len(made) == len(calls)
        for n, (i, callee) in enumerate(made):
            hlo = ""
            if in_order:
                hlo = calls[n][1]
            elif pending and pending[0][0] == callee:
                hlo = pending.pop(0)[1]
            if callee in model:
                if callee not in of_fn:
                    of_fn[callee] = len(found) + 1
                    found.append(Site(of_fn[callee], callee))
                    hlo_of[of_fn[callee]] = []
                line = of_fn[callee]
            else:  # a copy's llvm.memcpy becomes a call of memcpy or inline code
                line = len(found) + 1
                found.append(Site(line, "memcpy" if callee.startswith("llvm.memcpy.") else callee, call=True))
                hlo_of[line] = []
            if hlo and hlo not in hlo_of[line]:
                hlo_of[line].append(hlo)
            call_line[i] = line
    # helpers (a kernel's *_wrapped function, XLA's math wrappers): the site of their callers
    # when that is one site, else a site of their own
    callers: dict[str, set[str]] = {}
    for f in model:
        for _, callee in _calls_of(lines, *bodies[f]):
            callers.setdefault(callee, set()).add(f)
    for _ in range(len(model)):
        changed = False
        for f in model:
            if f in of_fn:
                continue
            lines_of = {of_fn.get(c) for c in callers.get(f, ())}
            if lines_of and None not in lines_of:
                if len(lines_of) == 1:
                    of_fn[f] = lines_of.pop()
                else:
                    of_fn[f] = len(found) + 1
                    found.append(Site(of_fn[f], f))
                    hlo_of[of_fn[f]] = sorted({h for n in lines_of for h in hlo_of[n]})
                changed = True
        if not changed:
            break
    for f in model:  # unreachable from the entry: a site of its own
        if f not in of_fn:
            of_fn[f] = len(found) + 1
            found.append(Site(of_fn[f], f))
            hlo_of[of_fn[f]] = []
    found = [Site(s.line, s.kernel, tuple(hlo_of[s.line]), s.call) for s in found]
    return found, of_fn, call_line


def attach(text: str, model_functions: list[str], entry: str, calls: tuple[tuple[str, str], ...],
           file_name: str) -> tuple[str, list[Site], dict[str, int]]:
    """`text` with line-table debug info on the model's functions, the sites its lines mean, and
    the line of each model function."""
    found, of_fn, call_line = sites(text, model_functions, entry, calls)
    lines = text.split("\n")
    bodies = irtext.function_spans(lines)
    next_id = irtext.next_metadata_id(text)
    cu, file, ty, dwarf = range(next_id, next_id + 4)
    next_id += 4
    meta = [f'!{cu} = distinct !DICompileUnit(language: DW_LANG_C99, file: !{file}, producer: "specializer", '
            f"isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly)",
            f'!{file} = !DIFile(filename: "{file_name}", directory: "")',
            f"!{ty} = !DISubroutineType(types: !{{}})",
            f'!{dwarf} = !{{i32 7, !"Dwarf Version", i32 4}}']
    for f in [f for f in model_functions if f in bodies and f in of_fn]:
        start, end = bodies[f]
        sp, line = next_id, of_fn[f]
        next_id += 1
        name = f.replace("\\", "\\\\").replace('"', '\\"')
        meta.append(f'!{sp} = distinct !DISubprogram(name: "{name}", linkageName: "{name}", scope: !{file}, '
                    f"file: !{file}, line: {line}, type: !{ty}, scopeLine: {line}, "
                    f"spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !{cu})")
        lines[start] = lines[start][:-1].rstrip() + f" !dbg !{sp} {{"
        locs: dict[int, int] = {}
        for i in _instructions(lines, start, end):
            at = call_line.get(i, line) if f == entry else line
            if at not in locs:
                locs[at] = next_id
                meta.append(f"!{next_id} = !DILocation(line: {at}, column: 0, scope: !{sp})")
                next_id += 1
            if "!dbg " not in lines[i]:
                lines[i] = irtext.attach(lines[i], "dbg", locs[at])
    out = "\n".join(lines).rstrip("\n") + "\n"
    flags = irtext.named_metadata(out, "llvm.module.flags")
    if flags:
        items = [x.strip() for x in flags.group(1).split(",") if x.strip()]
        nodes = irtext.metadata_nodes(out)
        if not any('"Debug Info Version"' in nodes.get(int(x[1:]), "") for x in items):
            meta.append(f'!{next_id} = !{{i32 2, !"Debug Info Version", i32 3}}')
            items.append(f"!{next_id}")
        out = out[:flags.start()] + f"!llvm.module.flags = !{{{', '.join(items + [f'!{dwarf}'])}}}" + out[flags.end():]
    else:
        meta.append(f'!{next_id} = !{{i32 2, !"Debug Info Version", i32 3}}')
        out += f"!llvm.module.flags = !{{!{next_id}, !{dwarf}}}\n"
    out += f"!llvm.dbg.cu = !{{!{cu}}}\n" + "\n".join(meta) + "\n"
    return out, found, of_fn
