; XLA's newer LLVM prints float constants as f0x<bits>; LLVM 22.1 wants the double pattern.
; RUN: specialize opt -passes=normalize,retarget %s | filecheck %s
; RUN: not specialize opt %s 2>&1 | filecheck --check-prefix=RAW %s
; RAW: specialize: error: {{.*}}normalize_hex_float.ll:
; CHECK-LABEL: define float @hex
; CHECK: fmul float %x, 0x400DF38D00000000
; CHECK: fadd float %m, 1.000000e+00
define float @hex(float %x) {
  %m = fmul float %x, f0x406F9C68
  %r = fadd float %m, f0x3F800000
  ret float %r
}
