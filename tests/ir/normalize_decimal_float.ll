; Newer LLVM prints a float constant as the shortest decimal that rounds to it; LLVM 22.1
; wants an exact decimal or hex. 8.000000e-03 as a float is 0x3F80624DE0000000 as a double.
; RUN: specialize opt -passes=normalize,retarget %s | filecheck %s
; RUN: not specialize opt %s 2>&1 | filecheck --check-prefix=RAW %s
; RAW: specialize: error: {{.*}}normalize_decimal_float.ll:
define float @scale(float %x) {
; CHECK-LABEL: define float @scale(
; CHECK: fmul float %x, 0x3F80624DE0000000
; CHECK: fadd float %{{.*}}, 5.000000e-01
  %a = fmul float %x, 8.000000e-03
  %b = fadd float %a, 5.000000e-01
  ret float %b
}

; an inexact decimal is fine where it means a double, and is left alone
define double @dscale(double %x) {
; CHECK-LABEL: define double @dscale(
; CHECK: fmul double %x, 8.000000e-03
  %a = fmul double %x, 8.000000e-03
  ret double %a
}
