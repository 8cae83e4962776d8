; --all-args on a dot with a pruned constant weight array {0.5, 0, -2, 0}: once the loop is
; unrolled and the weights folded, the two zero weights' multiply-adds are gone (zeroweights.py):
; two fmul and two fadd (one adds the 0.0 the sum starts from) are left; no x[1] or x[3] load.
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none},constprop{unroll=true},zeroweights' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define internal {{.*}}@dot4.spec.f1427e4b(
; CHECK-NOT: fmul float %{{.*}}, {{-?}}0.000000e+00
; CHECK-NOT: getelementptr {{.*}}i32 4
; CHECK-NOT: getelementptr {{.*}}i32 12
; CHECK: %[[M0:.*]] = fmul float %{{.*}}, 5.000000e-01
; CHECK-NEXT: %[[S0:.*]] = fadd float %[[M0]], 0.000000e+00
; CHECK-NEXT: getelementptr i8, ptr %arg1, i32 8
; CHECK-NEXT: load float
; CHECK-NEXT: %[[M2:.*]] = fmul float %{{.*}}, -2.000000e+00
; CHECK-NEXT: fadd float %[[S0]], %[[M2]]
; CHECK-NOT: fmul
; CHECK-NOT: fadd
; CHECK: ret void
; LOG: {{^}}; zero weights: 2 multiply-adds by a constant 0.0 dropped (zeroweights.py)
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@w = internal constant [4 x float] [float 0.5, float 0.0, float -2.0, float -0.0], align 4

define internal void @dot4(ptr %w, ptr %x, i32 %n, ptr %out) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %sum, %loop ]
  %wp = getelementptr float, ptr %w, i32 %i
  %xp = getelementptr float, ptr %x, i32 %i
  %wv = load float, ptr %wp
  %xv = load float, ptr %xp
  %m = fmul float %xv, %wv
  %sum = fadd float %acc, %m
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  store float %sum, ptr %out
  ret void
}

define void @run(ptr %x, ptr %out) {
entry:
  call void @dot4(ptr @w, ptr %x, i32 4, ptr %out)
  ret void
}
