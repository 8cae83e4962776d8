"""Generate the entry function: XLA's thunk sequence as straight-line calls over static buffers.

C ABI: `void <fn>_run(void)`. Each kernel call gets a constant call frame in flash
(`<kernel>.frame<j>`) whose arguments point at the memory plan's globals, so every argument a
kernel loads from its frame is a link-time constant.
"""

from __future__ import annotations

from specializer.capture.memplan import MemoryPlan, _q
from specializer.capture.thunks import Conditional, Const, Copy, Kernel, LibCall, Scratch, Slice, While

FRAME = "{ ptr, ptr, i64, ptr }"  # XLA_CPU_KernelCallFrame: num_workgroups, workgroup_id, num_args, args
ARG = "{ ptr, i64 }"  # XLA_CPU_KernelArg: data, size
DIM3 = "{ i64, i64, i64 }"


class _Emitter:
    def __init__(self, plan: MemoryPlan):
        self.plan = plan
        self.globals: list[str] = []
        self.declared: dict[str, str] = {}
        self.body: list[str] = []
        self.tmp = 0
        self.labels = 0
        self.frames: dict[tuple, str] = {}  # equal calls share one frame
        self.consts: dict[str, Const] = {}
        self.calls: list[tuple[str, str]] = []  # (callee, HLO instruction) per call, in text order

    def addr(self, s: Slice) -> str:
        sym, base = self.plan.places[s.alloc]
        off = base + s.offset
        return f"ptr {_q(sym)}" if off == 0 else f"ptr getelementptr (i8, ptr {_q(sym)}, i32 {off})"

    def value(self, text: str) -> str:
        self.tmp += 1
        name = f"%t{self.tmp}"
        self.body.append(f"  {name} = {text}")
        return name

    def label(self, stem: str) -> str:
        self.labels += 1
        return f"{stem}{self.labels}"

    def frame(self, k: Kernel, wg: int) -> str:
        key = (k.name, k.args, k.workgroups, wg)
        if key in self.frames:
            return self.frames[key]
        base = f"{k.name}.frame{wg}"
        if base in self.frames.values():  # the same kernel called on other buffers
            base = f"{k.name}.call{len(self.frames)}.frame{wg}"
        nwg = f"{base}.num_workgroups"
        wgid = f"{base}.workgroup_id"
        args = f"{base}.args"
        x, y, z = k.workgroups
        self.globals.append(f"{_q(nwg)} = private unnamed_addr constant {DIM3} {{ i64 {x}, i64 {y}, i64 {z} }}")
        self.globals.append(f"{_q(wgid)} = private unnamed_addr constant {DIM3} {{ i64 {wg}, i64 0, i64 0 }}")
        items = ", ".join(f"{ARG} {{ {self.addr(s)}, i64 {s.size} }}" for s in k.args)
        self.globals.append(f"{_q(args)} = private unnamed_addr constant [{len(k.args)} x {ARG}] [{items}]")
        self.globals.append(f"{_q(base)} = private unnamed_addr constant {FRAME} "
                            f"{{ ptr {_q(nwg)}, ptr {_q(wgid)}, i64 {len(k.args)}, ptr {_q(args)} }}")
        self.frames[key] = base
        return base

    def sequence(self, thunks: tuple) -> None:
        for t in thunks:
            getattr(self, "emit_" + type(t).__name__.lower())(t)

    def emit_kernel(self, k: Kernel) -> None:
        self.declared[k.name] = f"declare ptr {_q(k.name)}(ptr)"
        x, y, z = k.workgroups
        if y != 1 or z != 1:
            raise ValueError(f"kernel {k.name}: multi-dimensional workgroups {k.workgroups}")
        for wg in range(x):
            self.value(f"call ptr {_q(k.name)}(ptr {_q(self.frame(k, wg))})")
            self.calls.append((k.name, k.op))

    def operand(self, a) -> str:
        if isinstance(a, Slice):
            return self.addr(a)
        if isinstance(a, Scratch):
            return f"ptr {_q(self.plan.scratch)}"
        if isinstance(a, Const):
            if a.name not in self.consts:
                self.consts[a.name] = a
                for r in a.refs:
                    self.operand(r)
                scratch = _q(self.plan.scratch) if self.plan.scratch else "null"
                init = a.init.replace('{scratch}', scratch)
                for k, s in enumerate(a.slices):
                    init = init.replace(f"{{slice{k}}}", self.addr(s).removeprefix("ptr "))
                self.globals.append(f"{_q(a.name)} = private unnamed_addr constant {a.type} {init}, align 4")
            elif self.consts[a.name] != a:
                raise ValueError(f"two different constants named {a.name}")
            return f"ptr {_q(a.name)}"
        if a is None:
            return "ptr null"
        return f"i32 {a}"

    def emit_libcall(self, c: LibCall) -> None:
        params = ", ".join(self.operand(a) for a in c.args)
        types = ", ".join("i32" if isinstance(a, int) else "ptr" for a in c.args)
        self.declared[c.function] = f"declare {c.ret} {_q(c.function)}({types})"
        self.calls.append((c.function, c.op))
        if c.ret == "void":
            self.body.append(f"  call void {_q(c.function)}({params})")
        else:
            self.value(f"call {c.ret} {_q(c.function)}({params})")

    def emit_copy(self, c: Copy) -> None:
        self.declared["llvm.memcpy.p0.p0.i32"] = "declare void @llvm.memcpy.p0.p0.i32(ptr, ptr, i32, i1)"
        self.body.append(f"  call void @llvm.memcpy.p0.p0.i32({self.addr(c.dst)}, {self.addr(c.src)}, "
                         f"i32 {c.src.size}, i1 false)")
        self.calls.append(("llvm.memcpy.p0.p0.i32", c.op))

    def emit_while(self, w: While) -> None:
        cond, body, done = self.label("while.cond"), self.label("while.body"), self.label("while.done")
        self.body.append(f"  br label %{cond}\n{cond}:")
        self.sequence(w.cond)
        p = self.value(f"load i8, {self.addr(w.pred)}")
        c = self.value(f"icmp ne i8 {p}, 0")
        self.body.append(f"  br i1 {c}, label %{body}, label %{done}\n{body}:")
        self.sequence(w.body)
        self.body.append(f"  br label %{cond}\n{done}:")

    def emit_conditional(self, c: Conditional) -> None:
        labels = [self.label(f"branch{i}.") for i in range(len(c.branches))]
        done = self.label("cond.done")
        if c.index_is_pred:
            p = self.value(f"load i8, {self.addr(c.index)}")
            b = self.value(f"icmp ne i8 {p}, 0")
            self.body.append(f"  br i1 {b}, label %{labels[0]}, label %{labels[1]}")
        else:
            i = self.value(f"load i32, {self.addr(c.index)}")
            cases = " ".join(f"i32 {n}, label %{lab}" for n, lab in enumerate(labels[:-1]))
            self.body.append(f"  switch i32 {i}, label %{labels[-1]} [ {cases} ]")
        for lab, seq in zip(labels, c.branches):
            self.body.append(f"{lab}:")
            self.sequence(seq)
            self.body.append(f"  br label %{done}")
        self.body.append(f"{done}:")


def generate(entry: str, thunks: tuple, plan: MemoryPlan, calls: list | None = None) -> str:
    """IR text (no target header) of the memory plan's globals, the frames and the entry.
    `calls`, when given, receives (callee, HLO instruction) for each call the entry makes, in
    the order of the text (hlo_sites.py)."""
    e = _Emitter(plan)
    e.sequence(thunks)
    if calls is not None:
        calls.extend(e.calls)
    out = [plan.globals_ir, *e.globals, "",
           f"define void {_q(entry)}() {{", "entry:", *e.body, "  ret void", "}", ""]
    out += [e.declared[k] for k in sorted(e.declared)]
    return "\n".join(out) + "\n"
