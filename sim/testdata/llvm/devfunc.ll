; Kernel: devfunc
; Params, in order:
;   in   f32* (global)  input, n elements
;   out  f32* (global)  output, n elements
;   c    f32            coefficient passed through to the device function
;   n    u32            element count
; Launch: grid (ceil(n/128), 1, 1), block (128, 1, 1); tests use n = 500, c = 3.
; Semantics: poly is a separate, non-inlined device function (.func, called
; with call.uni and .param arguments and return value):
;   poly(x, c) = ((x*x)*0.5 + x*c) - 1, each operation rounded to nearest f32
;   (mul.rn, add.rn; the "- 1" is an add.rn of -1), no fma
; and with i = ctaid.x*ntid.x + tid.x, out[i] = poly(in[i], c) for i < n;
; threads with i >= n do nothing.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()

define internal float @poly(float %x, float %c) #0 {
  %x2 = fmul float %x, %x
  %h = fmul float %x2, 0.5
  %xc = fmul float %x, %c
  %s = fadd float %h, %xc
  %r = fsub float %s, 1.0
  ret float %r
}

define void @devfunc(float addrspace(1)* %in, float addrspace(1)* %out, float %c, i32 %n) {
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
  %pin = getelementptr inbounds float, float addrspace(1)* %in, i64 %idx
  %po = getelementptr inbounds float, float addrspace(1)* %out, i64 %idx
  %x = load float, float addrspace(1)* %pin, align 4
  %y = call float @poly(float %x, float %c)
  store float %y, float addrspace(1)* %po, align 4
  br label %exit

exit:
  ret void
}

attributes #0 = { noinline }

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, float addrspace(1)*, float, i32)* @devfunc, !"kernel", i32 1}
