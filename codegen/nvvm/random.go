package nvvm

import (
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// philox computes one element of philox_uniform as codegen/ptx does, bit for bit: the
// Philox4x32-10 block of counter (lin/4, 0, stream low, stream high) under the key's two
// halves, ten rounds of 32×32→64-bit products split into high and low words and xors, then the
// element's word w = block[lin mod 4] as (w >> 8)·2⁻²⁴.
func (kg *kgen) philox(v *irg.Value, x *index) (value.Value, error) {
	key, err := kg.eval(v.Args[0], newIndexLin(irg.Shape{}, ci(0)))
	if err != nil {
		return nil, err
	}
	b := kg.b
	k0 := value.Value(b.NewTrunc(key, types.I32))
	k1 := value.Value(b.NewTrunc(b.NewLShr(key, constant.NewInt(types.I64, 32)), types.I32))
	stream := uint64(v.Attrs.Int("stream", 0))
	lin := kg.lin(x)
	c := [4]value.Value{b.NewLShr(lin, ci(2)), ci(0), cu32(uint32(stream)), cu32(uint32(stream >> 32))}
	// mulHiLo is the 64-bit product of c and constant m as its high and low 32-bit words.
	mulHiLo := func(c value.Value, m uint32) (hi, lo value.Value) {
		p := b.NewMul(b.NewZExt(c, types.I64), constant.NewInt(types.I64, int64(m)))
		return b.NewTrunc(b.NewLShr(p, constant.NewInt(types.I64, 32)), types.I32), b.NewTrunc(p, types.I32)
	}
	for r := range 10 {
		if r > 0 {
			k0 = b.NewAdd(k0, cu32(ops.PhiloxW0))
			k1 = b.NewAdd(k1, cu32(ops.PhiloxW1))
		}
		hi0, lo0 := mulHiLo(c[0], ops.PhiloxM0)
		hi1, lo1 := mulHiLo(c[2], ops.PhiloxM1)
		n0 := b.NewXor(b.NewXor(hi1, c[1]), k0)
		n2 := b.NewXor(b.NewXor(hi0, c[3]), k1)
		c = [4]value.Value{n0, lo1, n2, lo0}
	}
	lane := b.NewAnd(lin, ci(3))
	w := c[3]
	for j := 2; j >= 0; j-- {
		w = b.NewSelect(b.NewICmp(enum.IPredEQ, lane, ci(j)), c[j], w)
	}
	f := b.NewUIToFP(b.NewLShr(w, ci(8)), types.Float)
	return b.NewFMul(f, constant.NewFloat(types.Float, 0x1p-24)), nil
}

// cu32 is the i32 constant with bits u.
func cu32(u uint32) *constant.Int { return constant.NewInt(types.I32, int64(int32(u))) }
