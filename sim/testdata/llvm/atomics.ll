; Kernel: atomics
; Params, in order:
;   in       i32* (global)  input, n elements
;   bins     i32* (global)  histogram, nbins elements, zeroed before launch
;   nbins    u32            number of bins, a power of two
;   total    f32* (global)  one element, zeroed before launch
;   counter  u32* (global)  one element, zeroed before launch
;   tickets  u32* (global)  output, n elements
;   n        u32            element count
; Launch: grid (ceil(n/256), 1, 1), block (256, 1, 1); tests use n = 1000,
;   nbins = 16, in[i] = (i*7) % 100 (small integers, so the f32 sum is exact
;   in any order).
; Semantics: with i = ctaid.x*ntid.x + tid.x, for i < n, as relaxed atomics
; on global memory in any interleaving:
;   atomicAdd(&bins[in[i] & (nbins-1)], 1)          (atom.global.add.u32)
;   atomicAdd(&total[0], float(in[i]))              (atom.global.add.f32)
;   tickets[i] = atomicAdd(&counter[0], 1)          (the old value)
; After the launch: bins is the histogram of in[i] & (nbins-1); total[0] is
; the sum of in; counter[0] = n; tickets is a permutation of 0 .. n-1.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()

define void @atomics(i32 addrspace(1)* %in, i32 addrspace(1)* %bins, i32 %nbins, float addrspace(1)* %total, i32 addrspace(1)* %counter, i32 addrspace(1)* %tickets, i32 %n) {
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
  %pin = getelementptr inbounds i32, i32 addrspace(1)* %in, i64 %idx
  %v = load i32, i32 addrspace(1)* %pin, align 4
  %mask = add i32 %nbins, -1
  %bin = and i32 %v, %mask
  %bin64 = zext i32 %bin to i64
  %pbin = getelementptr inbounds i32, i32 addrspace(1)* %bins, i64 %bin64
  %old0 = atomicrmw add i32 addrspace(1)* %pbin, i32 1 monotonic
  %vf = sitofp i32 %v to float
  %old1 = atomicrmw fadd float addrspace(1)* %total, float %vf monotonic
  %ticket = atomicrmw add i32 addrspace(1)* %counter, i32 1 monotonic
  %pt = getelementptr inbounds i32, i32 addrspace(1)* %tickets, i64 %idx
  store i32 %ticket, i32 addrspace(1)* %pt, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, i32 addrspace(1)*, i32, float addrspace(1)*, i32 addrspace(1)*, i32 addrspace(1)*, i32)* @atomics, !"kernel", i32 1}
