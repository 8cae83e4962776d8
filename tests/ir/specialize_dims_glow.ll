; --dims is Glow's default: constant scalars and pointers to constant non-tensor data (a dimension
; array in a constant global, a parameter struct of numbers on the stack) are specialized; buffer
; addresses, weights (a model tensor or any float data) and structs that hold addresses are not.
; RUN: specialize opt -passes='specialize{mode=dims,rounds=1,max-growth=none}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run()
; CHECK-NEXT: entry:
; CHECK: call void @conv.spec.87a08bf5(ptr @buf, ptr @w)
; CHECK: call void @conv2(ptr @buf, ptr %mat)
; CHECK-LABEL: define internal void @conv.spec.87a08bf5(ptr %arg0, ptr %arg1)
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @conv(ptr %arg0, ptr %arg1, ptr @dims, ptr @conv.spec.87a08bf5.arg3, i32 3) #
; LOG: #1 @run -> @conv: kept @conv.spec.87a08bf5
; LOG-NEXT: arg 2 = @dims (i32[4], 16 bytes, constant)
; LOG-NEXT: arg 3 = stack object %params (8 bytes, constant) = <{ i32 1, i32 -128 }>
; LOG-NEXT: arg 4 = i32 3
; LOG-NEXT: kept as parameters: arg 0, 1
; LOG-NOT: conv2
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@buf = global [64 x float] zeroinitializer
@w = internal constant [4 x float] [float 1.0, float 2.0, float 3.0, float 4.0]
@dims = internal constant [4 x i32] [i32 1, i32 2, i32 2, i32 1]

declare void @use(ptr, ptr, i32, i32, i32)

define internal void @conv(ptr %out, ptr readonly %w, ptr readonly %d, ptr readonly %p, i32 %k) {
  %n = load i32, ptr %d
  %s = load i32, ptr %p
  call void @use(ptr %out, ptr %w, i32 %n, i32 %s, i32 %k)
  ret void
}

define internal void @conv2(ptr %out, ptr readonly %m) {
  %n = load i32, ptr %m
  call void @use(ptr %out, ptr %m, i32 %n, i32 0, i32 0)
  ret void
}

define void @run() {
entry:
  %params = alloca { i32, i32 }, align 4
  store i32 1, ptr %params
  %min = getelementptr inbounds i8, ptr %params, i32 4
  store i32 -128, ptr %min
  call void @conv(ptr @buf, ptr @w, ptr @dims, ptr %params, i32 3)
  %mat = alloca { i32, ptr }, align 4
  store i32 4, ptr %mat
  %data = getelementptr inbounds i8, ptr %mat, i32 4
  store ptr @w, ptr %data
  call void @conv2(ptr @buf, ptr %mat)
  ret void
}
