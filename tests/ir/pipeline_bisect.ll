; A pipeline cut after each step, as a person bisects one (`specialize opt -passes=`): after
; specialize (one round) the clone only calls the original with the constants, inlined always;
; constprop puts the body in the clone (the loop still reads @w); O2 unrolls it and folds the
; constant weights into the multiplies (-1.0 becomes fneg).
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none,flash-budget=none}' %s | filecheck %s
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none,flash-budget=none},constprop' %s | filecheck --check-prefix=CONSTPROP %s
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none,flash-budget=none},constprop,O2' %s | filecheck --check-prefix=O2 %s
; CHECK-LABEL: define void @run()
; CHECK-NEXT: call void @scale.spec.e0f238bc()
; CHECK-LABEL: define internal void @scale.spec.e0f238bc()
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @scale(ptr @out, ptr @in, ptr @w, i32 4) #[[INLINE:[0-9]+]]
; CHECK: attributes #[[INLINE]] = { alwaysinline }
; CONSTPROP-NOT: define internal void @scale(
; CONSTPROP-LABEL: define internal {{.*}}@scale.spec.e0f238bc()
; CONSTPROP: getelementptr float, ptr @w, i32 %i
; CONSTPROP: fmul float
; CONSTPROP: icmp {{.*}}ult i32 %i{{.*}}, 3
; O2-LABEL: define internal {{.*}}@scale.spec.e0f238bc()
; O2-NOT: br
; O2: fmul float %{{.*}}, 5.000000e-01
; O2: fmul float %{{.*}}, 2.000000e+00
; O2: fneg float
; O2: fmul float %{{.*}}, 4.000000e+00
; O2-NEXT: store
; O2-NEXT: ret void
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@in = global [4 x float] zeroinitializer
@out = global [4 x float] zeroinitializer
@w = internal constant [4 x float] [float 5.000000e-01, float 2.000000e+00, float -1.000000e+00, float 4.000000e+00]

define internal void @scale(ptr %out, ptr %in, ptr %w, i32 %n) noinline {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %pi = getelementptr float, ptr %in, i32 %i
  %pw = getelementptr float, ptr %w, i32 %i
  %po = getelementptr float, ptr %out, i32 %i
  %x = load float, ptr %pi
  %c = load float, ptr %pw
  %y = fmul float %x, %c
  store float %y, ptr %po
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}

define void @run() {
  call void @scale(ptr @out, ptr @in, ptr @w, i32 4)
  ret void
}
