package compiler_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

// decodeStep is a decoding step over a symbolic batch in [1, 5]: nn.CachedAttention of one query
// row per head (8 heads over 2 KV heads of 16) writing its K and V rows into caches of 256
// positions, the caches outputs (their inputs' memory) as a generation program's are.
func decodeStep(b *frontend.Builder) {
	batch := b.Dim("batch", 1, 5)
	q := b.Input("q", ir.F32, batch, 8, 1, 16)
	k := b.Input("k", ir.F32, batch, 2, 1, 16)
	v := b.Input("v", ir.F32, batch, 2, 1, 16)
	kc := b.Input("kc", ir.F32, batch, 2, 256, 16)
	vc := b.Input("vc", ir.F32, batch, 2, 256, 16)
	pos := b.Input("pos", ir.I64, batch)
	o, kn, vn := nn.CachedAttention(q, k, v, kc, vc, pos)
	b.Output("o", o)
	b.Output("kc_new", kn)
	b.Output("vc_new", vn)
}

// A decoding step over a symbolic batch plans split-KV decoding: one attention kernel over the
// batch along grid.z (the plan's work: elements the batch, tile 1, axis 2; its size argument the
// batch), appending the step's rows to the caches, split as at batch 1, built once and run at 1,
// primes and the bound against the reference.
func TestSymbolicDecodePlan(t *testing.T) {
	g, err := frontend.Build("decode", decodeStep)
	if err != nil {
		t.Fatal(err)
	}
	res, att := compileAttention(t, g)
	if !strings.HasSuffix(att.Name, "_attention_append") || len(res.Artifact.Plan.Kernels) != 2 {
		t.Errorf("kernels %v, want the update kernels merged into the attention (appendkv) and the heads' copy", res.Artifact.Plan.Kernels)
	}
	if w := att.Work; w == nil || w.Elements != "batch" || w.Tile != 1 || w.Axis != 2 || att.Grid[2] != 5 || att.Grid[0] < 2 {
		t.Fatalf("%s: grid %v, work %+v, want split-KV over the batch along z", att.Name, att.Grid, att.Work)
	}
	if !strings.Contains(string(res.Artifact.PTX), "split-KV attention, over batch batch,") {
		t.Fatal("the attention kernel is not the split-KV template")
	}
	checkRows(t, g)
}

// With --backend nvvm the symbolic decode attention is the NVVM producer's own split-KV entry
// over the batch (codegen/nvvm's symattn_decode.go), the same plan, run as the ptx build is.
func TestSymbolicDecodeNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	g, err := frontend.Build("decode", decodeStep)
	if err != nil {
		t.Fatal(err)
	}
	nv, err := backend.New("nvvm", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{Producer: nv})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range res.Artifact.Plan.Kernels {
		if strings.Contains(k.Name, "attention") && (k.Producer == "ptx" || k.Work == nil || k.Work.Axis != 2) {
			t.Errorf("%s: producer %q, work %+v, want the NVVM producer's split-KV entry over the batch", k.Name, k.Producer, k.Work)
		}
	}
	checkNVVM(t, g, lib.Path)
}
