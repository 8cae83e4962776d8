; An XLA kernel (ABI `ptr @kernel(ptr %frame)`) called with its constant call frame: with
; --all-args the clone loads its buffer addresses from a constant, so after constant
; propagation it reads and writes the buffers directly and the frame is gone.
; RUN: specialize opt -passes='specialize{mode=all-args,rounds=1,max-growth=none},constprop' %s --log %t.log | filecheck %s
; RUN: filecheck --check-prefix=LOG %s < %t.log
; CHECK-LABEL: define void @model_run()
; CHECK: call {{.*}}@negate.spec.6be8e708()
; CHECK-LABEL: define internal {{.*}}@negate.spec.6be8e708()
; CHECK-NOT: frame
; CHECK-DAG: load float, ptr @model_in_x
; CHECK-DAG: store float %{{.*}}, ptr @model_out0
; CHECK-NOT: frame
; CHECK: ret ptr
; LOG: #1 @model_run -> @negate: kept @negate.spec.6be8e708
; LOG-NEXT: arg 0 = @negate.frame0 ({ ptr, ptr, i64, ptr }, 24 bytes, constant)
target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"
target triple = "thumbv7em-unknown-none-eabihf"

@model_in_x = global [4 x i8] zeroinitializer, align 64
@model_out0 = global [4 x i8] zeroinitializer, align 64
@negate.frame0.num_workgroups = private unnamed_addr constant { i64, i64, i64 } { i64 1, i64 1, i64 1 }
@negate.frame0.workgroup_id = private unnamed_addr constant { i64, i64, i64 } zeroinitializer
@negate.frame0.args = private unnamed_addr constant [2 x { ptr, i64 }] [{ ptr, i64 } { ptr @model_in_x, i64 4 }, { ptr, i64 } { ptr @model_out0, i64 4 }]
@negate.frame0 = private unnamed_addr constant { ptr, ptr, i64, ptr } { ptr @negate.frame0.num_workgroups, ptr @negate.frame0.workgroup_id, i64 2, ptr @negate.frame0.args }

define internal ptr @negate(ptr %0) {
  %args_gep = getelementptr inbounds { ptr, ptr, i64, ptr }, ptr %0, i32 0, i32 3
  %args = load ptr, ptr %args_gep, align 8
  %a0 = getelementptr { ptr, i64 }, ptr %args, i32 0, i32 0
  %in = load ptr, ptr %a0, align 8
  %a1 = getelementptr { ptr, i64 }, ptr %args, i32 1, i32 0
  %out = load ptr, ptr %a1, align 8
  %x = load float, ptr %in, align 4
  %y = fneg float %x
  store float %y, ptr %out, align 4
  ret ptr null
}

define void @model_run() {
entry:
  %t1 = call ptr @negate(ptr @negate.frame0)
  ret void
}
