; Kernel: reduce_shared
; Params, in order:
;   in   f32* (global)  input, n elements
;   out  f32* (global)  output, one partial sum per block (gridDim.x elements)
;   n    u32            element count
; Launch: grid (ceil(n/256), 1, 1), block (256, 1, 1) -- the block size must be
;   exactly 256, the size of the shared array; tests use n = 1000 (4 blocks,
;   the last one partial) with small integer-valued inputs so sums are exact.
; Semantics: with t = tid.x, b = ctaid.x and i = b*256 + t, a tree reduction
; in shared memory (a 256-float array):
;   s[t] = (i < n ? in[i] : 0); barrier
;   for k = 128, 64, ..., 1: if t < k { s[t] = s[t] + s[t+k] }; barrier
;   if t == 0 { out[b] = s[0] }
; so out[b] = the sum of in[b*256 .. min(n, b*256+256)-1], added in that tree
; order with add.rn.f32. Every bar.sync is reached by all 256 threads.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@sdata = internal addrspace(3) global [256 x float] undef, align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier0()

define void @reduce_shared(float addrspace(1)* %in, float addrspace(1)* %out, i32 %n) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = shl i32 %b, 8
  %i = add i32 %base, %t
  %inb = icmp ult i32 %i, %n
  br i1 %inb, label %load, label %store

load:
  %i64 = zext i32 %i to i64
  %pin = getelementptr inbounds float, float addrspace(1)* %in, i64 %i64
  %lv = load float, float addrspace(1)* %pin, align 4
  br label %store

store:
  %v = phi float [ %lv, %load ], [ 0.0, %entry ]
  %t64 = zext i32 %t to i64
  %ps = getelementptr inbounds [256 x float], [256 x float] addrspace(3)* @sdata, i64 0, i64 %t64
  store float %v, float addrspace(3)* %ps, align 4
  call void @llvm.nvvm.barrier0()
  br label %loop

loop:
  %k = phi i32 [ 128, %store ], [ %k2, %next ]
  %act = icmp ult i32 %t, %k
  br i1 %act, label %add, label %next

add:
  %tk = add i32 %t, %k
  %tk64 = zext i32 %tk to i64
  %pk = getelementptr inbounds [256 x float], [256 x float] addrspace(3)* @sdata, i64 0, i64 %tk64
  %a0 = load float, float addrspace(3)* %ps, align 4
  %a1 = load float, float addrspace(3)* %pk, align 4
  %s = fadd float %a0, %a1
  store float %s, float addrspace(3)* %ps, align 4
  br label %next

next:
  call void @llvm.nvvm.barrier0()
  %k2 = lshr i32 %k, 1
  %more = icmp ne i32 %k2, 0
  br i1 %more, label %loop, label %done

done:
  %first = icmp eq i32 %t, 0
  br i1 %first, label %write, label %exit

write:
  %p0 = getelementptr inbounds [256 x float], [256 x float] addrspace(3)* @sdata, i64 0, i64 0
  %sum = load float, float addrspace(3)* %p0, align 4
  %b64 = zext i32 %b to i64
  %po = getelementptr inbounds float, float addrspace(1)* %out, i64 %b64
  store float %sum, float addrspace(1)* %po, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, float addrspace(1)*, i32)* @reduce_shared, !"kernel", i32 1}
