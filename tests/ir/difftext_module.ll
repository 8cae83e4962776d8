; The diff-oriented text (specializer/optimize/difftext.py): globals then functions in name order,
; unnamed values named per function, attribute groups written where they are used, metadata
; named by content, an initializer over 256 bytes summarized, one of 256 bytes printed.
; RUN: specialize opt --diff-text %s | filecheck %s
; CHECK: ; diff-oriented text (specializer/optimize/difftext.py): for reading and diffing, not for parsing back.
; CHECK-NOT: ModuleID
; CHECK-NOT: source_filename
; CHECK: target triple = "thumbv7em-unknown-none-eabihf"
; CHECK: @big = internal constant [75 x i32] ..., align 4  ; initializer summarized: i32[75], 300 bytes, sha256 {{[0-9a-f]+}} of its text
; CHECK-NEXT: @small = internal constant [64 x i32] [i32 0, i32 1,
; CHECK-LABEL: define i32 @alpha(i32 %arg0, ptr %p) nounwind {
; CHECK-NEXT: bb0:
; CHECK-NEXT:   %add.1 = add i32 %arg0, 1
; CHECK-NEXT:   %gep.1 = getelementptr i32, ptr %p, i32 %add.1
; CHECK-NEXT:   %load.1 = load i32, ptr %gep.1, align 4, !tbaa !m.{{[0-9a-f]+}}
; CHECK-NEXT:   %zeta.1 = call i32 @zeta(i32 %load.1) nounwind memory(none)
; CHECK-NEXT:   %add.2 = add i32 %zeta.1, %add.1
; CHECK-NEXT:   br label %bb1
; CHECK-EMPTY:
; CHECK-NEXT: bb1:
; CHECK-NEXT:   %phi.1 = phi i32 [ %add.2, %bb0 ], [ %add.3, %bb1 ]
; CHECK-NEXT:   %add.3 = add i32 %phi.1, -1
; CHECK-NEXT:   %icmp.1 = icmp eq i32 %add.3, 0
; CHECK-NEXT:   br i1 %icmp.1, label %done, label %bb1, !llvm.loop !d.[[LOOP:[0-9a-f]+]]
; CHECK-LABEL: define i32 @zeta(i32 %x) nounwind memory(none) {
; CHECK-NEXT: bb0:
; CHECK-NEXT:   %mul.1 = mul i32 %x, 3
; CHECK-NEXT:   ret i32 %mul.1
; CHECK: !llvm.module.flags = !{!m.{{[0-9a-f]+}}}
; CHECK: !d.[[LOOP]] = distinct !{!d.[[LOOP]], !m.{{[0-9a-f]+}}}
; CHECK-NOT: attributes #
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@small = internal constant [64 x i32] [i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15, i32 16, i32 17, i32 18, i32 19, i32 20, i32 21, i32 22, i32 23, i32 24, i32 25, i32 26, i32 27, i32 28, i32 29, i32 30, i32 31, i32 32, i32 33, i32 34, i32 35, i32 36, i32 37, i32 38, i32 39, i32 40, i32 41, i32 42, i32 43, i32 44, i32 45, i32 46, i32 47, i32 48, i32 49, i32 50, i32 51, i32 52, i32 53, i32 54, i32 55, i32 56, i32 57, i32 58, i32 59, i32 60, i32 61, i32 62, i32 63], align 4
@big = internal constant [75 x i32] [i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15, i32 16, i32 17, i32 18, i32 19, i32 20, i32 21, i32 22, i32 23, i32 24, i32 25, i32 26, i32 27, i32 28, i32 29, i32 30, i32 31, i32 32, i32 33, i32 34, i32 35, i32 36, i32 37, i32 38, i32 39, i32 40, i32 41, i32 42, i32 43, i32 44, i32 45, i32 46, i32 47, i32 48, i32 49, i32 50, i32 51, i32 52, i32 53, i32 54, i32 55, i32 56, i32 57, i32 58, i32 59, i32 60, i32 61, i32 62, i32 63, i32 64, i32 65, i32 66, i32 67, i32 68, i32 69, i32 70, i32 71, i32 72, i32 73, i32 74], align 4

define i32 @zeta(i32 %x) #1 {
  %1 = mul i32 %x, 3
  ret i32 %1
}

define i32 @alpha(i32 %0, ptr %p) #0 {
  %2 = add i32 %0, 1
  %3 = getelementptr i32, ptr %p, i32 %2
  %4 = load i32, ptr %3, align 4, !tbaa !1
  %5 = call i32 @zeta(i32 %4) #1
  %6 = add i32 %5, %2
  br label %7
7:
  %8 = phi i32 [ %6, %1 ], [ %9, %7 ]
  %9 = add i32 %8, -1
  %10 = icmp eq i32 %9, 0
  br i1 %10, label %done, label %7, !llvm.loop !4
done:
  ret i32 %8
}

attributes #0 = { nounwind }
attributes #1 = { nounwind memory(none) }

!llvm.module.flags = !{!0}
!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!2, !2, i64 0}
!2 = !{!"int", !3, i64 0}
!3 = !{!"Simple C/C++ TBAA"}
!4 = distinct !{!4, !5}
!5 = !{!"llvm.loop.mustprogress"}
