; Kernel: intops
; Params, in order:
;   x    i32* (global)  input, n elements
;   y    i32* (global)  input, n elements
;   out  i32* (global)  output, 10*n elements
;   n    u32            element count
; Launch: grid (ceil(n/64), 1, 1), block (64, 1, 1); tests use n = 200 with
;   x and y spanning negative, zero, positive and extreme values (but never
;   x = -2147483648 together with y = -1).
; Semantics: with i = ctaid.x*ntid.x + tid.x, for i < n, X = x[i], Y = y[i],
; s = Y & 31 and d = (Y == 0 ? 1 : Y), all in 32-bit two's complement:
;   out[10*i+0] = (int64(X) * int64(Y)) >> 32        (mul.hi.s32)
;   out[10*i+1] = X << s                             (shl.b32)
;   out[10*i+2] = X >> s, arithmetic                 (shr.s32)
;   out[10*i+3] = uint32(X) >> s, logical            (shr.u32)
;   out[10*i+4] = X / d, rounded toward zero         (div.s32)
;   out[10*i+5] = X % d = X - (X/d)*d, sign of X     (div.s32, mul.lo, sub)
;   out[10*i+6] = min(X, Y), signed                  (min.s32)
;   out[10*i+7] = max(uint32(X), uint32(Y)), unsigned (max.u32)
;   out[10*i+8] = number of 1 bits in X              (popc.b32)
;   out[10*i+9] = number of leading 0 bits in X, 32 for X == 0 (clz.b32)
; Threads with i >= n do nothing.

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.smin.i32(i32, i32)
declare i32 @llvm.umax.i32(i32, i32)
declare i32 @llvm.ctpop.i32(i32)
declare i32 @llvm.ctlz.i32(i32, i1)

define void @intops(i32 addrspace(1)* %x, i32 addrspace(1)* %y, i32 addrspace(1)* %out, i32 %n) {
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
  %px = getelementptr inbounds i32, i32 addrspace(1)* %x, i64 %idx
  %py = getelementptr inbounds i32, i32 addrspace(1)* %y, i64 %idx
  %X = load i32, i32 addrspace(1)* %px, align 4
  %Y = load i32, i32 addrspace(1)* %py, align 4
  %o = mul i64 %idx, 10
  %po = getelementptr inbounds i32, i32 addrspace(1)* %out, i64 %o

  %x64 = sext i32 %X to i64
  %y64 = sext i32 %Y to i64
  %p64 = mul nsw i64 %x64, %y64
  %h64 = lshr i64 %p64, 32
  %mulhi = trunc i64 %h64 to i32
  store i32 %mulhi, i32 addrspace(1)* %po, align 4

  %s = and i32 %Y, 31
  %shl = shl i32 %X, %s
  %p1 = getelementptr inbounds i32, i32 addrspace(1)* %po, i64 1
  store i32 %shl, i32 addrspace(1)* %p1, align 4
  %sra = ashr i32 %X, %s
  %p2 = getelementptr inbounds i32, i32 addrspace(1)* %po, i64 2
  store i32 %sra, i32 addrspace(1)* %p2, align 4
  %srl = lshr i32 %X, %s
  %p3 = getelementptr inbounds i32, i32 addrspace(1)* %po, i64 3
  store i32 %srl, i32 addrspace(1)* %p3, align 4

  %yz = icmp eq i32 %Y, 0
  %d = select i1 %yz, i32 1, i32 %Y
  %q = sdiv i32 %X, %d
  %p4 = getelementptr inbounds i32, i32 addrspace(1)* %po, i64 4
  store i32 %q, i32 addrspace(1)* %p4, align 4
  %r = srem i32 %X, %d
  %p5 = getelementptr inbounds i32, i32 addrspace(1)* %po, i64 5
  store i32 %r, i32 addrspace(1)* %p5, align 4

  %mn = call i32 @llvm.smin.i32(i32 %X, i32 %Y)
  %p6 = getelementptr inbounds i32, i32 addrspace(1)* %po, i64 6
  store i32 %mn, i32 addrspace(1)* %p6, align 4
  %mx = call i32 @llvm.umax.i32(i32 %X, i32 %Y)
  %p7 = getelementptr inbounds i32, i32 addrspace(1)* %po, i64 7
  store i32 %mx, i32 addrspace(1)* %p7, align 4

  %pc = call i32 @llvm.ctpop.i32(i32 %X)
  %p8 = getelementptr inbounds i32, i32 addrspace(1)* %po, i64 8
  store i32 %pc, i32 addrspace(1)* %p8, align 4
  %lz = call i32 @llvm.ctlz.i32(i32 %X, i1 false)
  %p9 = getelementptr inbounds i32, i32 addrspace(1)* %po, i64 9
  store i32 %lz, i32 addrspace(1)* %p9, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, i32 addrspace(1)*, i32 addrspace(1)*, i32)* @intops, !"kernel", i32 1}
