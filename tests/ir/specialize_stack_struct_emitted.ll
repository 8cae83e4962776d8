; Before constant propagation: the constant stack struct is a private constant global of the
; object's size (unwritten bytes zero), and the clone passes it to the original callee.
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none}' %s | filecheck %s
; CHECK: @sum.spec.b70ee068.arg0 = private unnamed_addr constant <{ i16, [2 x i8], ptr, [8 x i8] }> <{ i16 2, [2 x i8] zeroinitializer, ptr getelementptr (i8, ptr @w, i32 8), [8 x i8] zeroinitializer }>, align 8
; CHECK-LABEL: define void @run()
; CHECK: call void @sum.spec.b70ee068()
; CHECK-LABEL: define internal void @sum.spec.b70ee068()
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @sum(ptr @sum.spec.b70ee068.arg0) #
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@w = internal constant [6 x float] [float 1.0, float 2.0, float 3.0, float 4.0, float 5.0, float 6.0]

declare void @use(i16, ptr)

define internal void @sum(ptr readonly %m) {
  %rows = load i16, ptr %m
  %data.p = getelementptr inbounds i8, ptr %m, i32 4
  %data = load ptr, ptr %data.p
  call void @use(i16 %rows, ptr %data)
  ret void
}

define void @run() {
entry:
  %m = alloca { i16, i16, ptr, i64 }, align 8
  call void @llvm.memset.p0.i32(ptr %m, i8 0, i32 16, i1 false)
  store i16 2, ptr %m
  %data = getelementptr inbounds i8, ptr %m, i32 4
  store ptr getelementptr (i8, ptr @w, i32 8), ptr %data
  call void @sum(ptr %m)
  ret void
}

declare void @llvm.memset.p0.i32(ptr, i8, i32, i1)
