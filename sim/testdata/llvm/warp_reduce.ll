; Kernel: warp_reduce
; Params, in order:
;   in   f32* (global)  input, n elements
;   out  f32* (global)  output, one sum per warp: ceil(n/32) elements
;   n    u32            element count
; Launch: grid (ceil(n/128), 1, 1), block (128, 1, 1) -- 4 full warps per
;   block; tests use n = 1000 with small integer-valued inputs.
; Semantics: with i = ctaid.x*ntid.x + tid.x and lane = i % 32 (= laneid),
;   v = (i < n ? in[i] : 0)
;   for off = 16, 8, 4, 2, 1:
;       v = v + shfl.sync.down.b32(v, off, c = 0x1f, membermask = 0xffffffff)
;   (a lane whose source lane + off is past 31 gets its own v back)
;   if lane == 0 and i < n { out[i / 32] = v }
; so out[w] = the sum of in[32*w .. min(n, 32*w+32)-1], in butterfly order,
; add.rn.f32. All 32 lanes of every warp execute each shfl.sync.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.laneid()
declare float @llvm.nvvm.shfl.sync.down.f32(i32, float, i32, i32)

define void @warp_reduce(float addrspace(1)* %in, float addrspace(1)* %out, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inb = icmp ult i32 %i, %n
  br i1 %inb, label %load, label %reduce

load:
  %i64 = zext i32 %i to i64
  %pin = getelementptr inbounds float, float addrspace(1)* %in, i64 %i64
  %lv = load float, float addrspace(1)* %pin, align 4
  br label %reduce

reduce:
  %v0 = phi float [ %lv, %load ], [ 0.0, %entry ]
  %s16 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v0, i32 16, i32 31)
  %v1 = fadd float %v0, %s16
  %s8 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v1, i32 8, i32 31)
  %v2 = fadd float %v1, %s8
  %s4 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v2, i32 4, i32 31)
  %v3 = fadd float %v2, %s4
  %s2 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v3, i32 2, i32 31)
  %v4 = fadd float %v3, %s2
  %s1 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v4, i32 1, i32 31)
  %v5 = fadd float %v4, %s1
  %lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  %l0 = icmp eq i32 %lane, 0
  %w = and i1 %l0, %inb
  br i1 %w, label %write, label %exit

write:
  %warp = lshr i32 %i, 5
  %w64 = zext i32 %warp to i64
  %po = getelementptr inbounds float, float addrspace(1)* %out, i64 %w64
  store float %v5, float addrspace(1)* %po, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, float addrspace(1)*, i32)* @warp_reduce, !"kernel", i32 1}
