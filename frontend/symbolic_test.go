package frontend_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// types lists every value's type in definition order.
func types(g *ir.Graph) []string {
	var out []string
	for _, v := range g.Values {
		out = append(out, v.Op+" "+v.Type.String())
	}
	return out
}

// A transformer-style MLP block and a small CNN over symbolic dims build, verify, and carry
// their sizes as expressions through the DSL's helpers; Shape reports the bounds.
func TestSymbolicModels(t *testing.T) {
	g, err := frontend.Build("mlp", func(b *frontend.Builder) {
		batch, seq := b.Dim("batch", 1, 64), b.Dim("seq", 1, 2048)
		x := b.Input("x", ir.F32, batch, seq, 16)
		if got := x.Shape(); !ir.Shape(got).Equal(ir.Shape{64, 2048, 16}) {
			t.Errorf("Shape = %v, want the bounds", got)
		}
		w1 := b.Param("w1", ir.T(ir.F32, 32, 16), frontend.Zeros())
		b1 := b.Param("b1", ir.T(ir.F32, 32), frontend.Zeros())
		h := frontend.Linear(x.Reshape(-1, 16), w1, b1).Relu()
		h = h.Reshape(batch, seq, 32)
		h = frontend.LayerNorm(h, []int{32}, nil, nil, 1e-5).Softmax(1)
		b.Output("y", h.Sum(1))
		b.Output("z", frontend.Cat(1, h, h).Transpose(1, 2))
		q := x.Matmul(b.Param("wq", ir.T(ir.F32, 16, 8), frontend.Zeros()))
		b.Output("att", q.Matmul(q.Transpose(1, 2)).Softmax(-1).Matmul(q).Flatten(0, 1))
	})
	if err != nil {
		t.Fatal(err)
	}
	text := g.String()
	for _, want := range []string{
		"  dims { batch in [1,64], seq in [1,2048] }\n",
		"input %x : f32[batch,seq,16]",
		"reshape(%x) {shape=[131072,16]} : f32[batch*seq,16]",
		"{dims=[1], shape=[131072,32]} : f32[batch*seq,32]",
		"{shape=[64,2048,32]} : f32[batch,seq,32]",
		"concat(", ": f32[batch,2*seq,32]",
		": f32[batch,32,2*seq]",
		"dot_general(%33, %34) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[batch,seq,seq]",
		"{shape=[131072,8]} : f32[batch*seq,8]",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	back, err := ir.Parse("mlp.gir", []byte(text))
	if err != nil || back.String() != text {
		t.Errorf("the printed graph does not read back: %v", err)
	}

	g, err = frontend.Build("cnn", func(b *frontend.Builder) {
		n, hgt := b.Dim("n", 1, 8), b.Dim("h", 4, 64)
		x := b.Input("x", ir.F32, n, 3, hgt, hgt)
		w := b.Param("w", ir.T(ir.F32, 8, 3, 3, 3), frontend.Zeros())
		bias := b.Param("bias", ir.T(ir.F32, 8), frontend.Zeros())
		y := frontend.Conv2d(x, w, bias, frontend.Conv2dOptions{Padding: [2]int{1, 1}}).Relu()
		y = frontend.MaxPool2d(y, [2]int{2, 2}, frontend.PoolOptions{})
		b.Output("y", y)
		tok := b.Input("tok", ir.I64, n, hgt).WithRange(0, 10)
		b.Output("e", frontend.Embedding(tok, b.Param("emb", ir.T(ir.F32, 10, 4), frontend.Zeros())))
	})
	if err != nil {
		t.Fatal(err)
	}
	text = g.String()
	for _, want := range []string{"conv2d(%x, %w) {dilation=[1,1], padding=[1,1], stride=[1,1]} : f32[n,8,h,h]",
		"max_pool2d(", ": f32[n,8,h/2,h/2]", "gather(%emb, %tok) : f32[n,h,4]"} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
}

// Static models are built exactly as before: no dims, no symbolic types.
func TestStaticModelsHaveNoDims(t *testing.T) {
	g, err := frontend.Build("s", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 2, 3)
		b.Output("y", x.Add(b.Input("c", ir.F32, 3)).Reshape(-1))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Dims) != 0 || strings.Contains(g.String(), "dims {") {
		t.Errorf("a static graph has dims:\n%s", g)
	}
	for _, v := range g.Values {
		if v.Type.Sym != nil {
			t.Errorf("%s has a symbolic type", g.Format(v))
		}
	}
}

func TestSymbolicErrors(t *testing.T) {
	tests := []struct {
		name  string
		model func(b *frontend.Builder)
		want  string
	}{
		{"bad range", func(b *frontend.Builder) { b.Dim("seq", 5, 2) }, "Dim seq: bad range [5, 2]: want 0 <= lo <= hi"},
		{"negative", func(b *frontend.Builder) { b.Dim("seq", -1, 2) }, "Dim seq: bad range [-1, 2]"},
		{"over 2^31", func(b *frontend.Builder) { b.Dim("seq", 1, 1<<31) }, "Dim seq: the bound 2147483648 is over 2^31-1"},
		{"twice", func(b *frontend.Builder) { b.Dim("seq", 1, 2); b.Dim("seq", 1, 2) }, "Dim: seq declared twice"},
		{"bad name", func(b *frontend.Builder) { b.Dim("a.b", 1, 2) }, `Dim: bad name "a.b"`},
		{"unequal", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, b.Dim("seq", 1, 8))
			y := b.Input("y", ir.F32, b.Dim("tok", 1, 8))
			b.Output("z", x.Add(y))
		}, "add: shapes cannot be broadcast together: x is f32[seq], y is f32[tok]: dim 0 is seq and tok, not provably equal"},
		{"not a multiple", func(b *frontend.Builder) {
			b.Output("z", b.Input("x", ir.F32, b.Dim("seq", 1, 8)).Reshape(2, -1))
		}, "reshape: cannot express f32[seq] reshaped to [2,4] over its sizes (seq): seq is not provably a multiple of the static dims of [2,4]"},
		{"handle and -1", func(b *frontend.Builder) {
			seq := b.Dim("seq", 1, 8)
			b.Output("z", b.Input("x", ir.F32, seq, 3).Reshape(seq, 2, -1))
		}, "reshape: shape [seq,2,-1] is invalid for x f32[seq,3]: its size 3*seq is not a multiple of 2*seq"},
		{"wrong count", func(b *frontend.Builder) {
			seq := b.Dim("seq", 1, 8)
			b.Output("z", b.Input("x", ir.F32, seq, 2).Reshape(seq, 3))
		}, "reshape: shape [seq,3] is invalid for x f32[seq,2]: 3*seq elements, not 2*seq"},
		{"expand a dim of another size", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, b.Dim("n", 1, 8), 3)
			b.Output("z", b.Input("y", ir.F32, 2, 3).Expand(x.Size(0), -1))
		}, "expand: cannot expand y f32[2,3] to [n,-1]: dim 0 has size 2"},
		{"expand a symbolic dim to another", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, b.Dim("n", 1, 8), 3)
			y := b.Input("y", ir.F32, b.Dim("m", 1, 8), 3)
			b.Output("z", y.Expand(x.Size(0), -1))
		}, "expand: cannot expand y f32[m,3] to [n,-1]: dim 0 has size m"},
		{"size of an expression", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, b.Dim("n", 1, 8), 3)
			b.Output("z", x.Reshape(-1).Expand(2, x.Reshape(-1).Size(0)))
		}, "size: dim 0 of input f32[3*n] is 3*n, an expression of dims, not one"},
		{"window", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, 1, 1, b.Dim("h", 1, 8), 4)
			b.Output("z", frontend.MaxPool2d(x, [2]int{2, 2}, frontend.PoolOptions{}))
		}, "max_pool2d: output size h/2 (input h, window 2, stride 2, padding 0, dilation 1) can be 0"},
	}
	for _, tc := range tests {
		_, err := frontend.Build("g", tc.model)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
}

// Size gives a static dim's size or a symbolic dim's handle, which Expand takes: a class token
// [1, 1, d] expanded to x.Size(0) follows x's batch (a ViT's torch.cat((cls, x), 1)).
func TestSizeExpand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model func(b *frontend.Builder)
		want  []string
	}{
		{"a class token over a symbolic batch", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, b.Dim("batch", 1, 8), 4, 16)
			cls := b.Param("cls", ir.T(ir.F32, 1, 1, 16), frontend.Zeros())
			if x.Size(1) != 4 || x.Size(-1) != 16 || x.Dim(0) != 8 {
				t.Errorf("Size(1), Size(-1), Dim(0) = %d, %d, %d; want 4, 16 and the bound 8", x.Size(1), x.Size(-1), x.Dim(0))
			}
			b.Output("y", frontend.Cat(1, cls.Expand(x.Size(0), -1, -1), x))
		}, []string{"broadcast_in_dim(%cls) {dims=[0,1,2], shape=[8,1,16]} : f32[batch,1,16]", "concat(%0, %x) {axis=1} : f32[batch,5,16]"}},
		{"a new leading dim", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, b.Dim("seq", 0, 9), 2)
			b.Output("y", b.Input("w", ir.F32, 2).Expand(x.Size(0), 2))
		}, []string{"broadcast_in_dim(%w) {dims=[1], shape=[9,2]} : f32[seq,2]"}},
		{"-1 keeps a symbolic dim, a handle its own", func(b *frontend.Builder) {
			seq := b.Dim("seq", 1, 9)
			x := b.Input("x", ir.F32, seq, 1)
			b.Output("y", x.Expand(-1, 3).Add(x.Expand(seq, 3)))
		}, []string{"broadcast_in_dim(%x) {dims=[0,1], shape=[9,3]} : f32[seq,3]"}},
		{"a view to the batch's size, torch's x.view(x.size(0), -1)", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, b.Dim("batch", 1, 8), 4, 16)
			b.Output("y", x.View(x.Size(0), -1))
		}, []string{"reshape(%x) {shape=[8,64]} : f32[batch,64]"}},
		{"heads split by handles and -1", func(b *frontend.Builder) {
			batch, seq := b.Dim("batch", 1, 4), b.Dim("seq", 1, 9)
			x := b.Input("x", ir.F32, batch, seq, 48)
			b.Output("y", x.Reshape(batch, seq, 12, -1).Reshape(-1, x.Size(1), 4))
		}, []string{"reshape(%x) {shape=[4,9,12,4]} : f32[batch,seq,12,4]", "{shape=[48,9,4]} : f32[12*batch,seq,4]"}},
		{"a static model", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, 2, 3)
			b.Output("y", b.Input("w", ir.F32, 1, 3).Expand(x.Size(0), -1))
		}, []string{"broadcast_in_dim(%w) {dims=[0,1], shape=[2,3]} : f32[2,3]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := frontend.Build("g", tc.model)
			if err != nil {
				t.Fatal(err)
			}
			text := g.String()
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("missing %q in\n%s", w, text)
				}
			}
		})
	}
}
