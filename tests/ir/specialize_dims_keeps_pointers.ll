; Without --all-args, pointer arguments are never specialized: a call whose only constants are
; addresses is left alone (and not logged); a mixed call keeps its addresses as parameters.
; RUN: specialize opt -passes='specialize{mode=dims,rounds=1,max-growth=none}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run()
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @zero(ptr @buf)
; CHECK-NEXT: call void @fill.spec.a77e205c(ptr getelementptr (i8, ptr @buf, i32 16))
; CHECK-NEXT: ret void
; CHECK-NOT: @zero.spec.
; CHECK: define internal void @fill.spec.a77e205c(ptr %arg0)
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @fill(ptr %arg0, i32 4) #
; LOG: 1 call sites with constant arguments: 1 kept, 0 shared, 0 refused; 1 clones
; LOG-NOT: @zero
; LOG: #1 @run -> @fill: kept @fill.spec.a77e205c
; LOG-NEXT: arg 1 = i32 4
; LOG-NEXT: kept as parameters: arg 0
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@buf = global [32 x i8] zeroinitializer

define internal void @zero(ptr %p) {
  store i32 0, ptr %p
  ret void
}

define internal void @fill(ptr %p, i32 %n) {
  call void @llvm.memset.p0.i32(ptr %p, i8 1, i32 %n, i1 false)
  ret void
}

declare void @llvm.memset.p0.i32(ptr, i8, i32, i1)

define void @run() {
entry:
  call void @zero(ptr @buf)
  call void @fill(ptr getelementptr (i8, ptr @buf, i32 16), i32 4)
  ret void
}
