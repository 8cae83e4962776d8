; --all-args: buffer addresses are constants too -- a global and a constant GEP into the arena
; (the static memory plan) -- so the clone takes no parameters at all.
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none}' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @run()
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @add.spec.37d567c4()
; CHECK-LABEL: define internal void @add.spec.37d567c4()
; CHECK-NEXT: entry:
; CHECK-NEXT: call void @add(ptr getelementptr (i8, ptr @arena, i32 64), ptr @in, i32 4) #
; LOG: mode all-args
; LOG: #1 @run -> @add: kept @add.spec.37d567c4
; LOG-NEXT: arg 0 = @arena+64 (i8[256], 256 bytes, buffer)
; LOG-NEXT: arg 1 = @in (f32[4], 16 bytes, buffer)
; LOG-NEXT: arg 2 = i32 4
; LOG-NOT: kept as parameters
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@in = global [4 x float] zeroinitializer
@arena = internal global [256 x i8] zeroinitializer, align 64

define internal void @add(ptr %dst, ptr %src, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %s = getelementptr float, ptr %src, i32 %i
  %d = getelementptr float, ptr %dst, i32 %i
  %x = load float, ptr %s
  %y = load float, ptr %d
  %z = fadd float %x, %y
  store float %z, ptr %d
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}

define void @run() {
entry:
  call void @add(ptr getelementptr (i8, ptr @arena, i32 64), ptr @in, i32 4)
  ret void
}
