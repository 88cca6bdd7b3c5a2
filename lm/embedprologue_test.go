package lm

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// TestDecodeEmbeddingIndexCheck: a decode step whose embedding gather runs in the first GEMV's
// norm prologue (passes' normgemv, gemv.RowOutput) still fails the run on a token outside the
// vocabulary with the gather, its source line, the element and the index, from either producer
// (the NVVM build's own entry writes the rows too: codegen/nvvm's gemvnormout.go); the tokens at
// 0 and vocab−1 run.
func TestDecodeEmbeddingIndexCheck(t *testing.T) {
	const vocab = 64
	for _, c := range []Config{
		{Arch: "gpt2", Vocab: vocab, Hidden: 128, Intermediate: 512, Layers: 1, Heads: 2, MaxSeq: 16, NormEps: 1e-5},
		{Arch: "llama", Vocab: vocab, Hidden: 512, Intermediate: 1024, Layers: 1, Heads: 8, KVHeads: 4, MaxSeq: 16, NormEps: 1e-5, RopeTheta: 10000},
	} {
		for _, name := range []string{"ptx", "nvvm"} {
			t.Run(c.Arch+"/"+name, func(t *testing.T) {
				if name == "nvvm" {
					libnvvm.Require(t)
				}
				producer, err := backend.New(name, "")
				if err != nil {
					t.Fatal(err)
				}
				g, err := ProgramGraph(c, "decode", 1, 1)
				if err != nil {
					t.Fatal(err)
				}
				res, err := compiler.Compile(g, compiler.Options{Producer: producer})
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range res.Passes.Kernels.Kernels {
					if slices.ContainsFunc(k.Reads, func(b *passes.Buffer) bool { return b.Name == "tokens" }) && k.Kind != passes.Contraction {
						t.Fatalf("%s, a %s kernel, reads the tokens: want the first GEMV's prologue", k.Name, k.Kind)
					}
				}
				prog, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
				if err != nil {
					t.Fatal(err)
				}
				defer prog.Close()
				params := map[string]*tensor.Tensor{}
				for _, p := range g.Params() {
					params[p.Name] = tensor.RandomInput(p, 1)
				}
				if err := prog.SetParams(params); err != nil {
					t.Fatal(err)
				}
				for _, tok := range []int{0, vocab - 1, vocab, -1} {
					in := map[string]*tensor.Tensor{}
					for _, v := range g.Inputs() {
						in[v.Name] = tensor.RandomInput(v, 1)
					}
					in["tokens"] = intTensor([]int{tok}, 1, 1)
					in["pos"] = intTensor([]int{3}, 1)
					_, err := prog.Run(in)
					if tok >= 0 && tok < vocab {
						if err != nil {
							t.Fatalf("token %d: %v", tok, err)
						}
						continue
					}
					if err == nil {
						t.Fatalf("token %d ran, want an index error", tok)
					}
					for _, want := range []string{"gather(", ".go:", "index " + strconv.Itoa(tok) + " (element 0 of tokens", "out of range [0, 64)"} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("token %d: %v\nwant %q", tok, err, want)
						}
					}
				}
			})
		}
	}
}
