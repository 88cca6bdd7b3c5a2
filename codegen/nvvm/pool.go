package nvvm

import (
	"math"

	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// pool evaluates max_pool2d and avg_pool2d at one output element as codegen/ptx's pool does:
// the window unrolled, out-of-image taps masked (their coordinates clamped so every read stays
// in the image), the taps folded in the reference's order (row-major; avg sums in f64 and
// divides once, by a power of two as a multiplication), so results are bit-identical to the
// reference. This is pooling fused into a loop or reduction kernel read directly; the staged
// template (pooling windows through shared memory) has no NVVM counterpart yet.
func (kg *kgen) pool(v *irg.Value, x *index) (value.Value, error) { return kg.poolTaps(v, x, nil) }

// poolTaps is pool with an optional source of taps: tap(y) returns the input element at index y
// (coordinates clamped into the image) when the caller holds it elsewhere (shared memory); nil
// evaluates it.
func (kg *kgen) poolTaps(v *irg.Value, x *index, tap func(y *index) value.Value) (value.Value, error) {
	in := v.Args[0]
	s := in.Type.Shape // [N, C, H, W]
	kern, stride, pad := plan.PoolGeometry(v)
	isMax := v.Op == "max_pool2d"
	d := v.Type.DType
	b := kg.b
	n, c := kg.coord(x, 0), kg.coord(x, 1)
	ih0 := kg.sub(kg.mul(kg.coord(x, 2), stride[0]), ci(pad[0]))
	iw0 := kg.sub(kg.mul(kg.coord(x, 3), stride[1]), ci(pad[1]))
	var acc value.Value = constVal(d, math.Inf(-1))
	if !isMax {
		acc = constVal(irg.F64, 0)
	}
	padded := pad[0] > 0 || pad[1] > 0
	countPad := v.Attrs.Bool("count_include_pad", true)
	var count value.Value = ci(0) // valid taps, when padding does not count
	for kh := range kern[0] {
		for kw := range kern[1] {
			ih, iw := kg.add(ih0, ci(kh)), kg.add(iw0, ci(kw))
			var valid value.Value
			if padded {
				valid = b.NewAnd(kg.inRange(ih, s[2]), kg.inRange(iw, s[3]))
				ih, iw = kg.clamp(ih, s[2]), kg.clamp(iw, s[3])
			}
			y := newIndexCoords(s, []value.Value{n, c, ih, iw})
			var xv value.Value
			if tap != nil {
				xv = tap(y)
			} else {
				var err error
				if xv, err = kg.eval(in, y); err != nil {
					return nil, err
				}
			}
			var next value.Value
			switch {
			case isMax && kh+kw == 0 && !padded:
				next = xv // max(-inf, x) is x, NaN and -0 included
			case isMax:
				next = kg.fminmax("max", d, acc, xv)
			default:
				next = b.NewFAdd(acc, kg.cast(in.Type.DType, xv, irg.F64))
			}
			if padded {
				next = b.NewSelect(valid, next, acc)
				if !isMax && !countPad {
					count = kg.add(count, b.NewZExt(valid, types.I32))
				}
			}
			acc = next
		}
	}
	if isMax {
		return acc, nil
	}
	taps := kern[0] * kern[1]
	if _, static := num(count); static && taps&(taps-1) == 0 {
		// Dividing by a power of two is multiplying by its reciprocal, exactly.
		return kg.cast(irg.F64, b.NewFMul(acc, constant.NewFloat(types.Double, 1/float64(taps))), d), nil
	}
	var div value.Value = constant.NewFloat(types.Double, float64(taps))
	if _, static := num(count); !static {
		div = b.NewUIToFP(count, types.Double)
	}
	return kg.cast(irg.F64, b.NewFDiv(acc, div), d), nil
}
