; An XLA kernel module for x86-64 becomes a thumbv7em module: triple, datalayout, host
; attributes, invariant.load and the xla_dylib_index flag are replaced or dropped.
; RUN: specialize opt -passes=normalize,retarget %s | filecheck %s
; CHECK: target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
; CHECK: target triple = "thumbv7em-unknown-none-eabihf"
; CHECK: define ptr @k(ptr %0) {
; CHECK: %2 = load ptr, ptr %0, align 8{{$}}
; CHECK-NOT: invariant.load
; CHECK-NOT: uwtable
; CHECK-NOT: prefer-vector-width
; CHECK: !llvm.module.flags = !{!0}
; CHECK-NOT: xla_dylib_index
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define ptr @k(ptr %0) #0 {
  %2 = load ptr, ptr %0, align 8, !invariant.load !2
  ret ptr null
}

attributes #0 = { uwtable "frame-pointer"="all" "prefer-vector-width"="256" "target-cpu"="znver4" }

!llvm.module.flags = !{!0, !1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = !{i32 1, !"xla_dylib_index", i64 2}
!2 = !{}
