; Kernel: vadd
; Params, in order:
;   a    f32* (global)  input, n elements
;   b    f32* (global)  input, n elements
;   out  f32* (global)  output, n elements
;   n    u32            element count
; Launch: grid (ceil(n/256), 1, 1), block (256, 1, 1); tests use n = 1000.
; Semantics: with i = ctaid.x*ntid.x + tid.x,
;   out[i] = a[i] + b[i] (add.rn.f32) for i < n; threads with i >= n do nothing.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()

define void @vadd(float addrspace(1)* %a, float addrspace(1)* %b, float addrspace(1)* %out, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inb = icmp ult i32 %i, %n
  br i1 %inb, label %body, label %exit

body:
  %idx = zext i32 %i to i64
  %pa = getelementptr inbounds float, float addrspace(1)* %a, i64 %idx
  %pb = getelementptr inbounds float, float addrspace(1)* %b, i64 %idx
  %po = getelementptr inbounds float, float addrspace(1)* %out, i64 %idx
  %va = load float, float addrspace(1)* %pa, align 4
  %vb = load float, float addrspace(1)* %pb, align 4
  %sum = fadd float %va, %vb
  store float %sum, float addrspace(1)* %po, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, float addrspace(1)*, float addrspace(1)*, i32)* @vadd, !"kernel", i32 1}
