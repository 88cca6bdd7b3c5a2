package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

func random(rng *rand.Rand, d ir.DType, shape ...int) *tensor.Tensor {
	x := tensor.New(ir.T(d, shape...))
	for i := 0; i < x.Len(); i++ {
		if x.F != nil {
			x.F[i] = tensor.RoundFloat(d, rng.NormFloat64())
		} else {
			x.I[i] = tensor.WrapInt(d, rng.Int64N(200)-100)
		}
	}
	return x
}

// unravel returns the coordinates of flat index k in shape.
func unravel(k int, shape []int) []int {
	c := make([]int, len(shape))
	for i := len(shape) - 1; i >= 0; i-- {
		c[i] = k % shape[i]
		k /= shape[i]
	}
	return c
}

func at(x *tensor.Tensor, c []int) (float64, int64) {
	k := 0
	for i, s := range x.Type.Shape.Strides() {
		k += c[i] * s
	}
	if x.F != nil {
		return x.F[k], 0
	}
	return 0, x.I[k]
}

// naiveDot is dot_general straight from its definition.
func naiveDot(l, r *tensor.Tensor, a ir.Attrs, out ir.Type) *tensor.Tensor {
	d, err := dotSpec(l.Type, r.Type, a)
	if err != nil {
		panic(err)
	}
	res := tensor.New(out)
	var kshape []int
	for _, i := range d.lc {
		kshape = append(kshape, l.Type.Shape[i])
	}
	for o := 0; o < res.Len(); o++ {
		oc := unravel(o, out.Shape)
		lc, rc := make([]int, len(l.Type.Shape)), make([]int, len(r.Type.Shape))
		n := 0
		for i := range d.lb {
			lc[d.lb[i]], rc[d.rb[i]] = oc[n], oc[n]
			n++
		}
		for _, i := range d.lf {
			lc[i] = oc[n]
			n++
		}
		for _, i := range d.rf {
			rc[i] = oc[n]
			n++
		}
		var fs float64
		var is int64
		for k := 0; k < ir.Shape(kshape).NumElements(); k++ {
			kc := unravel(k, kshape)
			for i := range d.lc {
				lc[d.lc[i]], rc[d.rc[i]] = kc[i], kc[i]
			}
			lf, li := at(l, lc)
			rf, ri := at(r, rc)
			fs += lf * rf
			is += li * ri
		}
		if res.F != nil {
			res.F[o] = tensor.RoundFloat(out.DType, fs)
		} else {
			res.I[o] = wrap(out.DType, is)
		}
	}
	return res
}

func TestDotGeneralVsNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		d    ir.DType
		l, r []int
		a    ir.Attrs
	}{
		{ir.F32, []int{70, 300}, []int{130, 300}, ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}}, // tiles and k blocks with remainders
		{ir.F32, []int{33, 17}, []int{17, 65}, ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}},
		{ir.F16, []int{3, 4, 5, 6}, []int{3, 6, 7}, ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{3}, "rhs_contract": []int{1}}},
		{ir.BF16, []int{4, 2, 3, 5}, []int{5, 3, 2, 6}, ir.Attrs{"lhs_batch": []int{1}, "rhs_batch": []int{2}, "lhs_contract": []int{3, 2}, "rhs_contract": []int{0, 1}}},
		{ir.F64, []int{2, 3}, []int{4}, nil},
		{ir.I32, []int{5, 7}, []int{7, 3}, ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}},
		{ir.I8, []int{2, 9, 4}, []int{9, 2, 5}, ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{1}, "lhs_contract": []int{1}, "rhs_contract": []int{0}}},
		{ir.F32, []int{0, 4}, []int{4, 3}, ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}},
		{ir.F32, []int{2, 0}, []int{0, 3}, ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}},
	} {
		l, r := random(rng, c.d, c.l...), random(rng, c.d, c.r...)
		got, err := apply("dot_general", c.a, l, r)
		if err != nil {
			t.Fatal(err)
		}
		if want := naiveDot(l, r, c.a, got.Type); !same(got, want) {
			t.Errorf("dot_general %s %s %s: differs from the naive loop", l.Type, r.Type, ir.FormatAttr(c.a.Keys()))
		}
	}
}

// naiveConv is conv2d from PyTorch's definition, with literal zero padding.
func naiveConv(x, w *tensor.Tensor, g convGeom, out ir.Type) *tensor.Tensor {
	res := tensor.New(out)
	cg, og := g.c/g.groups, g.outC/g.groups
	for o := 0; o < res.Len(); o++ {
		c := unravel(o, out.Shape)
		n, oc, oh, ow := c[0], c[1], c[2], c[3]
		s := 0.0
		for ic := 0; ic < cg; ic++ {
			for kh := 0; kh < g.kh; kh++ {
				for kw := 0; kw < g.kw; kw++ {
					ih, iw := oh*g.stride[0]-g.pad[0]+kh*g.dil[0], ow*g.stride[1]-g.pad[1]+kw*g.dil[1]
					v := 0.0
					if ih >= 0 && ih < g.h && iw >= 0 && iw < g.w {
						v, _ = at(x, []int{n, oc/og*cg + ic, ih, iw})
					}
					wv, _ := at(w, []int{oc, ic, kh, kw})
					s += v * wv
				}
			}
		}
		res.F[o] = tensor.RoundFloat(out.DType, s)
	}
	return res
}

func TestConv2dVsNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		d                ir.DType
		x, w             []int
		stride, pad, dil []int
		groups           int
	}{
		{ir.F32, []int{2, 3, 9, 9}, []int{4, 3, 3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}, 1},
		{ir.F32, []int{1, 4, 11, 8}, []int{6, 2, 3, 2}, []int{2, 3}, []int{1, 0}, []int{2, 1}, 2},
		{ir.F32, []int{2, 6, 7, 7}, []int{6, 1, 3, 3}, []int{1, 1}, []int{2, 2}, []int{1, 1}, 6}, // depthwise
		{ir.F16, []int{1, 2, 5, 6}, []int{3, 2, 5, 1}, []int{1, 2}, []int{2, 0}, []int{1, 1}, 1},
		{ir.BF16, []int{3, 4, 6, 6}, []int{8, 1, 2, 2}, []int{2, 2}, []int{0, 1}, []int{2, 2}, 4},
		{ir.F64, []int{1, 40, 5, 5}, []int{70, 40, 3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}, 1}, // k = 360 spans two k blocks
	} {
		a := ir.Attrs{"stride": c.stride, "padding": c.pad, "dilation": c.dil, "groups": c.groups}
		x, w := random(rng, c.d, c.x...), random(rng, c.d, c.w...)
		got, err := apply("conv2d", a, x, w)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := convSpec(x.Type, w.Type, a)
		if want := naiveConv(x, w, g, got.Type); !same(got, want) {
			t.Errorf("conv2d %s %s %s: differs from the naive loop", x.Type, w.Type, fmt.Sprint(a))
		}
	}
}

func naivePool(x *tensor.Tensor, isMax bool, g convGeom, out ir.Type) *tensor.Tensor {
	res := tensor.New(out)
	for o := 0; o < res.Len(); o++ {
		c := unravel(o, out.Shape)
		s, n := 0.0, 0
		if isMax {
			s = -inf
		}
		for kh := 0; kh < g.kh; kh++ {
			for kw := 0; kw < g.kw; kw++ {
				ih, iw := c[2]*g.stride[0]-g.pad[0]+kh, c[3]*g.stride[1]-g.pad[1]+kw
				if ih < 0 || ih >= g.h || iw < 0 || iw >= g.w {
					continue
				}
				v, _ := at(x, []int{c[0], c[1], ih, iw})
				n++
				if isMax {
					s = fmax(s, v)
				} else {
					s += v
				}
			}
		}
		if !isMax {
			if g.countIncludePad {
				n = g.kh * g.kw
			}
			s /= float64(n)
		}
		res.F[o] = tensor.RoundFloat(out.DType, s)
	}
	return res
}

func TestPoolVsNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, a := range []ir.Attrs{
		{"kernel": []int{2, 2}},
		{"kernel": []int{3, 3}, "stride": []int{2, 2}, "padding": []int{1, 1}},
		{"kernel": []int{3, 2}, "stride": []int{1, 2}, "padding": []int{1, 1}, "count_include_pad": false},
		{"kernel": []int{5, 4}, "stride": []int{3, 1}, "padding": []int{2, 0}},
	} {
		for _, d := range []ir.DType{ir.F32, ir.F16} {
			x := random(rng, d, 2, 3, 9, 10)
			g, _ := poolSpec(x.Type, a)
			for _, op := range []string{"max_pool2d", "avg_pool2d"} {
				if _, ok := a["count_include_pad"]; ok && op == "max_pool2d" {
					continue
				}
				got, err := apply(op, a, x)
				if err != nil {
					t.Fatal(err)
				}
				if want := naivePool(x, op == "max_pool2d", g, got.Type); !same(got, want) {
					t.Errorf("%s %s %v: differs from the naive loop", op, x.Type, a)
				}
			}
		}
	}
}
