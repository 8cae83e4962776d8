; all-args with a call chosen shape-only (call 1, as `specialize{shape-only=1}`): that call is
; specialized by dims' rule -- its clone fixes the size, not the buffer -- and so are the calls
; inside its clone in later rounds (round 2 finds @helper called with @buf1 there, after IPSCCP
; propagated the clone's one caller's buffer, and still fixes only the size). Call 2 is
; specialized on everything. The calls' numbers (callsites.py) are on the `call N` in the log.
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=2,max-growth=none,shape-only=1}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run()
; CHECK-NEXT: entry:
; CHECK-NEXT: call fastcc void @kernel.spec.[[A:[0-9a-f]+]](ptr nonnull @buf1), !specializer.call !0
; CHECK-NEXT: call fastcc void @kernel.spec.[[B:[0-9a-f]+]](), !specializer.call !1
; CHECK: define internal fastcc void @kernel.spec.[[A]](ptr %arg0)
; CHECK: call fastcc void @helper.spec.[[HA:[0-9a-f]+]](ptr nonnull @buf1)
; CHECK: define internal fastcc void @kernel.spec.[[B]]()
; CHECK: call fastcc void @helper.spec.[[HB:[0-9a-f]+]]()
; CHECK: define internal fastcc void @helper.spec.[[HA]](ptr %arg0)
; CHECK-NEXT: entry:
; CHECK-NEXT: call fastcc void @helper(ptr %arg0, i32 16)
; CHECK: define internal fastcc void @helper.spec.[[HB]]()
; CHECK-NEXT: entry:
; CHECK-NEXT: call fastcc void @helper(ptr @buf2, i32 16)
; LOG: ; round 1
; LOG-NEXT: #1 @run -> @kernel (call 1, shape-only): kept @kernel.spec.
; LOG-NEXT: arg 1 = i32 16
; LOG-NEXT: kept as parameters: arg 0
; LOG-NEXT: size:
; LOG-NEXT: #2 @run -> @kernel (call 2): kept @kernel.spec.
; LOG-NEXT: arg 0 = @buf2 (f32[16], 64 bytes, buffer)
; LOG-NEXT: arg 1 = i32 16
; LOG: ; round 2
; LOG-NEXT: #3 @kernel.spec.{{.*}} -> @helper (shape-only): kept @helper.spec.
; LOG-NEXT: arg 1 = i32 16
; LOG-NEXT: kept as parameters: arg 0
; LOG-NEXT: size:
; LOG-NEXT: #4 @kernel.spec.{{.*}} -> @helper: kept @helper.spec.
; LOG-NEXT: arg 0 = @buf2 (f32[16], 64 bytes, buffer)
; LOG-NEXT: arg 1 = i32 16
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@buf1 = internal global [16 x float] zeroinitializer
@buf2 = internal global [16 x float] zeroinitializer

define internal void @helper(ptr %p, i32 %n) noinline {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %q = getelementptr float, ptr %p, i32 %i
  %x = load float, ptr %q
  %y = fadd float %x, 1.0
  store float %y, ptr %q
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}

define internal void @kernel(ptr %p, i32 %n) noinline {
entry:
  call void @helper(ptr %p, i32 %n)
  ret void
}

define void @run() {
entry:
  call void @kernel(ptr @buf1, i32 16), !specializer.call !0
  call void @kernel(ptr @buf2, i32 16), !specializer.call !1
  ret void
}

!0 = !{i32 1}
!1 = !{i32 2}
