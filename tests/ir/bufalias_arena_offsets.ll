; all-args: an address 32000 bytes into the arena becomes the alias @arena.at32000 (a symbol of
; its own); a small offset (fits an LDR immediate) and an offset into a constant stay as written.
; RUN: specialize opt -passes=bufalias %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; LOG: ; buffer addresses as symbols (bufalias.py): @arena.at32000, @arena.at64000{{$}}
; CHECK: @arena.at32000 = internal alias i8, getelementptr (i8, ptr @arena, i32 32000)
; CHECK-NEXT: @arena.at64000 = internal alias i8, getelementptr (i8, ptr @arena, i32 64000)
; CHECK-NOT: alias
; CHECK-LABEL: define void @run()
; CHECK-NEXT: call void @k(ptr @arena.at32000, ptr getelementptr (i8, ptr @arena, i32 64), ptr getelementptr (i8, ptr @w, i32 8000))
; CHECK-NEXT: call void @k(ptr @arena.at32000, ptr @arena.at64000, ptr @w)
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@arena = internal global [96000 x i8] zeroinitializer, align 32
@w = internal constant [4000 x float] zeroinitializer, align 4

declare void @k(ptr, ptr, ptr)

define void @run() {
  call void @k(ptr getelementptr inbounds nuw (i8, ptr @arena, i32 32000), ptr getelementptr (i8, ptr @arena, i32 64), ptr getelementptr (i8, ptr @w, i32 8000))
  call void @k(ptr getelementptr (i8, ptr @arena, i32 32000), ptr getelementptr (i8, ptr @arena, i32 64000), ptr @w)
  ret void
}
