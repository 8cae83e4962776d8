; Stack objects whose contents are not known at the call are left alone: a field written with
; a value computed at run time, a field written after the call (the callee saw the old bytes),
; a field written in another block, an object the caller reads back, and a callee that may write
; through its parameter. None of these calls is specialized (no constants are left to log).
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @nonconstant_field(ptr %buf)
; CHECK: call void @read(ptr %m)
; CHECK-LABEL: define void @written_after_call()
; CHECK: call void @read(ptr %m)
; CHECK-LABEL: define void @written_in_another_block(i1 %c)
; CHECK: call void @read(ptr %m)
; CHECK-LABEL: define void @read_back()
; CHECK: call void @read(ptr %m)
; CHECK-LABEL: define void @callee_writes()
; CHECK: call void @write(ptr %m)
; CHECK-NOT: .spec.
; LOG: 0 call sites with constant arguments
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@w = internal constant [2 x float] [float 1.0, float 2.0]
@sink = global i32 0

declare void @use(i32, ptr)

define internal void @read(ptr readonly captures(none) %m) {
  %n = load i32, ptr %m
  %p.p = getelementptr inbounds i8, ptr %m, i32 4
  %p = load ptr, ptr %p.p
  call void @use(i32 %n, ptr %p)
  ret void
}

define internal void @write(ptr captures(none) %m) {
  store i32 0, ptr %m
  ret void
}

define void @nonconstant_field(ptr %buf) {
  %m = alloca { i32, ptr }, align 4
  store i32 2, ptr %m
  %p = getelementptr inbounds i8, ptr %m, i32 4
  store ptr %buf, ptr %p
  call void @read(ptr %m)
  ret void
}

define void @written_after_call() {
  %m = alloca { i32, ptr }, align 4
  store i32 2, ptr %m
  %p = getelementptr inbounds i8, ptr %m, i32 4
  store ptr @w, ptr %p
  call void @read(ptr %m)
  store i32 3, ptr %m
  call void @read(ptr %m)
  ret void
}

define void @written_in_another_block(i1 %c) {
entry:
  %m = alloca { i32, ptr }, align 4
  %p = getelementptr inbounds i8, ptr %m, i32 4
  store ptr @w, ptr %p
  br i1 %c, label %then, label %join
then:
  store i32 2, ptr %m
  br label %join
join:
  call void @read(ptr %m)
  ret void
}

define void @read_back() {
  %m = alloca { i32, ptr }, align 4
  store i32 2, ptr %m
  %p = getelementptr inbounds i8, ptr %m, i32 4
  store ptr @w, ptr %p
  call void @read(ptr %m)
  %n = load i32, ptr %m
  store i32 %n, ptr @sink
  ret void
}

define void @callee_writes() {
  %m = alloca { i32, ptr }, align 4
  store i32 2, ptr %m
  %p = getelementptr inbounds i8, ptr %m, i32 4
  store ptr @w, ptr %p
  call void @write(ptr %m)
  ret void
}
