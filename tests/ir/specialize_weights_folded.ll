; --all-args on a call that passes a constant weight array: after constant propagation and
; unrolling, the clone multiplies by the weights' values -- no load from @w is left.
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none},constprop{unroll=true}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run(ptr %x, ptr %out)
; CHECK: call {{.*}}@dot4.spec.f1427e4b(
; CHECK-LABEL: define internal {{.*}}@dot4.spec.f1427e4b(
; CHECK-NOT: @w
; CHECK-DAG: fmul float %{{.*}}, 5.000000e-01
; CHECK-DAG: fmul float %{{.*}}, -2.000000e+00
; CHECK-DAG: fmul float %{{.*}}, 3.000000e+00
; CHECK-DAG: fmul float %{{.*}}, 1.250000e-01
; CHECK-NOT: @w
; CHECK: ret void
; LOG: #1 @run -> @dot4: kept @dot4.spec.f1427e4b
; LOG-NEXT: arg 0 = @w (f32[4], 16 bytes, constant)
; LOG-NEXT: arg 2 = i32 4
; LOG-NEXT: kept as parameters: arg 1, 3
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@w = internal constant [4 x float] [float 0.5, float -2.0, float 3.0, float 0.125], align 4

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
