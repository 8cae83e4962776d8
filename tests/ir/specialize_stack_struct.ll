; A call that passes the address of a stack struct whose fields are all constants at the call
; (the way a libjit kernel hands CMSIS-DSP an arm_matrix_instance_f32): the struct becomes a
; private constant global, the clone reads it, and after constant propagation the callee's loads
; of rows, columns and data pointer are folded away.
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none},constprop' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run()
; CHECK-NOT: store
; CHECK: %r = call fastcc float @sum.spec.8a837697()
; CHECK-LABEL: define internal fastcc float @sum.spec.8a837697()
; CHECK-NOT: load i16
; CHECK-NOT: load ptr
; CHECK: getelementptr float, ptr @w, i32 %i.i
; CHECK: icmp samesign ult i32 %i.i, 5
; CHECK: ret float
; LOG: #1 @run -> @sum: kept @sum.spec.8a837697
; LOG-NEXT: arg 0 = stack object %m (8 bytes, constant) = <{ i16 2, i16 3, ptr @w }>
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

%struct.mat = type { i16, i16, ptr }

@w = internal constant [6 x float] [float 1.0, float 2.0, float 3.0, float 4.0, float 5.0, float 6.0]
@out = global float 0.0

define internal float @sum(ptr noundef readonly captures(none) %m) {
entry:
  %rows = load i16, ptr %m, align 4
  %cols.p = getelementptr inbounds i8, ptr %m, i32 2
  %cols = load i16, ptr %cols.p, align 2
  %data.p = getelementptr inbounds i8, ptr %m, i32 4
  %data = load ptr, ptr %data.p, align 4
  %r = zext i16 %rows to i32
  %c = zext i16 %cols to i32
  %n = mul i32 %r, %c
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %acc.next, %loop ]
  %p = getelementptr float, ptr %data, i32 %i
  %x = load float, ptr %p, align 4
  %acc.next = fadd float %acc, %x
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret float %acc.next
}

define void @run() {
entry:
  %m = alloca %struct.mat, align 4
  call void @llvm.lifetime.start.p0(ptr %m)
  store i16 2, ptr %m, align 4
  %cols = getelementptr inbounds i8, ptr %m, i32 2
  store i16 3, ptr %cols, align 2
  %data = getelementptr inbounds i8, ptr %m, i32 4
  store ptr @w, ptr %data, align 4
  %r = call float @sum(ptr %m)
  call void @llvm.lifetime.end.p0(ptr %m)
  store float %r, ptr @out, align 4
  ret void
}

declare void @llvm.lifetime.start.p0(ptr)
declare void @llvm.lifetime.end.p0(ptr)
