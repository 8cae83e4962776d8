; XLA's relu `llvm.maximum.f32(x, 0.0)` becomes one compare and one select; a clamp's minimum
; with 6.0 likewise; -0.0 takes the `uge` form so +0 still wins; NaN constants and two
; non-constant operands are left to LLVM.
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

; CHECK-LABEL: define float @untouched(float %x, float %y)
; CHECK-NEXT: call float @llvm.maximum.f32(float %x, float %y)
; CHECK-NEXT: call float @llvm.maximum.f32(float %x, float 0x7FF8000000000000)
define float @untouched(float %x, float %y) {
  %1 = call float @llvm.maximum.f32(float %x, float %y)
  %2 = call float @llvm.maximum.f32(float %x, float 0x7FF8000000000000)
  %3 = fadd float %1, %2
  ret float %3
}

declare float @llvm.maximum.f32(float, float)
declare float @llvm.minimum.f32(float, float)
declare <4 x float> @llvm.maximum.v4f32(<4 x float>, <4 x float>)
