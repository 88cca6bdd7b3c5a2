package lm

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// A packed engine's decode program (a symbolic batch in [1, slots]) keeps its norms in the GEMVs
// that read them, as the static program of slots rows does (passes' normgemv at symbolic sizes,
// codegen/ptx's symgemvnorm.go): up to gemv.MaxPrologueRows slots (8: above
// gemv.MaxUnstagedRows with the rows staged in shared memory) its kernels are the static ones,
// name for name, on every test checkpoint and on GPT-2 small's config; above it, neither
// program takes a prologue.
func TestPackedDecodeNormsInGEMV(t *testing.T) {
	names := func(t *testing.T, g *ir.Graph) ([]string, int) {
		t.Helper()
		res, err := compiler.Compile(g, compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		prologues := 0
		for _, k := range res.Passes.Kernels.Kernels {
			ns = append(ns, k.Name)
			if k.Kind == passes.Contraction && slices.ContainsFunc(k.Body.Values, func(v *ir.Value) bool { return strings.HasPrefix(v.Op, "reduce_") }) {
				prologues++
			}
		}
		return ns, prologues
	}
	type prog struct {
		name  string
		cfg   Config
		slots int
		want  int // GEMVs with a norm prologue, -1: as many as the static program has, at least one; -2: as many
	}
	var progs []prog
	r := reference(t)
	for ci := range r.Cases {
		c := &r.Cases[ci]
		m := testModel(t, c)
		for _, slots := range []int{1, gemv.MaxUnstagedRows, gemv.MaxUnstagedRows + 1, gemv.MaxPrologueRows} {
			want := -1
			if slots > gemv.MaxUnstagedRows {
				want = -2 // LayerNorms only: Llama's RMSNorms keep their kernels
			}
			progs = append(progs, prog{c.Name, m.Config, slots, want})
		}
		progs = append(progs, prog{c.Name, m.Config, gemv.MaxPrologueRows + 1, 0})
	}
	if !testing.Short() {
		// Every ln_1 and ln_2 but the first layer's ln_1, whose rows are gathered embeddings
		// (above gemv.MaxUnstagedRows a gathering prologue spills); ln_f keeps its kernel (the LM
		// head's 1571 blocks reading 8 rows each cost more than its launch: passes' prologuesPay).
		progs = append(progs, prog{"gpt2-small", benchConfigs[0].c, gemv.MaxPrologueRows, 11 + 12})
	}
	for _, p := range progs {
		t.Run(fmt.Sprintf("%s/%d_slots", p.name, p.slots), func(t *testing.T) {
			gs, err := PackedDecodeGraph(p.cfg, p.slots)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ProgramGraph(p.cfg, "decode", p.slots, 1)
			if err != nil {
				t.Fatal(err)
			}
			sym, symPrologues := names(t, gs)
			static, prologues := names(t, g)
			if !slices.Equal(sym, static) {
				t.Errorf("packed decode's %d kernels %v, the static one's %d %v", len(sym), sym, len(static), static)

			}
			if symPrologues != prologues || p.want >= 0 && prologues != p.want || p.want == -1 && prologues == 0 {
				t.Errorf("%d GEMVs with a norm prologue, the static program %d, want %d", symPrologues, prologues, p.want)
			}
		})
	}
}

// A packed decode program built with --backend nvvm computes its norm GEMVs at symbolic sizes
// with codegen/nvvm's own entries (symgemvnorm.go), on the tiny GPT-2 and Llama checkpoints at
// the most slots every norm takes a prologue at, a GEMV writing its prologue's rows (the
// embeddings) too (gemvnormout.go).
func TestPackedDecodeNormsInGEMVNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	r := reference(t)
	for ci := range r.Cases {
		c := &r.Cases[ci]
		if c.Name != "gpt2" && c.Name != "llama" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			g, err := PackedDecodeGraph(testModel(t, c).Config, gemv.MaxUnstagedRows) // every norm takes a prologue up to it
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{Producer: backend.NVVM{Producer: &nvvm.Producer{LibPath: lib.Path}}})
			if err != nil {
				t.Fatal(err)
			}
			prologue := map[string]bool{}
			for _, k := range res.Passes.Kernels.Kernels {
				if k.Kind == passes.Contraction && slices.ContainsFunc(k.Body.Values, func(v *ir.Value) bool { return strings.HasPrefix(v.Op, "reduce_") }) {
					prologue[k.Name] = true
				}
			}
			own := 0
			for _, k := range res.Artifact.Plan.Kernels {
				if !prologue[k.Name] {
					continue
				}
				if k.Producer == "ptx" {
					t.Errorf("%s: codegen/ptx's entry (%v)", k.Name, k.Notes)
				}
				own++
			}
			if own == 0 {
				t.Errorf("no norm GEMV of codegen/nvvm's own among %d", len(prologue))
			}
		})
	}
}
