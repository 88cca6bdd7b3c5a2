; Kernel: saxpy
; Params, in order:
;   n    u32            element count
;   a    f32            scalar multiplier
;   x    f32* (global)  input, n elements
;   y    f32* (global)  input and output, n elements
; Launch: grid (ceil(n/128), 1, 1), block (128, 1, 1); tests use n = 1000, a = 2.5.
; Semantics: with i = ctaid.x*ntid.x + tid.x, for i < n:
;   y[i] = fma(a, x[i], y[i]), one rounding (fma.rn.f32); threads with i >= n do nothing.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare float @llvm.fma.f32(float, float, float)

define void @saxpy(i32 %n, float %a, float addrspace(1)* %x, float addrspace(1)* %y) {
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
  %px = getelementptr inbounds float, float addrspace(1)* %x, i64 %idx
  %py = getelementptr inbounds float, float addrspace(1)* %y, i64 %idx
  %vx = load float, float addrspace(1)* %px, align 4
  %vy = load float, float addrspace(1)* %py, align 4
  %r = call float @llvm.fma.f32(float %a, float %vx, float %vy)
  store float %r, float addrspace(1)* %py, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32, float, float addrspace(1)*, float addrspace(1)*)* @saxpy, !"kernel", i32 1}
