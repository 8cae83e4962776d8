; dims (Glow's default): the constant scalars of a call -- an i32 dimension and a float factor --
; go into a clone; the pointer arguments stay parameters, constant or not.
; RUN: specialize opt -passes='specialize{mode=dims,rounds=1,max-growth=none}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run()
; CHECK: call void @scale.spec.4b81ea15(ptr @out, ptr @in)
; CHECK-LABEL: define internal void @scale.spec.4b81ea15(ptr %arg0, ptr %arg1)
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @scale(ptr %arg0, ptr %arg1, i32 8, float 2.500000e+00) #[[INLINE:[0-9]+]]
; CHECK-NEXT: ret void
; CHECK: attributes #[[INLINE]] = { alwaysinline }
; LOG: mode dims
; LOG: #1 @run -> @scale: kept @scale.spec.4b81ea15
; LOG-NEXT: arg 2 = i32 8
; LOG-NEXT: arg 3 = float 2.500000e+00
; LOG-NEXT: kept as parameters: arg 0, 1
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@in = global [8 x float] zeroinitializer
@out = global [8 x float] zeroinitializer

define internal void @scale(ptr %out, ptr %in, i32 %n, float %k) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %p = getelementptr float, ptr %in, i32 %i
  %x = load float, ptr %p
  %y = fmul float %x, %k
  %q = getelementptr float, ptr %out, i32 %i
  store float %y, ptr %q
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}

define void @run() {
entry:
  call void @scale(ptr @out, ptr @in, i32 8, float 2.5)
  ret void
}
