; The inline-asm forms CMSIS-NN's arm_nn_compiler.h (v7.0.0, GCC branch) leaves in clang's IR,
; as clang-19 prints them, rewritten into LLVM's ARM intrinsics or plain IR.
; RUN: specialize opt -passes=inline-asm %s | filecheck %s
target triple = "thumbv7em-unknown-none-eabihf"

define i32 @smlad(i32 %a, i32 %b, i32 %c) {
; CHECK-LABEL: define i32 @smlad(
; CHECK-NEXT: %1 = tail call i32 @llvm.arm.smlad(i32 %a, i32 %b, i32 %c)
; CHECK-NEXT: ret i32 %1
  %1 = tail call i32 asm sideeffect "smlad $0, $1, $2, $3", "=r,r,r,r"(i32 %a, i32 %b, i32 %c) #0, !srcloc !0
  ret i32 %1
}

define i32 @sxtb16(i32 %a) {
; CHECK-LABEL: define i32 @sxtb16(
; CHECK-NEXT: %r = tail call i32 @llvm.arm.sxtb16(i32 %a)
  %r = tail call i32 asm "sxtb16 $0, $1", "=r,r"(i32 %a) #1, !srcloc !0
  ret i32 %r
}

define i32 @sxtab16(i32 %a, i32 %b) {
; CHECK-LABEL: define i32 @sxtab16(
; CHECK-NEXT: %r = tail call i32 @llvm.arm.sxtab16(i32 %a, i32 %b)
  %r = tail call i32 asm "sxtab16 $0, $1, $2", "=r,r,r"(i32 %a, i32 %b) #1, !srcloc !0
  ret i32 %r
}

; SXTB16_RORn / SXTAB16_RORn with a constant rotation: "i" operand, upper-case ROR
define i32 @sxtb16_ror(i32 %a) {
; CHECK-LABEL: define i32 @sxtb16_ror(
; CHECK-NEXT: %[[R:.+]] = tail call i32 @llvm.fshr.i32(i32 %a, i32 %a, i32 8)
; CHECK-NEXT: %r = tail call i32 @llvm.arm.sxtb16(i32 %[[R]])
  %r = tail call i32 asm sideeffect "sxtb16 $0, $1, ROR $2", "=r,r,i"(i32 %a, i32 8) #0, !srcloc !0
  ret i32 %r
}

define i32 @sxtab16_ror(i32 %a, i32 %b) {
; CHECK-LABEL: define i32 @sxtab16_ror(
; CHECK-NEXT: %[[R:.+]] = tail call i32 @llvm.fshr.i32(i32 %b, i32 %b, i32 24)
; CHECK-NEXT: %r = tail call i32 @llvm.arm.sxtab16(i32 %a, i32 %[[R]])
  %r = tail call i32 asm sideeffect "sxtab16 $0, $1, $2, ROR $3", "=r,r,r,i"(i32 %a, i32 %b, i32 24) #0, !srcloc !0
  ret i32 %r
}

define i32 @pkhbt(i32 %a, i32 %b) {
; CHECK-LABEL: define i32 @pkhbt(
; CHECK-NEXT: %[[LO:.+]] = and i32 %a, 65535
; CHECK-NEXT: %[[SH:.+]] = shl i32 %b, 16
; CHECK-NEXT: %[[HI:.+]] = and i32 %[[SH]], -65536
; CHECK-NEXT: %r = or i32 %[[LO]], %[[HI]]
  %r = tail call i32 asm "pkhbt $0, $1, $2, lsl $3", "=r,r,r,I"(i32 %a, i32 %b, i32 16) #1, !srcloc !0
  ret i32 %r
}

define i32 @pkhtb(i32 %a, i32 %b) {
; CHECK-LABEL: define i32 @pkhtb(
; CHECK-NEXT: %[[HI:.+]] = and i32 %a, -65536
; CHECK-NEXT: %[[SH:.+]] = ashr i32 %b, 16
; CHECK-NEXT: %[[LO:.+]] = and i32 %[[SH]], 65535
; CHECK-NEXT: %r = or i32 %[[LO]], %[[HI]]
  %r = tail call i32 asm "pkhtb $0, $1, $2, asr $3", "=r,r,r,I"(i32 %a, i32 %b, i32 16) #1, !srcloc !0
  ret i32 %r
}

; PKHTB with a zero shift is written without the shift
define i32 @pkhtb0(i32 %a, i32 %b) {
; CHECK-LABEL: define i32 @pkhtb0(
; CHECK-NEXT: %[[HI:.+]] = and i32 %a, -65536
; CHECK-NEXT: %[[LO:.+]] = and i32 %b, 65535
; CHECK-NEXT: %r = or i32 %[[LO]], %[[HI]]
  %r = tail call i32 asm "pkhtb $0, $1, $2", "=r,r,r"(i32 %a, i32 %b) #1, !srcloc !0
  ret i32 %r
}

define i32 @smulbb_smultt(i32 %a, i32 %b) {
; CHECK-LABEL: define i32 @smulbb_smultt(
; CHECK-NEXT: %1 = tail call i32 @llvm.arm.smulbb(i32 %a, i32 %b)
; CHECK-NEXT: %2 = tail call i32 @llvm.arm.smultt(i32 %a, i32 %b)
  %1 = tail call i32 asm sideeffect "smulbb $0, $1, $2", "=r,r,r"(i32 %a, i32 %b) #0, !srcloc !0
  %2 = tail call i32 asm sideeffect "smultt $0, $1, $2", "=r,r,r"(i32 %a, i32 %b) #0, !srcloc !0
  %3 = add i32 %1, %2
  ret i32 %3
}

; CMSIS-Core's spellings (tab after the mnemonic, "#" immediates, flag clobbers)
define i32 @core_forms(i32 %a, i32 %b, i32 %c) {
; CHECK-LABEL: define i32 @core_forms(
; CHECK-NEXT: %1 = call i32 @llvm.arm.smladx(i32 %a, i32 %b, i32 %c)
; CHECK-NEXT: %2 = call i32 @llvm.arm.qadd(i32 %1, i32 %b)
; CHECK-NEXT: %3 = call i32 @llvm.arm.qsub(i32 %2, i32 %a)
; CHECK-NEXT: %4 = call i32 @llvm.arm.ssat(i32 %3, i32 8)
; CHECK-NEXT: %5 = call i32 @llvm.arm.usat(i32 %4, i32 7)
  %1 = call i32 asm "smladx $0, $1, $2, $3", "=r,r,r,r"(i32 %a, i32 %b, i32 %c)
  %2 = call i32 asm "qadd\09$0, $1, $2", "=r,r,r,~{cc}"(i32 %1, i32 %b)
  %3 = call i32 asm "qsub $0, $1, $2", "=r,r,r"(i32 %2, i32 %a)
  %4 = call i32 asm "ssat $0, $1, $2", "=r,I,r"(i32 8, i32 %3)
  %5 = call i32 asm "usat $0, #$1, $2", "=r,I,r"(i32 7, i32 %4)
  ret i32 %5
}

; CHECK-NOT: asm
; CHECK-DAG: declare i32 @llvm.arm.smlad(i32, i32, i32)
; CHECK-DAG: declare i32 @llvm.arm.sxtab16(i32, i32)
; CHECK-DAG: declare i32 @llvm.fshr.i32(i32, i32, i32)

attributes #0 = { nounwind }
attributes #1 = { nounwind memory(none) }

!0 = !{i64 1}
