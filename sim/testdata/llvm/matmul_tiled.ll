; Kernel: matmul_tiled
; Params, in order:
;   A    f32* (global)  input, M x K, row-major
;   B    f32* (global)  input, K x N, row-major
;   C    f32* (global)  output, M x N, row-major
;   M    u32            rows of A and C
;   N    u32            columns of B and C
;   K    u32            columns of A, rows of B
; Launch: 2-D: grid (ceil(N/16), ceil(M/16), 1), block (16, 16, 1) -- the block
;   must be 16x16, the tile size; tests use M = 33, N = 40, K = 37 (partial
;   tiles everywhere) with small integer-valued inputs so results are exact.
; Semantics: C = A*B. With tx = tid.x, ty = tid.y, row = ctaid.y*16 + ty and
; col = ctaid.x*16 + tx, using two 16x16 f32 shared tiles As and Bs:
;   acc = 0
;   for t = 0 .. ceil(K/16)-1:
;       As[ty][tx] = (row < M and t*16+tx < K) ? A[row*K + t*16+tx] : 0
;       Bs[ty][tx] = (t*16+ty < K and col < N) ? B[(t*16+ty)*N + col] : 0
;       barrier
;       for k = 0 .. 15: acc = acc + As[ty][k] * Bs[k][tx]   (mul.rn, then add.rn; no fma)
;       barrier
;   if row < M and col < N { C[row*N + col] = acc }
; Every thread of the block, in range or not, reaches every barrier.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@As = internal addrspace(3) global [16 x [16 x float]] undef, align 4
@Bs = internal addrspace(3) global [16 x [16 x float]] undef, align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
declare void @llvm.nvvm.barrier0()

define void @matmul_tiled(float addrspace(1)* %A, float addrspace(1)* %B, float addrspace(1)* %C, i32 %M, i32 %N, i32 %K) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %bx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %by = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
  %rb = shl i32 %by, 4
  %row = add i32 %rb, %ty
  %cb = shl i32 %bx, 4
  %col = add i32 %cb, %tx
  %rowok = icmp ult i32 %row, %M
  %colok = icmp ult i32 %col, %N
  %k15 = add i32 %K, 15
  %ntiles = lshr i32 %k15, 4
  %tx64 = zext i32 %tx to i64
  %ty64 = zext i32 %ty to i64
  %pas = getelementptr inbounds [16 x [16 x float]], [16 x [16 x float]] addrspace(3)* @As, i64 0, i64 %ty64, i64 %tx64
  %pbs = getelementptr inbounds [16 x [16 x float]], [16 x [16 x float]] addrspace(3)* @Bs, i64 0, i64 %ty64, i64 %tx64
  br label %tile

tile:
  %t = phi i32 [ 0, %entry ], [ %t1, %tile_end ]
  %acc = phi float [ 0.0, %entry ], [ %acc3, %tile_end ]
  %more = icmp ult i32 %t, %ntiles
  br i1 %more, label %tile_body, label %fin

tile_body:
  %t16 = shl i32 %t, 4
  %ak = add i32 %t16, %tx
  %akok = icmp ult i32 %ak, %K
  %aok = and i1 %rowok, %akok
  br i1 %aok, label %lda, label %aj

lda:
  %arow = mul i32 %row, %K
  %aidx = add i32 %arow, %ak
  %aidx64 = zext i32 %aidx to i64
  %pa = getelementptr inbounds float, float addrspace(1)* %A, i64 %aidx64
  %va = load float, float addrspace(1)* %pa, align 4
  br label %aj

aj:
  %a = phi float [ %va, %lda ], [ 0.0, %tile_body ]
  %bk = add i32 %t16, %ty
  %bkok = icmp ult i32 %bk, %K
  %bok = and i1 %bkok, %colok
  br i1 %bok, label %ldb, label %bj

ldb:
  %brow = mul i32 %bk, %N
  %bidx = add i32 %brow, %col
  %bidx64 = zext i32 %bidx to i64
  %pb = getelementptr inbounds float, float addrspace(1)* %B, i64 %bidx64
  %vb = load float, float addrspace(1)* %pb, align 4
  br label %bj

bj:
  %b = phi float [ %vb, %ldb ], [ 0.0, %aj ]
  store float %a, float addrspace(3)* %pas, align 4
  store float %b, float addrspace(3)* %pbs, align 4
  call void @llvm.nvvm.barrier0()
  br label %kloop

kloop:
  %k = phi i32 [ 0, %bj ], [ %k1, %kloop ]
  %acc2 = phi float [ %acc, %bj ], [ %acc3, %kloop ]
  %k64 = zext i32 %k to i64
  %px = getelementptr inbounds [16 x [16 x float]], [16 x [16 x float]] addrspace(3)* @As, i64 0, i64 %ty64, i64 %k64
  %py = getelementptr inbounds [16 x [16 x float]], [16 x [16 x float]] addrspace(3)* @Bs, i64 0, i64 %k64, i64 %tx64
  %x = load float, float addrspace(3)* %px, align 4
  %y = load float, float addrspace(3)* %py, align 4
  %p = fmul float %x, %y
  %acc3 = fadd float %acc2, %p
  %k1 = add i32 %k, 1
  %kmore = icmp ult i32 %k1, 16
  br i1 %kmore, label %kloop, label %tile_end

tile_end:
  call void @llvm.nvvm.barrier0()
  %t1 = add i32 %t, 1
  br label %tile

fin:
  %ok = and i1 %rowok, %colok
  br i1 %ok, label %write, label %exit

write:
  %crow = mul i32 %row, %N
  %cidx = add i32 %crow, %col
  %cidx64 = zext i32 %cidx to i64
  %pc = getelementptr inbounds float, float addrspace(1)* %C, i64 %cidx64
  store float %acc, float addrspace(1)* %pc, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, float addrspace(1)*, float addrspace(1)*, i32, i32, i32)* @matmul_tiled, !"kernel", i32 1}
