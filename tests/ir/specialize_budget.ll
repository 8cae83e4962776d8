; The size budget: with the loop bound known, the clone unrolls into far more code than its
; callee; at --max-growth 1.5 it is refused, the call keeps calling the original, and the log
; says why, with both sizes.
; RUN: specialize opt -passes='specialize{mode=dims,rounds=1,max-growth=1.5,unroll-threshold=2000}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run(ptr %p)
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @poly(ptr %p, i32 64)
; CHECK-NOT: @poly.spec.
; LOG: max growth 1.5x
; LOG: 1 call sites with constant arguments: 0 kept, 0 shared, 1 refused; 0 clones
; LOG: #1 @run -> @poly: refused (size budget: clones of @poly would add [[CLONE:[0-9]+]] bytes > 1.5 x its [[CALLEE:[0-9]+]] bytes)
; LOG-NEXT: arg 1 = i32 64
; LOG-NEXT: kept as parameters: arg 0
; LOG-NEXT: size: clone adds [[CLONE]] bytes; callee [[CALLEE]] bytes (with the functions it calls)
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

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
  ret void
}
