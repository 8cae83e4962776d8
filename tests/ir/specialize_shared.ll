; Equal call sites (same callee, same constants) share one clone; other constants get another
; clone, named by a hash of the callee and its constants (not by call-site order).
; RUN: specialize opt -passes='specialize{mode=dims,rounds=1,max-growth=none}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run(ptr %a, ptr %b)
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @relu.spec.c4722f32(ptr %a)
; CHECK-NEXT: call void @relu.spec.412d416b(ptr %b)
; CHECK-NEXT: call void @relu.spec.c4722f32(ptr %b)
; CHECK-NEXT: ret void
; CHECK: define internal void @relu.spec.c4722f32(ptr %arg0)
; CHECK: call void @relu(ptr %arg0, i32 16)
; CHECK: define internal void @relu.spec.412d416b(ptr %arg0)
; CHECK: call void @relu(ptr %arg0, i32 32)
; CHECK-NOT: define {{.*}}@relu.spec.
; LOG: 3 call sites with constant arguments: 2 kept, 1 shared, 0 refused; 2 clones
; LOG: #1 @run -> @relu: kept @relu.spec.c4722f32
; LOG: #2 @run -> @relu: kept @relu.spec.412d416b
; LOG: #3 @run -> @relu: shared @relu.spec.c4722f32
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

define internal void @relu(ptr %p, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %q = getelementptr float, ptr %p, i32 %i
  %x = load float, ptr %q
  %y = call float @llvm.maxnum.f32(float %x, float 0.0)
  store float %y, ptr %q
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}

declare float @llvm.maxnum.f32(float, float)

define void @run(ptr %a, ptr %b) {
entry:
  call void @relu(ptr %a, i32 16)
  call void @relu(ptr %b, i32 32)
  call void @relu(ptr %b, i32 16)
  ret void
}
