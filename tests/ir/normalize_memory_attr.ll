; `target_mem: none` inside memory(...) and denormal_fpenv(...) are unknown to LLVM 22.1.
; RUN: specialize opt -passes=normalize,retarget %s | filecheck %s
; RUN: not specialize opt %s 2>&1 | filecheck --check-prefix=RAW %s
; RAW: specialize: error: {{.*}}normalize_memory_attr.ll:
; CHECK: attributes #0 = { nounwind memory(argmem: read) }
; CHECK-NOT: target_mem
; CHECK-NOT: denormal_fpenv
define void @f(ptr %p) #0 {
  ret void
}
attributes #0 = { nounwind memory(argmem: read, target_mem: none) denormal_fpenv(preservesign) }
