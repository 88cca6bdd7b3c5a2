; Kernel: sync_atomics
; Params, in order:
;   in     u32* (global)  input, n elements
;   bins   u32* (global)  histogram, 16 elements, zeroed before launch
;   slot   u32* (global)  one element, 0xFFFFFFFF before launch
;   olds   u32* (global)  output, n elements
;   owner  u32* (global)  16 elements, 0xFFFFFFFF before launch
;   wins   u32* (global)  output, n elements
;   nb     u32* (global)  output, n elements
;   n      u32            element count, even
; Launch: grid (ceil(n/128), 1, 1), block (128, 1, 1); tests use n = 1000,
;   in[i] = (i*7) % 100.
; Semantics: with i = ctaid.x*ntid.x + tid.x, shared hist[16] and xs[128]:
;   tid < 16: hist[tid] = 0; barrier (every thread)
;   i < n: v = in[i]
;          atomicAdd(&hist[v & 15], 1)                     (atom.shared.add)
;          olds[i] = atomicExch(&slot[0], i)               (atom.global.exch)
;          wins[i] = atomicCAS(&owner[v & 15], 0xFFFFFFFF, i) == 0xFFFFFFFF
;                                                          (atom.global.cas)
;   barrier; tid < 16: atomicAdd(&bins[tid], hist[tid])
;   xs[tid] = i; __syncwarp() (bar.warp.sync -1, every thread);
;   i < n: nb[i] = xs[tid ^ 1] = i ^ 1
; After the launch: bins is the histogram of in[i] & 15; olds and slot[0]
; together hold 0xFFFFFFFF and 0 .. n-1 once each; for each bin b some
; input fell in, exactly one i with in[i] & 15 == b has wins[i] = 1 and
; owner[b] = i; other bins keep 0xFFFFFFFF; nb[i] = i ^ 1.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@hist = internal addrspace(3) global [16 x i32] undef, align 4
@xs = internal addrspace(3) global [128 x i32] undef, align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier0()
declare void @llvm.nvvm.bar.warp.sync(i32)

define void @sync_atomics(i32 addrspace(1)* %in, i32 addrspace(1)* %bins, i32 addrspace(1)* %slot, i32 addrspace(1)* %olds, i32 addrspace(1)* %owner, i32 addrspace(1)* %wins, i32 addrspace(1)* %nb, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %idx = zext i32 %i to i64
  %tid64 = zext i32 %tid to i64
  %first16 = icmp ult i32 %tid, 16
  %ph = getelementptr inbounds [16 x i32], [16 x i32] addrspace(3)* @hist, i64 0, i64 %tid64
  br i1 %first16, label %zero, label %sync1

zero:
  store i32 0, i32 addrspace(3)* %ph, align 4
  br label %sync1

sync1:
  call void @llvm.nvvm.barrier0()
  %inb = icmp ult i32 %i, %n
  br i1 %inb, label %body, label %sync2

body:
  %pin = getelementptr inbounds i32, i32 addrspace(1)* %in, i64 %idx
  %v = load i32, i32 addrspace(1)* %pin, align 4
  %bin = and i32 %v, 15
  %bin64 = zext i32 %bin to i64
  %phb = getelementptr inbounds [16 x i32], [16 x i32] addrspace(3)* @hist, i64 0, i64 %bin64
  %h0 = atomicrmw add i32 addrspace(3)* %phb, i32 1 monotonic
  %old = atomicrmw xchg i32 addrspace(1)* %slot, i32 %i monotonic
  %po = getelementptr inbounds i32, i32 addrspace(1)* %olds, i64 %idx
  store i32 %old, i32 addrspace(1)* %po, align 4
  %pown = getelementptr inbounds i32, i32 addrspace(1)* %owner, i64 %bin64
  %cas = cmpxchg i32 addrspace(1)* %pown, i32 -1, i32 %i monotonic monotonic
  %won = extractvalue { i32, i1 } %cas, 1
  %won32 = zext i1 %won to i32
  %pw = getelementptr inbounds i32, i32 addrspace(1)* %wins, i64 %idx
  store i32 %won32, i32 addrspace(1)* %pw, align 4
  br label %sync2

sync2:
  call void @llvm.nvvm.barrier0()
  br i1 %first16, label %flush, label %warp

flush:
  %hv = load i32, i32 addrspace(3)* %ph, align 4
  %pbin = getelementptr inbounds i32, i32 addrspace(1)* %bins, i64 %tid64
  %b0 = atomicrmw add i32 addrspace(1)* %pbin, i32 %hv monotonic
  br label %warp

warp:
  %px = getelementptr inbounds [128 x i32], [128 x i32] addrspace(3)* @xs, i64 0, i64 %tid64
  store volatile i32 %i, i32 addrspace(3)* %px, align 4
  call void @llvm.nvvm.bar.warp.sync(i32 -1)
  br i1 %inb, label %nbr, label %exit

nbr:
  %t1 = xor i64 %tid64, 1
  %pxn = getelementptr inbounds [128 x i32], [128 x i32] addrspace(3)* @xs, i64 0, i64 %t1
  %xn = load volatile i32, i32 addrspace(3)* %pxn, align 4
  %pnb = getelementptr inbounds i32, i32 addrspace(1)* %nb, i64 %idx
  store i32 %xn, i32 addrspace(1)* %pnb, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, i32 addrspace(1)*, i32 addrspace(1)*, i32 addrspace(1)*, i32 addrspace(1)*, i32 addrspace(1)*, i32 addrspace(1)*, i32)* @sync_atomics, !"kernel", i32 1}
