; XLA's relu `llvm.maximum.f32(x, 0.0)` becomes one compare and one select; a clamp's minimum
; with 6.0 likewise; -0.0 takes the `uge` form so +0 still wins; two values (max pooling) take
; compares, selects and an AND of the bits for the signed zeros; a NaN constant is left to LLVM.
; RUN: specialize opt -passes=fminmax %s | filecheck %s
; CHECK-LABEL: define float @relu(float %x)
; CHECK-NEXT: %cmp.1 = fcmp ugt float %x, 0.000000e+00
; CHECK-NEXT: %1 = select i1 %cmp.1, float %x, float 0.000000e+00
; CHECK-NEXT: ret float %1
define float @relu(float %x) {
  %1 = tail call float @llvm.maximum.f32(float %x, float 0.000000e+00)
  ret float %1
}

; CHECK-LABEL: define float @relu6(float %x)
; CHECK-NEXT: %r.cmp = fcmp ugt float %x, 0.000000e+00
; CHECK-NEXT: %r = select i1 %r.cmp, float %x, float 0.000000e+00
; CHECK-NEXT: %s.cmp = fcmp ult float %r, 6.000000e+00
; CHECK-NEXT: %s = select i1 %s.cmp, float %r, float 6.000000e+00
define float @relu6(float %x) {
  %r = call float @llvm.maximum.f32(float 0.000000e+00, float %x)
  %s = call nnan float @llvm.minimum.f32(float %r, float 6.000000e+00)
  ret float %s
}

; CHECK-LABEL: define float @negzero(float %x)
; CHECK-NEXT: %a.cmp = fcmp uge float %x, -0.000000e+00
; CHECK-NEXT: %a = select i1 %a.cmp, float %x, float -0.000000e+00
; CHECK-NEXT: %b.cmp = fcmp ule float %a, 0.000000e+00
; CHECK-NEXT: %b = select i1 %b.cmp, float %a, float 0.000000e+00
define float @negzero(float %x) {
  %a = call float @llvm.maximum.f32(float %x, float -0.000000e+00)
  %b = call float @llvm.minimum.f32(float %a, float 0.000000e+00)
  ret float %b
}

; CHECK-LABEL: define <4 x float> @vector(<4 x float> %x)
; CHECK-NEXT: %v.cmp = fcmp ugt <4 x float> %x, zeroinitializer
; CHECK-NEXT: %v = select <4 x i1> %v.cmp, <4 x float> %x, <4 x float> zeroinitializer
define <4 x float> @vector(<4 x float> %x) {
  %v = call <4 x float> @llvm.maximum.v4f32(<4 x float> %x, <4 x float> zeroinitializer)
  ret <4 x float> %v
}

; CHECK-LABEL: define float @pool(float %x, float %y)
; CHECK-NEXT: %gt.1 = fcmp ogt float %x, %y
; CHECK-NEXT: %pick.1 = select i1 %gt.1, float %x, float %y
; CHECK-NEXT: %uno.1 = fcmp uno float %x, %y
; CHECK-NEXT: %nan.1 = fadd float %x, %y
; CHECK-NEXT: %ord.1 = select i1 %uno.1, float %nan.1, float %pick.1
; CHECK-NEXT: %eq.1 = fcmp oeq float %x, %y
; CHECK-NEXT: %ai.1 = bitcast float %x to i32
; CHECK-NEXT: %bi.1 = bitcast float %y to i32
; CHECK-NEXT: %bits.1 = and i32 %ai.1, %bi.1
; CHECK-NEXT: %zero.1 = bitcast i32 %bits.1 to float
; CHECK-NEXT: %1 = select i1 %eq.1, float %zero.1, float %ord.1
; CHECK-NEXT: ret float %1
define float @pool(float %x, float %y) {
  %1 = call float @llvm.maximum.f32(float %x, float %y)
  ret float %1
}

; CHECK-LABEL: define float @untouched(float %x)
; CHECK-NEXT: call float @llvm.maximum.f32(float %x, float 0x7FF8000000000000)
define float @untouched(float %x) {
  %1 = call float @llvm.maximum.f32(float %x, float 0x7FF8000000000000)
  ret float %1
}

declare float @llvm.maximum.f32(float, float)
declare float @llvm.minimum.f32(float, float)
declare <4 x float> @llvm.maximum.v4f32(<4 x float>, <4 x float>)
