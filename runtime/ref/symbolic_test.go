package ref_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// symModel is one model at static sizes, or over dims batch, seq and h when symbolic: an MLP
// block with layer norm and softmax, a concat and transpose, attention scores and their
// flattened product, a conv with bias and pooling, and an embedding.
func symModel(symbolic bool, batch, seq, h int) func(b *frontend.Builder) {
	return func(b *frontend.Builder) {
		B, S, H := batch, seq, h
		if symbolic {
			B, S, H = b.Dim("batch", 1, 4), b.Dim("seq", 1, 6), b.Dim("h", 4, 9)
		}
		x := b.Input("x", ir.F32, B, S, 8)
		w1 := b.Param("w1", ir.T(ir.F32, 12, 8), frontend.Uniform(-1, 1))
		b1 := b.Param("b1", ir.T(ir.F32, 12), frontend.Uniform(-1, 1))
		y := frontend.Linear(x.Reshape(-1, 8), w1, b1).Relu().Reshape(B, S, 12)
		y = frontend.LayerNorm(y, []int{12}, nil, nil, 1e-5).Softmax(1)
		b.Output("pooled", y.Sum(1))
		b.Output("cat", frontend.Cat(1, y, y).Transpose(1, 2))
		q := x.Matmul(b.Param("wq", ir.T(ir.F32, 8, 4), frontend.Uniform(-1, 1)))
		b.Output("att", q.Matmul(q.Transpose(1, 2)).Softmax(-1).Matmul(q).Flatten(0, 1))
		img := b.Input("img", ir.F32, B, 3, H, H)
		w := b.Param("w", ir.T(ir.F32, 4, 3, 3, 3), frontend.Uniform(-1, 1))
		cb := b.Param("cb", ir.T(ir.F32, 4), frontend.Uniform(-1, 1))
		c := frontend.Conv2d(img, w, cb, frontend.Conv2dOptions{Padding: [2]int{1, 1}, Stride: [2]int{2, 1}}).Relu()
		b.Output("conv", frontend.MaxPool2d(c, [2]int{2, 2}, frontend.PoolOptions{}))
		tok := b.Input("tok", ir.I64, B, S).WithRange(0, 10)
		b.Output("emb", frontend.Embedding(tok, b.Param("table", ir.T(ir.F32, 10, 4), frontend.Uniform(-1, 1))))
	}
}

// One symbolic graph runs at several sizes in its ranges and gives exactly what the static
// graph traced at those sizes gives.
func TestSymbolicMatchesStatic(t *testing.T) {
	g, err := frontend.Build("m", symModel(true, 0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range [][3]int{{1, 1, 4}, {3, 5, 7}, {4, 6, 9}, {2, 6, 4}} {
		st, err := frontend.Build("m", symModel(false, sz[0], sz[1], sz[2]))
		if err != nil {
			t.Fatal(err)
		}
		inputs, params, err := tensor.SeededValues(st, 3)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(st, inputs, params)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ref.Run(g, inputs, params)
		if err != nil {
			t.Fatalf("sizes %v: %v", sz, err)
		}
		for name, w := range want {
			o := got[name]
			if o == nil || !o.Type.Equal(w.Type) || !slices.Equal(o.F, w.F) || !slices.Equal(o.I, w.I) {
				t.Errorf("sizes %v: output %s differs from the static graph's (%v vs %v)", sz, name, o.Type, w.Type)
			}
		}
	}
}

func TestSymbolicInputErrors(t *testing.T) {
	src := `graph g {
  dims { batch in [1,4], seq in [2,6] }
  input %x : f32[batch,seq]
  input %y : f32[seq]
  input %z : f32[2*batch]
  %0 = reshape(%x) {shape=[24]} : f32[batch*seq]
  %1 = slice(%y) {limit=[6], start=[0]} : f32[seq]
  %2 = pad(%1) {high=[2], low=[1], value=7.0} : f32[seq+3]
  output a = %0
  output d = %2
  output b = %y
  output c = %z
}
`
	g, err := ir.Parse("g.gir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	in := func(x, y, z []int) map[string]*tensor.Tensor {
		return map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F32, x...)), "y": tensor.New(ir.T(ir.F32, y...)), "z": tensor.New(ir.T(ir.F32, z...))}
	}
	out, err := ref.Run(g, in([]int{3, 5}, []int{5}, []int{6}), nil)
	if err != nil || !out["a"].Type.Equal(ir.T(ir.F32, 15)) || !slices.Equal(out["d"].F, []float64{7, 0, 0, 0, 0, 0, 7, 7}) {
		t.Fatalf("a run in range: %v, %v", err, out)
	}
	tests := []struct {
		name    string
		x, y, z []int
		want    string
	}{
		{"over", []int{5, 5}, []int{5}, []int{10}, "input x: dim 0 (batch) is 5, outside batch's range [1,4]"},
		{"under", []int{1, 1}, []int{1}, []int{2}, "input x: dim 1 (seq) is 1, outside seq's range [2,6]"},
		{"disagree", []int{2, 5}, []int{4}, []int{4}, "inputs disagree on seq: input x's dim 1 is 5, input y's dim 0 is 4"},
		{"compound", []int{2, 5}, []int{5}, []int{5}, "input z: dim 0 is 5, but 2*batch is 4 at batch=2"},
		{"rank", []int{2, 5, 1}, []int{5}, []int{4}, "input x: want f32[batch,seq], have shape [2,5,1]"},
	}
	for _, tc := range tests {
		_, err := ref.Run(g, in(tc.x, tc.y, tc.z), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
}

// The cost of symbolic types: verifying the model static and symbolic, and a reference run of
// the symbolic graph (instantiation included) against the static trace at the same sizes.
func BenchmarkSymbolic(b *testing.B) {
	st, err := frontend.Build("m", symModel(false, 3, 5, 7))
	if err != nil {
		b.Fatal(err)
	}
	g, err := frontend.Build("m", symModel(true, 0, 0, 0))
	if err != nil {
		b.Fatal(err)
	}
	inputs, params, err := tensor.SeededValues(st, 3)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		g    *ir.Graph
	}{{"static", st}, {"symbolic", g}} {
		b.Run("verify/"+c.name, func(b *testing.B) {
			for range b.N {
				if err := ops.Verify(c.g); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("run/"+c.name, func(b *testing.B) {
			for range b.N {
				if _, err := ref.Run(c.g, inputs, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
