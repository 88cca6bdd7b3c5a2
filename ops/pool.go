package ops

import (
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// evalPool is max_pool2d (isMax) or avg_pool2d. Padding is skipped rather than read: for max it is
// -inf, which never wins over the window's real elements; for avg a sum that starts at +0 is
// unchanged by adding +0.
func evalPool(isMax bool) func([]*tensor.Tensor, ir.Attrs, ir.Type) (*tensor.Tensor, error) {
	return func(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
		x, r := args[0], tensor.New(out)
		g, err := poolSpec(x.Type, a)
		if err != nil {
			return nil, err
		}
		parallel(g.n*g.c, func(plane int) {
			in := x.F[plane*g.h*g.w : (plane+1)*g.h*g.w]
			res := r.F[plane*g.oh*g.ow : (plane+1)*g.oh*g.ow]
			for oh := 0; oh < g.oh; oh++ {
				for ow := 0; ow < g.ow; ow++ {
					acc, count := 0.0, 0
					if isMax {
						acc = math.Inf(-1)
					}
					for kh := 0; kh < g.kh; kh++ {
						ih := oh*g.stride[0] - g.pad[0] + kh
						if ih < 0 || ih >= g.h {
							continue
						}
						for kw := 0; kw < g.kw; kw++ {
							iw := ow*g.stride[1] - g.pad[1] + kw
							if iw < 0 || iw >= g.w {
								continue
							}
							v := in[ih*g.w+iw]
							if isMax {
								acc = fmax(acc, v)
							} else {
								acc += v
							}
							count++
						}
					}
					if !isMax {
						if g.countIncludePad {
							count = g.kh * g.kw
						}
						acc /= float64(count)
					}
					res[oh*g.ow+ow] = tensor.RoundFloat(out.DType, acc)
				}
			}
		})
		return r, nil
	}
}
