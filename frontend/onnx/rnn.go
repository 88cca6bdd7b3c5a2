package onnx

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/ir"
)

// RNN, GRU and LSTM, unrolled over the (static) sequence with ONNX's default activations.

func init() {
	converters["RNN"] = rnnConv("RNN", 1, []string{"Tanh"})
	converters["GRU"] = rnnConv("GRU", 3, []string{"Sigmoid", "Tanh"})
	converters["LSTM"] = rnnConv("LSTM", 4, []string{"Sigmoid", "Tanh", "Tanh"})
}

func rnnConv(kind string, gates int, acts []string) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(3, 8); err != nil {
			return nil, err
		}
		x, w, r := n.in[0], n.in[1], n.in[2]
		if !x.t.DType.IsFloat() || len(x.t.Shape) != 3 || len(w.t.Shape) != 3 || len(r.t.Shape) != 3 {
			return nil, fmt.Errorf("%s of X %s, W %s, R %s", kind, x.t, w.t, r.t)
		}
		dir, err := n.attrChoice("direction", "forward", "forward", "reverse", "bidirectional")
		if err != nil {
			return nil, err
		}
		if a, ok := n.attrs["activations"]; ok {
			want := acts
			if dir == "bidirectional" {
				want = append(slices.Clone(acts), acts...)
			}
			var got []string
			for _, s := range a.GetStrings() {
				got = append(got, string(s))
			}
			if !slices.Equal(got, want) {
				return nil, unsupportedf("activations %v are not supported (supported: the defaults, %v)", got, acts)
			}
		}
		if n.has("clip") {
			return nil, unsupportedf("clip is not supported")
		}
		if kind == "LSTM" && n.attrInt("input_forget", 0) != 0 {
			return nil, unsupportedf("input_forget is not supported")
		}
		layout := n.attrInt("layout", 0)
		if layout == 1 {
			x = n.transpose(x, []int{1, 0, 2})
		}
		seq, batch := x.t.Shape[0], x.t.Shape[1]
		dirs := 1
		if dir == "bidirectional" {
			dirs = 2
		}
		hidden := r.t.Shape[2]
		if w.t.Shape[0] != dirs || w.t.Shape[1] != gates*hidden || r.t.Shape[1] != gates*hidden || w.t.Shape[2] != x.t.Shape[2] {
			return nil, fmt.Errorf("%s: W %s and R %s do not fit %d directions of hidden size %d", kind, w.t, r.t, dirs, hidden)
		}
		if sl := n.arg(4); sl != nil {
			c, err := n.known(4, "sequence_lens")
			if err != nil {
				return nil, err
			}
			for i := 0; i < c.Len(); i++ {
				if int(c.At(i)) != seq {
					return nil, unsupportedf("sequence_lens shorter than the sequence are not supported")
				}
			}
		}
		var ys, hs, cs []*val
		for d := 0; d < dirs; d++ {
			pick := func(v *val, d int) *val { // v[d] of a [dirs, ...] tensor
				if v == nil {
					return nil
				}
				s := v.t.Shape
				return n.reshape(n.sliceAxis(v, 0, d, d+1, 1), s[1:])
			}
			wd, rd := pick(w, d), pick(r, d)
			var wb, rb *val
			if b := n.arg(3); b != nil {
				bd := pick(b, d)
				wb, rb = n.sliceAxis(bd, 0, 0, gates*hidden, 1), n.sliceAxis(bd, 0, gates*hidden, 2*gates*hidden, 1)
			}
			h := n.splatOf(ir.T(x.t.DType, batch, hidden), 0)
			if h0 := n.arg(5); h0 != nil {
				h = pick(h0, d)
			}
			c := n.splatOf(ir.T(x.t.DType, batch, hidden), 0)
			var p *val
			if kind == "LSTM" {
				if c0 := n.arg(6); c0 != nil {
					c = pick(c0, d)
				}
				p = pick(n.arg(7), d)
			}
			reverse := dir == "reverse" || d == 1
			out := make([]*val, seq)
			for step := 0; step < seq; step++ {
				t := step
				if reverse {
					t = seq - 1 - step
				}
				xt := n.reshape(n.sliceAxis(x, 0, t, t+1, 1), ir.Shape{batch, x.t.Shape[2]})
				h, c = n.cell(kind, xt, h, c, wd, rd, wb, rb, p, hidden)
				out[t] = h
			}
			for t := range out {
				out[t] = n.reshape(out[t], ir.Shape{1, 1, batch, hidden})
			}
			ys = append(ys, must(n.op("concat", ir.Attrs{"axis": 0}, out...)))
			hs = append(hs, n.reshape(h, ir.Shape{1, batch, hidden}))
			cs = append(cs, n.reshape(c, ir.Shape{1, batch, hidden}))
		}
		cat := func(vs []*val, a int) *val {
			if len(vs) == 1 {
				return vs[0]
			}
			return must(n.op("concat", ir.Attrs{"axis": a}, vs...))
		}
		y, yh, yc := cat(ys, 1), cat(hs, 0), cat(cs, 0)
		if layout == 1 {
			y = n.transpose(y, []int{2, 0, 1, 3})
			yh = n.transpose(yh, []int{1, 0, 2})
			yc = n.transpose(yc, []int{1, 0, 2})
		}
		if kind != "LSTM" {
			yc = nil
		}
		return []*val{y, yh, yc}, nil
	}
}

// gate returns rows [g·hidden, (g+1)·hidden) of a gate-stacked weight or bias.
func (n *node) gate(v *val, g, hidden int) *val {
	if v == nil {
		return nil
	}
	return n.sliceAxis(v, 0, g*hidden, (g+1)*hidden, 1)
}

// affine is x·wᵀ (+ b).
func (n *node) affine(x, w, b *val) *val {
	y := must(n.op("dot_general", ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}, x, w))
	if b != nil {
		y = n.bin("add", y, must(n.broadcastLike(b, y.t)))
	}
	return y
}

func (n *node) cell(kind string, xt, h, c, w, r, wb, rb, p *val, hidden int) (*val, *val) {
	pre := func(g int) *val { // Xt·Wgᵀ + Wbg + Ht-1·Rgᵀ + Rbg
		return n.bin("add", n.affine(xt, n.gate(w, g, hidden), n.gate(wb, g, hidden)), n.affine(h, n.gate(r, g, hidden), n.gate(rb, g, hidden)))
	}
	sig := func(v *val) *val { return n.unary("sigmoid", v) }
	tanh := func(v *val) *val { return n.unary("tanh", v) }
	switch kind {
	case "RNN":
		return tanh(pre(0)), c
	case "GRU": // gates z, r, h
		z, rg := sig(pre(0)), sig(pre(1))
		var hh *val
		if n.attrInt("linear_before_reset", 0) != 0 {
			hh = n.bin("add", n.affine(xt, n.gate(w, 2, hidden), n.gate(wb, 2, hidden)),
				n.bin("mul", rg, n.affine(h, n.gate(r, 2, hidden), n.gate(rb, 2, hidden))))
		} else {
			hh = n.bin("add", n.affine(xt, n.gate(w, 2, hidden), n.gate(wb, 2, hidden)),
				n.affine(n.bin("mul", rg, h), n.gate(r, 2, hidden), n.gate(rb, 2, hidden)))
		}
		hh = tanh(hh)
		one := n.splat(z, 1)
		return n.bin("add", n.bin("mul", n.bin("sub", one, z), hh), n.bin("mul", z, h)), c
	}
	// LSTM: gates i, o, f, c; peepholes i, o, f.
	peep := func(v *val, k int, cc *val) *val {
		if p == nil {
			return v
		}
		pk := must(n.broadcastLike(n.gate(p, k, hidden), cc.t))
		return n.bin("add", v, n.bin("mul", pk, cc))
	}
	i := sig(peep(pre(0), 0, c))
	f := sig(peep(pre(2), 2, c))
	ct := n.bin("add", n.bin("mul", f, c), n.bin("mul", i, tanh(pre(3))))
	o := sig(peep(pre(1), 1, ct))
	return n.bin("mul", o, tanh(ct)), ct
}
