; Kernel: transpose
; Params, in order:
;   in      f32* (global)  input matrix, rows x cols, row-major
;   out     f32* (global)  output matrix, cols x rows, row-major
;   rows    u32            rows of in
;   cols    u32            columns of in
; Launch: 2-D: grid (ceil(cols/16), ceil(rows/8), 1), block (16, 8, 1);
;   tests use rows = 37, cols = 50 (partial blocks in both dimensions).
; Semantics: with c = ctaid.x*ntid.x + tid.x and r = ctaid.y*ntid.y + tid.y,
;   out[c*rows + r] = in[r*cols + c] for r < rows and c < cols;
;   other threads do nothing.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()

define void @transpose(float addrspace(1)* %in, float addrspace(1)* %out, i32 %rows, i32 %cols) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %nx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ny = call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
  %bx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %by = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
  %cb = mul i32 %bx, %nx
  %c = add i32 %cb, %tx
  %rb = mul i32 %by, %ny
  %r = add i32 %rb, %ty
  %cok = icmp ult i32 %c, %cols
  %rok = icmp ult i32 %r, %rows
  %ok = and i1 %cok, %rok
  br i1 %ok, label %body, label %exit

body:
  %ri = mul i32 %r, %cols
  %src = add i32 %ri, %c
  %ci = mul i32 %c, %rows
  %dst = add i32 %ci, %r
  %src64 = zext i32 %src to i64
  %dst64 = zext i32 %dst to i64
  %ps = getelementptr inbounds float, float addrspace(1)* %in, i64 %src64
  %pd = getelementptr inbounds float, float addrspace(1)* %out, i64 %dst64
  %v = load float, float addrspace(1)* %ps, align 4
  store float %v, float addrspace(1)* %pd, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, float addrspace(1)*, i32, i32)* @transpose, !"kernel", i32 1}
