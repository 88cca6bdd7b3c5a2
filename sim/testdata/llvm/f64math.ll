; Kernel: f64math
; Params, in order:
;   x    f64* (global)  input, n elements, x[i] >= 0
;   y    f64* (global)  input, n elements, y[i] != 0
;   out  f64* (global)  output, 3*n elements
;   n    u32            element count
; Launch: grid (ceil(n/64), 1, 1), block (64, 1, 1); tests use n = 100.
; Semantics: with i = ctaid.x*ntid.x + tid.x, for i < n, X = x[i], Y = y[i],
; all in IEEE f64 with round-to-nearest-even:
;   out[3*i+0] = fma(sqrt(X), Y, X / Y)   (sqrt.rn.f64, div.rn.f64, fma.rn.f64)
;   out[3*i+1] = min(X, Y)                (min.f64)
;   out[3*i+2] = |Y| - X                  (abs.f64, sub.rn.f64)
; Threads with i >= n do nothing.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare double @llvm.sqrt.f64(double)
declare double @llvm.fma.f64(double, double, double)
declare double @llvm.minnum.f64(double, double)
declare double @llvm.fabs.f64(double)

define void @f64math(double addrspace(1)* %x, double addrspace(1)* %y, double addrspace(1)* %out, i32 %n) {
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
  %px = getelementptr inbounds double, double addrspace(1)* %x, i64 %idx
  %py = getelementptr inbounds double, double addrspace(1)* %y, i64 %idx
  %X = load double, double addrspace(1)* %px, align 8
  %Y = load double, double addrspace(1)* %py, align 8
  %o = mul i64 %idx, 3
  %po0 = getelementptr inbounds double, double addrspace(1)* %out, i64 %o
  %s = call double @llvm.sqrt.f64(double %X)
  %q = fdiv double %X, %Y
  %r0 = call double @llvm.fma.f64(double %s, double %Y, double %q)
  store double %r0, double addrspace(1)* %po0, align 8
  %r1 = call double @llvm.minnum.f64(double %X, double %Y)
  %po1 = getelementptr inbounds double, double addrspace(1)* %po0, i64 1
  store double %r1, double addrspace(1)* %po1, align 8
  %ay = call double @llvm.fabs.f64(double %Y)
  %r2 = fsub double %ay, %X
  %po2 = getelementptr inbounds double, double addrspace(1)* %po0, i64 2
  store double %r2, double addrspace(1)* %po2, align 8
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (double addrspace(1)*, double addrspace(1)*, double addrspace(1)*, i32)* @f64math, !"kernel", i32 1}
