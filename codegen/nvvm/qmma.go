package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The tensor-core GEMM over a quantized weight (plan.MMA's Quant; codegen/ptx's
// mma_dequant.go, whose tiles, copies and arithmetic this follows step for step, so the
// results are its bit for bit): x[M,K] times w[N,K]ᵀ, w = dequantize(q, scale[, zero]) {axis=1}
// (or an f32 one cast to the operands' dtype). The A side is mma.go's; the B side copies q's
// bytes, 32 k of a step to a tile row of 48 bytes, and forms the mma's B fragments in
// registers: lane (g, t) reads column g's u16 at byte 2t (int8) or byte t (int4, two k a
// byte) of each k8 half of a k16 slab. Each integer is or'ed into the mantissa of 2²³, minus
// 2²³ + zero (exact), times the scale (one f32 rounding), and the pair rounded to f16x2 or
// bf16x2 by one cvt; for f16 scales and whole k steps (Halves) the pair dequantizes in an
// f16x2 register instead (1024 + u, minus 1024 + zero, times the scale pair: the op's one
// rounding). Scales and zero points are read once before the k loop (one group per row), on
// a group's first k step (groups of several steps, carried in registers), or per step or slab.
// Out-of-range k of a ragged last step are zero in B. libNVVM 11.8 has no bf16 type, no
// f16x2 arithmetic intrinsic and no packing cvt: each of those is one instruction of inline
// assembly.

// quantSide is the B side's byte tile and the thread's registers for it.
type quantSide struct {
	q    *plan.MMAQuant
	pl   plan.MMASide
	op   plan.GEMMOperand // q's layout: rows N, FreeSt bytes apart, K bytes
	n    int              // the weight's rows
	tile *ir.Global
	base value.Value // q's buffer

	row0, col0 value.Value // the thread's first copy: tile row, byte in the row
	first      value.Value // its byte offset in q at k 0
	frag       value.Value // byte offset of the thread's fragment bytes in buffer 0
	// (scale, biased zero) per column of the thread: loaded before the k loop (one group per
	// row), or carried in allocas across the k steps of a group and reloaded on its first.
	hoisted [][2]value.Value
	carried [][2]*ir.InstAlloca
}

// newQuantSide lays out the thread's copies of the B tile: tile row tid / PerRow, byte
// (tid % PerRow)·Chunk, and their offset in q (the row clamped into q).
func (mm *gemm) newQuantSide(tid value.Value, tile *ir.Global) *quantSide {
	kg, p := mm.kg, mm.p
	qs := &quantSide{q: p.MMA.Quant, pl: p.MMA.Sides[1], op: p.B, n: p.N, tile: tile, base: kg.ptr[p.B.Buffer]}
	qs.row0, qs.col0 = kg.div(tid, qs.pl.PerRow), kg.mul(kg.rem(tid, qs.pl.PerRow), qs.pl.Chunk)
	qs.first = kg.add(kg.mul(kg.clamp(kg.add(mm.n0, qs.row0), qs.n), qs.op.FreeSt), kg.add(qs.col0, ci(qs.op.Off)))
	return qs
}

// quantIssue copies k step k0's bytes of the B tile into buffer buf: by cp.async of Chunk
// bytes (zero-filled past q's rows or K), or byte by byte.
func (mm *gemm) quantIssue(qs *quantSide, k0, buf, tid value.Value) {
	kg := mm.kg
	total := plan.GEMMTileM * qs.pl.PerRow // copies per step
	kb := kg.div(kg.mul(k0, qs.q.Bits), 8)
	kc := kg.add(kb, qs.col0)
	bufBase := kg.add(kg.mul(buf, qs.pl.BufBytes), kg.add(kg.mul(qs.row0, qs.q.RowB), qs.col0))
	rows := kg.add(mm.n0, qs.row0)
	at := kg.add(qs.first, kb)
	for i, dr := range qs.pl.DF {
		copyOne := func() {
			b := kg.b
			ok := b.NewAnd(b.NewICmp(enum.IPredSLT, rows, ci(qs.n-dr)), b.NewICmp(enum.IPredSLT, kc, ci(qs.op.K)))
			src := b.NewSelect(ok, kg.elemPtr(irg.U8, qs.base, kg.add(at, ci(dr*qs.op.FreeSt))), qs.base)
			dst := kg.add(bufBase, ci(dr*qs.q.RowB))
			if qs.pl.Chunk == 1 {
				ld := b.NewLoad(types.I8, src)
				kg.b.NewStore(b.NewSelect(ok, ld, constant.NewInt(types.I8, 0)), mm.shPtr(qs.tile, dst, types.I8))
				return
			}
			kind := "ca"
			if qs.pl.Chunk == 16 {
				kind = "cg"
			}
			n := b.NewSelect(ok, ci(qs.pl.Chunk), ci(0))
			kg.asm(fmt.Sprintf("cp.async.%s.shared.global [$0], [$1], %d, $2;", kind, qs.pl.Chunk), "r,l,r,~{memory}", mm.shAddr(qs.tile, dst), src, n)
		}
		if left := total - i*plan.GEMMThreads; left < plan.GEMMThreads {
			// Fewer copies than threads (int4 by 16 bytes): the others would write past the rows.
			kg.branch(kg.b.NewICmp(enum.IPredULT, tid, ci(left)), "copy", copyOne)
			continue
		}
		copyOne()
	}
}

// quantFragInit computes the thread's fragment offset (column wn·8·nI + g of the tile, byte 2t
// or t of its row) and, in the entry block, loads the scales and zero points of its nI columns
// for one group per row, or makes the allocas carrying them across a group's steps.
func (mm *gemm) quantFragInit(qs *quantSide, lane, wn value.Value, nI, bk int) error {
	kg := mm.kg
	g, t := kg.div(lane, 4), kg.rem(lane, 4)
	col := kg.add(kg.mul(wn, 8*nI), g)
	qs.frag = kg.add(kg.mul(col, qs.q.RowB), kg.mul(t, qs.q.Bits/4))
	switch {
	case qs.q.Group >= mm.p.K:
		for ni := range nI {
			s, z, err := mm.quantScale(qs, kg.add(kg.add(mm.n0, col), ci(8*ni)), ci(0))
			if err != nil {
				return err
			}
			qs.hoisted = append(qs.hoisted, [2]value.Value{s, z})
		}
	case qs.q.Group%bk == 0 && qs.q.Group > bk:
		var kind types.Type = types.Float
		if qs.q.Halves {
			kind = types.I32 // f16x2 pairs
		}
		for range nI {
			qs.carried = append(qs.carried, [2]*ir.InstAlloca{kg.b.NewAlloca(kind), kg.b.NewAlloca(kind)})
		}
	}
	return nil
}

// quantScale loads the scale and the biased zero point of column n (clamped into the weight)
// and group grp: the f32 scale and 2²³ (+ 128 for i8) + zero, or with Halves both as f16
// pairs, the zero biased by 1024 (+ 128), exact in f16.
func (mm *gemm) quantScale(qs *quantSide, n, grp value.Value) (scale, zmagic value.Value, err error) {
	kg, b, dq := mm.kg, mm.kg.b, qs.q.DQ
	at := []value.Value{kg.clamp(n, qs.n), grp}
	s := dq.Args[1]
	sv, err := kg.eval(s, newIndexCoords(s.Type.Shape, at))
	if err != nil {
		return nil, nil, err
	}
	scale = kg.cast(s.Type.DType, sv, irg.F32)
	bias := 1 << 23
	if qs.q.Halves {
		bias = 1024
	}
	if dq.Args[0].Type.DType == irg.I8 {
		bias += 128
	}
	var z value.Value = ci(int(ops.DequantizeZero(qs.q.Bits)))
	if len(dq.Args) == 3 {
		zt := dq.Args[2]
		zv, err := kg.eval(zt, newIndexCoords(zt.Type.Shape, at))
		if err != nil {
			return nil, nil, err
		}
		z = kg.cast(zt.Type.DType, zv, irg.I32)
	}
	zmagic = b.NewSIToFP(kg.add(z, ci(bias)), types.Float) // exact: small integers
	if !qs.q.Halves {
		return scale, zmagic, nil
	}
	pair := func(f32 value.Value) value.Value {
		h := b.NewZExt(b.NewBitCast(b.NewFPTrunc(f32, types.Half), types.I16), types.I32) // an f16 value: exact
		return b.NewOr(h, b.NewShl(h, ci(16)))
	}
	return pair(scale), pair(zmagic), nil
}

// quantStep loads, at the top of k step kt's compute, what quantFrags needs per slab: the
// scales of each column (per step or per slab by the group size) and, where K is ragged,
// whether each of the thread's k is inside it.
func (mm *gemm) quantStep(qs *quantSide, kt, lane, wn value.Value, nI, bk int) func(ks int) ([][2]value.Value, [][2]value.Value, error) {
	kg, K, group := mm.kg, mm.p.K, qs.q.Group
	k0 := kg.mul(kt, bk)
	col := kg.add(kg.add(mm.n0, kg.mul(wn, 8*nI)), kg.div(lane, 4))
	groups := K / group
	load := func(ks int) ([][2]value.Value, error) {
		if qs.hoisted != nil {
			return qs.hoisted, nil
		}
		b := kg.b
		grp := b.NewUDiv(kg.add(k0, ci(ks)), ci(group))
		last := ci(groups - 1)
		grp2 := b.NewSelect(b.NewICmp(enum.IPredULT, grp, last), grp, last)
		var out [][2]value.Value
		for ni := range nI {
			s, z, err := mm.quantScale(qs, kg.add(col, ci(8*ni)), grp2)
			if err != nil {
				return nil, err
			}
			out = append(out, [2]value.Value{s, z})
		}
		return out, nil
	}
	var perStep [][2]value.Value
	var stepErr error
	switch {
	case qs.carried != nil:
		// Groups of several steps: the values carried across steps are reloaded on a group's
		// first step only.
		first := kg.b.NewICmp(enum.IPredEQ, kg.rem(kt, group/bk), ci(0))
		kg.branch(first, "group_scales", func() {
			loaded, err := load(0)
			if err != nil {
				stepErr = err
				return
			}
			for ni, c := range qs.carried {
				kg.b.NewStore(loaded[ni][0], c[0])
				kg.b.NewStore(loaded[ni][1], c[1])
			}
		})
		for _, c := range qs.carried {
			perStep = append(perStep, [2]value.Value{kg.b.NewLoad(c[0].ElemType, c[0]), kg.b.NewLoad(c[1].ElemType, c[1])})
		}
	case qs.hoisted == nil && group%bk == 0:
		perStep, stepErr = load(0)
	}
	kt2 := kg.add(k0, kg.mul(kg.rem(lane, 4), 2))
	return func(ks int) ([][2]value.Value, [][2]value.Value, error) {
		if stepErr != nil {
			return nil, nil, stepErr
		}
		var kOK [][2]value.Value
		if K%bk != 0 {
			kOK = make([][2]value.Value, 2)
			for h := range 2 {
				for e := range 2 {
					kOK[h][e] = kg.b.NewICmp(enum.IPredSLT, kt2, ci(K-(ks+8*h+e)))
				}
			}
		}
		if perStep != nil {
			return perStep, kOK, nil
		}
		s, err := load(ks)
		return s, kOK, err
	}
}

// quantFrags forms the B fragments of k slab ks (0 or 16 of the step) in buffer cur: for each
// pair of column tiles (2nj, 2nj+1), registers in ldmatrix.x4's order (k half j%2, tile
// 2nj + j/2). scales holds the (scale, zmagic) of each of the thread's nI columns.
func (mm *gemm) quantFrags(qs *quantSide, cur value.Value, ks, nI int, scales, kOK [][2]value.Value) [][]value.Value {
	kg := mm.kg
	base := kg.add(kg.mul(cur, qs.pl.BufBytes), qs.frag)
	bits := qs.q.Bits
	signed := qs.q.DQ.Args[0].Type.DType == irg.I8
	cvt := "cvt.rn.f16x2.f32 $0, $1, $2;"
	if mm.p.Dot.Type.DType == irg.BF16 {
		cvt = "cvt.rn.bf16x2.f32 $0, $1, $2;"
	}
	bf := make([][]value.Value, nI/2)
	for nj := range bf {
		bf[nj] = make([]value.Value, 4)
		for j := range 4 {
			b := kg.b
			ni, h := 2*nj+j/2, j%2
			at := kg.add(base, ci(ni*8*qs.q.RowB+(ks+8*h)*bits/8))
			t := types.I8
			if bits == 8 {
				t = types.I16
			}
			ld := b.NewLoad(t, mm.shPtr(qs.tile, at, t))
			ld.Align = ir.Align(bits / 4)
			r := b.NewZExt(ld, types.I32)
			if qs.q.Halves {
				bf[nj][j] = mm.quantPair(qs, r, signed, scales[ni])
				continue
			}
			var fs [2]value.Value
			for e := range 2 {
				var u value.Value = b.NewAnd(b.NewLShr(r, ci(e*bits)), ci(1<<bits-1))
				if signed {
					u = b.NewXor(u, ci(128))
				}
				f := b.NewBitCast(b.NewOr(u, ci(0x4B000000)), types.Float)
				var x value.Value = b.NewFMul(b.NewFSub(f, scales[ni][1]), scales[ni][0])
				if kOK != nil {
					x = b.NewSelect(kOK[h][e], x, constant.NewFloat(types.Float, 0))
				}
				fs[e] = x
			}
			bf[nj][j] = kg.asmRet(types.I32, cvt, "=r,f,f", fs[1], fs[0]) // the even k in the lower half
		}
	}
	return bf
}

// quantPair dequantizes the two fields of r (the even k in the low bits) into an f16x2
// register: the fields moved to bits 0 and 16, or'ed into the mantissas of two 1024s (1024 + u
// is exact), minus the pair 1024 (+ 128) + zero, which leaves u − zero exactly, times the
// scale pair: the one rounding of dequantize's product to f16.
func (mm *gemm) quantPair(qs *quantSide, r value.Value, signed bool, sc [2]value.Value) value.Value {
	kg, b := mm.kg, mm.kg.b
	var t value.Value
	mask := 0x00FF00FF
	if qs.q.Bits == 4 {
		t = b.NewOr(b.NewShl(r, ci(12)), r)
		mask = 0x000F000F
	} else {
		t = b.NewOr(b.NewAnd(r, ci(0xFF)), b.NewShl(b.NewAnd(r, ci(0xFF00)), ci(8)))
		if signed {
			t = b.NewXor(t, ci(0x00800080))
		}
	}
	t = b.NewOr(b.NewAnd(t, ci(mask)), ci(0x64006400))
	t = kg.asmRet(types.I32, "sub.rn.f16x2 $0, $1, $2;", "=r,r,r", t, sc[1])
	return kg.asmRet(types.I32, "mul.rn.f16x2 $0, $1, $2;", "=r,r,r", t, sc[0])
}
