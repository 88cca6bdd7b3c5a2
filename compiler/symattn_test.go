package compiler_test

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/ir"
)

// attnModel is self-attention over q, k, v inputs [batch, seq, h·e] (a static batch of 2 when
// batch is 0), heads split with reshape and transpose, merged back into a linear layer; with
// mask, an additive mask input [batch, 1, seq, seq] is added to the scores.
func attnModel(b *frontend.Builder, dt ir.DType, batch, seq, h, e int, mask bool) {
	if batch == 0 {
		batch = 2
	}
	var in []*frontend.Tensor
	for _, n := range []string{"q", "k", "v"} {
		x := b.Input(n, dt, batch, seq, h*e)
		in = append(in, x.Reshape(batch, seq, h, e).Transpose(1, 2))
	}
	var o *frontend.Tensor
	if mask {
		m := b.Input("mask", dt, batch, 1, seq, seq)
		s := in[0].Matmul(in[1].Transpose(2, 3)).MulScalar(1 / math.Sqrt(float64(e)))
		o = s.Add(m).Softmax(-1).Matmul(in[2])
	} else {
		o = frontend.ScaledDotProductAttention(in[0], in[1], in[2], false)
	}
	w := b.Param("w", ir.T(dt, 8, h*e), frontend.Uniform(-1, 1))
	b.Output("y", frontend.Linear(o.Transpose(1, 2).Reshape(batch, seq, h*e), w, nil))
}

// Attention over a symbolic sequence and batch, its operands views of buffers whose symbolic
// dims do not lead, built once and run at the bounds, 1 and primes against the reference
// (checkRows). The attention kernel and the product over the merged heads read through views
// at the run's sizes.
func TestSymbolicAttention(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(b *frontend.Builder)
	}{
		{"static batch, seq in [1,37], 2 heads", func(b *frontend.Builder) { attnModel(b, ir.F32, 0, b.Dim("seq", 1, 37), 2, 8, false) }},
		{"batch in [1,3], seq in [2,19], 3 heads of 5", func(b *frontend.Builder) {
			attnModel(b, ir.F32, b.Dim("batch", 1, 3), b.Dim("seq", 2, 19), 3, 5, false)
		}},
		{"additive mask whose sizes follow", func(b *frontend.Builder) { attnModel(b, ir.F32, b.Dim("batch", 1, 2), b.Dim("seq", 1, 11), 2, 4, true) }},
		{"f16 on tensor cores, batch in [1,2], seq in [1,40]", func(b *frontend.Builder) {
			attnModel(b, ir.F16, b.Dim("batch", 1, 2), b.Dim("seq", 1, 40), 2, 16, false)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := frontend.Build("m", tc.build)
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			attn := false
			for _, k := range res.Artifact.Plan.Kernels {
				attn = attn || strings.Contains(k.Name, "attention") && k.Work != nil
			}
			if !attn {
				t.Fatalf("no symbolic attention kernel in %v", res.Artifact.Plan.Kernels)
			}
			if tc := strings.Contains(tc.name, "tensor cores"); tc != strings.Contains(string(res.Artifact.PTX), "attention on tensor cores") {
				t.Fatalf("attention on tensor cores: %v, want %v", !tc, tc)
			}
			checkRows(t, g)
		})
	}
}

// The plan of a strided symbolic model: each kernel's grid at the bound, its work and its size
// arguments (the dims of the attention and view-reading GEMM kernels, then their size) are
// golden (testdata/symattn_plan.txtar; go test -update rewrites it).
func TestSymbolicAttentionPlan(t *testing.T) {
	var sections []txtar.File
	for _, tc := range []struct {
		name string
		dt   ir.DType
	}{{"f32", ir.F32}, {"f16", ir.F16}} {
		g, err := frontend.Build("m", func(b *frontend.Builder) {
			attnModel(b, tc.dt, b.Dim("batch", 1, 3), b.Dim("seq", 1, 40), 2, 16, false)
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := compiler.Compile(g, compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for _, k := range res.Artifact.Plan.Kernels {
			fmt.Fprintf(&sb, "%s grid %v block %v", k.Name, k.Grid, k.Block)
			if w := k.Work; w != nil {
				fmt.Fprintf(&sb, " work{elements %s vector %d max_blocks %d tile %d axis %d}", w.Elements, w.Vector, w.MaxBlocks, w.Tile, w.Axis)
			}
			for _, a := range k.Args {
				if a.Kind == artifact.ArgSize {
					fmt.Fprintf(&sb, " size(%s)", a.Expr)
				}
			}
			sb.WriteByte('\n')
		}
		sections = append(sections, txtar.File{Name: tc.name, Data: []byte(sb.String())})
	}
	golden.CheckTxtar(t, filepath.Join("testdata", "symattn_plan.txtar"), "attnModel over batch in [1,3] and seq in [1,40], 2 heads of 16: each kernel's grid at the bound, work and size arguments\n", sections)
}
