; +inf/-inf/+qnan/-qnan are spelled as hex bit patterns.
; RUN: specialize opt -passes=normalize,retarget %s | filecheck %s
; RUN: not specialize opt %s 2>&1 | filecheck --check-prefix=RAW %s
; RAW: specialize: error: {{.*}}normalize_special_floats.ll:
; CHECK-LABEL: define float @special
; CHECK: %a = call float @llvm.maxnum.f32(float %x, float 0xFFF0000000000000)
; CHECK: %b = call float @llvm.minnum.f32(float %a, float 0x7FF0000000000000)
; CHECK: select i1 %c, float 0x7FF8000000000000, float %b
define float @special(float %x) {
  %a = call float @llvm.maxnum.f32(float %x, float -inf)
  %b = call float @llvm.minnum.f32(float %a, float +inf)
  %c = fcmp uno float %x, %x
  %r = select i1 %c, float +qnan, float %b
  ret float %r
}
declare float @llvm.maxnum.f32(float, float)
declare float @llvm.minnum.f32(float, float)
