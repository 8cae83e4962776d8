; Non-constant arguments are left alone: they become the clone's parameters and are passed
; through unchanged (attributes included); a call without constants is not touched. The clone
; keeps the callee's calling convention.
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define i32 @run(i32 %x, i32 %y)
; CHECK-NEXT: entry:
; CHECK-NEXT: %a = call fastcc i32 @mix.spec.ce6b696a(i32 noundef %x)
; CHECK-NEXT: %b = call fastcc i32 @mix(i32 %x, i32 %y)
; CHECK: define internal fastcc i32 @mix.spec.ce6b696a(i32 %arg0)
; CHECK-NEXT: entry:
; CHECK-NEXT: %r = call fastcc i32 @mix(i32 %arg0, i32 7) #
; CHECK-NEXT: ret i32 %r
; LOG: 1 call sites with constant arguments
; LOG: #1 @run -> @mix: kept @mix.spec.ce6b696a
; LOG-NEXT: arg 1 = i32 7
; LOG-NEXT: kept as parameters: arg 0
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

define internal fastcc i32 @mix(i32 %a, i32 %b) {
  %m = mul i32 %a, %b
  %s = add i32 %m, %b
  ret i32 %s
}

define i32 @run(i32 %x, i32 %y) {
entry:
  %a = call fastcc i32 @mix(i32 noundef %x, i32 7)
  %b = call fastcc i32 @mix(i32 %x, i32 %y)
  %c = add i32 %a, %b
  ret i32 %c
}
