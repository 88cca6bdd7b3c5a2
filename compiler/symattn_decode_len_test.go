package compiler_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// cachedStep is a decoding step over a cache of a symbolic length: attention of one query row
// per head (4 heads of 16) over K and V [b, 4, kv, 16], kv in [1, maxKV] (the keys a
// decoder's past_key_values and its step's row make). batch is 0 for a static batch of 2.
// (A cache grown by concat along kv: grownStep, symconcat_test.go.)
func cachedStep(dt ir.DType, batch, maxKV int) func(b *frontend.Builder) {
	return func(b *frontend.Builder) {
		if batch == 0 {
			batch = 2
		} else {
			batch = b.Dim("batch", 1, batch)
		}
		kv := b.Dim("kv", 1, maxKV)
		q := b.Input("q", dt, batch, 4, 1, 16)
		k, v := b.Input("k", dt, batch, 4, kv, 16), b.Input("v", dt, batch, 4, kv, 16)
		b.Output("o", frontend.ScaledDotProductAttention(q, k, v, false))
	}
}

// A decoding step over a symbolic cache length plans split-KV decoding: one attention kernel
// whose grid's x is the run's chunks of kv keys (the plan's work: elements kv, tile the
// chunk, axis 0) or, over a symbolic batch too, whose z is the batch; built once and run at kv
// 1, 13, 31 and the bound against the reference.
func TestSymbolicDecodeLengthPlan(t *testing.T) {
	for _, tc := range []struct {
		dt    ir.DType
		batch int
	}{{ir.F32, 0}, {ir.F16, 3}} {
		t.Run(fmt.Sprintf("%s_batch%d", tc.dt, tc.batch), func(t *testing.T) {
			g, err := frontend.Build("decode", cachedStep(tc.dt, tc.batch, 200))
			if err != nil {
				t.Fatal(err)
			}
			res, att := compileAttention(t, g)
			over := "over cache length kv,"
			want := artifact.Work{Elements: "kv", Vector: 1, MaxBlocks: att.Grid[0], Tile: att.Work.Tile, Axis: 0}
			if tc.batch > 0 {
				over = "over batch batch and cache length kv,"
				want = artifact.Work{Elements: "batch", Vector: 1, MaxBlocks: 65535, Tile: 1, Axis: 2}
			}
			if *att.Work != want || att.Grid[0] < 2 || tc.batch == 0 && att.Work.Tile*att.Grid[0] < 200 {
				t.Fatalf("%s: grid %v, work %+v, want split-KV with work %+v", att.Name, att.Grid, att.Work, want)
			}
			if !strings.Contains(string(res.Artifact.PTX), "split-KV attention, "+over) {
				t.Fatalf("the attention kernel is not the split-KV template %s", over)
			}
			checkRows(t, g)
		})
	}
}

// compileAttention builds g and returns the result and its (last) attention kernel.
func compileAttention(t *testing.T, g *ir.Graph) (*compiler.Result, *artifact.Kernel) {
	t.Helper()
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var att *artifact.Kernel
	for i, k := range res.Artifact.Plan.Kernels {
		if strings.Contains(k.Name, "attention") {
			att = &res.Artifact.Plan.Kernels[i]
		}
	}
	if att == nil {
		t.Fatalf("no attention kernel in %v", res.Artifact.Plan.Kernels)
	}
	return res, att
}
