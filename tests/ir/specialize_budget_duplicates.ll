; The budget counts all clones of a callee together: three calls of one kernel on three
; different buffers make three clones, each about as large as the generic kernel; at
; --max-growth 2.5 the first two fit, the third is refused, and its call keeps calling the
; original.
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=2.5}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run()
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @smooth.spec.2f36c502()
; CHECK-NEXT: call void @smooth.spec.bd9e177e()
; CHECK-NEXT: call void @smooth(ptr @c, i32 24)
; CHECK-NOT: call {{.*}}@smooth.spec.
; LOG: 3 call sites with constant arguments: 2 kept, 0 shared, 1 refused; 2 clones
; LOG: #1 @run -> @smooth: kept @smooth.spec.2f36c502
; LOG: #2 @run -> @smooth: kept @smooth.spec.bd9e177e
; LOG: #3 @run -> @smooth: refused (size budget: clones of @smooth would add {{[0-9]+}} bytes > 2.5 x its {{[0-9]+}} bytes)
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@a = global [24 x float] zeroinitializer
@b = global [24 x float] zeroinitializer
@c = global [24 x float] zeroinitializer

define internal void @smooth(ptr %p, i32 %n) noinline {
entry:
  %last = add i32 %n, -1
  br label %loop
loop:
  %i = phi i32 [ 1, %entry ], [ %next, %loop ]
  %im1 = add i32 %i, -1
  %ip1 = add i32 %i, 1
  %pa = getelementptr float, ptr %p, i32 %im1
  %pb = getelementptr float, ptr %p, i32 %i
  %pc = getelementptr float, ptr %p, i32 %ip1
  %xa = load float, ptr %pa
  %xb = load float, ptr %pb
  %xc = load float, ptr %pc
  %s1 = fadd float %xa, %xc
  %s2 = fmul float %xb, 2.0
  %s3 = fadd float %s1, %s2
  %y = fmul float %s3, 0.25
  store float %y, ptr %pb
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %last
  br i1 %more, label %loop, label %done
done:
  ret void
}

define void @run() {
entry:
  call void @smooth(ptr @a, i32 24)
  call void @smooth(ptr @b, i32 24)
  call void @smooth(ptr @c, i32 24)
  ret void
}
