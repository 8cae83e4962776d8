; The flash budget: two call sites unroll their clones of @poly (64 and 16 iterations) into
; code and a 4 KiB constant table takes flash too; with --flash-budget 5000 the scratch build
; does not fit, so the clone that adds the most code (n = 64) is refused and logged; the smaller
; one fits and is kept.
; RUN: specialize opt -passes='specialize{mode=dims,rounds=1,max-growth=none,flash-budget=5000,unroll-threshold=2000}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run(ptr %p)
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @poly(ptr %p, i32 64)
; CHECK-NEXT: call void @poly.spec.8738269b(ptr %p)
; LOG: flash budget 5000 bytes (code + data)
; LOG: 2 call sites with constant arguments: 1 kept, 0 shared, 1 refused; 1 clones
; LOG: #1 @run -> @poly: refused (flash budget: the build would need {{[0-9]+}} bytes of flash > 5000 (--flash-budget); this clone adds {{[0-9]+}})
; LOG: #2 @run -> @poly: kept @poly.spec.8738269b
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@table = constant [1024 x float] zeroinitializer

define internal void @poly(ptr %p, i32 %n) {
entry:
  %c = icmp eq i32 %n, 0
  br i1 %c, label %done, label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %q = getelementptr float, ptr %p, i32 %i
  %x = load float, ptr %q
  %x2 = fmul float %x, %x
  %a = fmul float %x2, 3.0
  %b = fadd float %a, %x
  %y = fadd float %b, 1.0
  store float %y, ptr %q
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}

define void @run(ptr %p) {
entry:
  call void @poly(ptr %p, i32 64)
  call void @poly(ptr %p, i32 16)
  ret void
}

define ptr @keep() {
  ret ptr @table
}
