; A row vector times a constant weight that is mostly zeros (all-args): the weight is re-laid out
; as compressed sparse columns -- only the nonzeros, their rows, the column starts -- and the call
; goes to the sparse kernel, so no zero weight's multiply-add is left. A dense weight (@dense,
; every value nonzero) keeps the dense kernel; the log says why.
; RUN: specialize opt -passes=relayout %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK: @w.csc.val = internal unnamed_addr constant [3 x float] [float 2.000000e+00, float 5.000000e-01, float -1.000000e+00]
; CHECK: @w.csc.row = internal unnamed_addr constant [3 x i16] [i16 1, i16 0, i16 3]
; CHECK: @w.csc.start = internal unnamed_addr constant [4 x i16] [i16 0, i16 1, i16 1, i16 3]
; CHECK: call void @libjit_vecmat_csc_f32(ptr @out, ptr @x, ptr @w.csc.val, ptr @w.csc.row, ptr @w.csc.start, i32 3)
; CHECK: call void @libjit_matmul_f32(ptr @out2, ptr @x, ptr @dense, i32 1, i32 1, i32 2, i32 2, i32 0, i32 0)
; CHECK: declare void @libjit_vecmat_csc_f32(ptr, ptr, ptr, ptr, ptr, i32)
; LOG: weight @w (f32[4x3], 3 of 12 nonzero): re-laid out as compressed sparse columns for @libjit_vecmat_csc_f32, 48 -> 26 bytes
; LOG: weight @dense (f32[2x2], 4 of 4 nonzero): left dense (100% nonzero > 35%: the dense kernel is faster)
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@x = global [4 x float] zeroinitializer
@out = global [3 x float] zeroinitializer
@out2 = global [2 x float] zeroinitializer
; w [4][3]: column 0 has row 1; column 1 is empty; column 2 has rows 0 and 3
@w = constant [12 x float] [float 0.0, float 0.0, float 0.5, float 2.0, float 0.0, float 0.0, float 0.0, float 0.0, float 0.0, float 0.0, float 0.0, float -1.0]
@dense = constant [4 x float] [float 1.0, float 2.0, float 3.0, float 4.0]

declare void @libjit_matmul_f32(ptr, ptr, ptr, i32, i32, i32, i32, i32, i32)

define void @run() {
  call void @libjit_matmul_f32(ptr @out, ptr @x, ptr @w, i32 1, i32 1, i32 4, i32 3, i32 0, i32 0)
  call void @libjit_matmul_f32(ptr @out2, ptr @x, ptr @dense, i32 1, i32 1, i32 2, i32 2, i32 0, i32 0)
  ret void
}
