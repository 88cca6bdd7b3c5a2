package passes_test

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// Under autocast every example's contractions run in bf16 and f16, its kernels compute bit for
// bit what the autocast graph computes, and no per-run kernel casts a weight: the casts of
// parameters are bind-time kernels (the cost report counts per-run kernels only).
func TestAutocastExamples(t *testing.T) {
	for _, ex := range exampleModels {
		for _, dt := range []ir.DType{ir.BF16, ir.F16} {
			t.Run(ex.Name+"/"+dt.String(), func(t *testing.T) {
				g, err := frontend.Build(ex.Name, ex.Model)
				if err != nil {
					t.Fatal(err)
				}
				res, err := passes.Run(g, passes.Options{VerifyEach: true, AMP: dt})
				if err != nil {
					t.Fatal(err)
				}
				if err := passes.CheckPlan(res.Kernels, res.Plan); err != nil {
					t.Fatal(err)
				}
				ag := passes.AutocastGraph(g, dt)
				checkEquivalent(t, ag, res, 1)
				for _, v := range res.Graph.Values {
					if (v.Op == "dot_general" || v.Op == "conv2d") && v.Type.DType == ir.F32 {
						t.Errorf("%s %s still computes in f32 under autocast %s", v.Op, v.Type, dt)
					}
				}
				hoisted := 0
				for _, k := range res.Kernels.Kernels {
					bodies := []*ir.Graph{k.Body}
					for _, s := range k.Stages {
						bodies = append(bodies, s.Body)
					}
					for _, b := range bodies {
						for _, v := range b.Values {
							// A body reads buffers through its inputs: a weight is a parameter buffer.
							if v.Op != "cast" || !isParam(res.Kernels, v.Args[0]) {
								continue
							}
							if !k.BindTime {
								t.Errorf("per-run kernel %s casts weight %s", k.Name, v.Args[0].Name)
							} else {
								hoisted++
							}
						}
					}
				}
				if weightCasts(ag) > 0 && hoisted == 0 {
					t.Errorf("the graph casts %d weights, no bind-time kernel does", weightCasts(ag))
				}
				// The source's outputs keep their dtypes: autocast's outputs are f32.
				for i, o := range ag.Outputs {
					if o.Value.Type.DType != g.Outputs[i].Value.Type.DType {
						t.Errorf("output %s is %s under autocast, %s without", o.Name, o.Value.Type, g.Outputs[i].Value.Type)
					}
				}
			})
		}
	}
}

// The kernel graph and cost report of resnet under --amp bf16 are pinned in
// testdata/autocast/resnet_bf16.txtar (go test -update rewrites it): weight casts and BatchNorm's
// scale as bind-time kernels, the input's cast and the bf16 convolutions per run.
func TestAutocastGolden(t *testing.T) {
	for _, ex := range exampleModels {
		if ex.Name != "resnet" {
			continue
		}
		g, err := frontend.Build(ex.Name, ex.Model)
		if err != nil {
			t.Fatal(err)
		}
		res, err := passes.Run(g, passes.Options{AMP: ir.BF16})
		if err != nil {
			t.Fatal(err)
		}
		golden.CheckTxtar(t, filepath.Join("testdata", "autocast", "resnet_bf16.txtar"), "resnet compiled with --amp bf16: the passes' kernel graph and cost report.\n", []txtar.File{
			{Name: "kernels.txt", Data: []byte(res.Kernels.String())},
			{Name: "stats.json", Data: res.Stats.JSON()},
		})
		return
	}
	t.Fatal("no example named resnet")
}

func isParam(kg *passes.KernelGraph, v *ir.Value) bool {
	if v.Op != ir.OpInput && v.Op != ir.OpParam {
		return false
	}
	b := kg.Buffer(v.Name)
	return b != nil && b.Kind == passes.ParamBuffer
}

func weightCasts(g *ir.Graph) int {
	n := 0
	for _, v := range g.Values {
		if v.Op == "cast" && v.Args[0].Op == ir.OpParam {
			n++
		}
	}
	return n
}

// The rewrite itself, on small graphs: what changes and what stays.
func TestAutocast(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // lines the rewritten graph contains, in order
		same      bool     // the graph comes back unchanged (the same graph)
	}{
		{name: "no contraction", same: true, src: `graph g {
  input %x : f32[2,3]
  param %w : f32[3] {init="ones"}
  %0 = broadcast_in_dim(%w) {dims=[1], shape=[2,3]} : f32[2,3]
  %1 = mul(%x, %0) : f32[2,3]
  %2 = reduce_sum(%1) {axes=[1]} : f32[2]
  output y = %2
}`},
		{name: "integer contraction and inputs", same: true, src: `graph g {
  input %x : i32[2,3]
  input %w : i32[4,3]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : i32[2,4]
  output y = %0
}`},
		{name: "matmul", src: `graph g {
  input %x : f32[2,3]
  param %w : f32[4,3] {init="ones"}
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[2,4]
  %1 = dot_general(%0, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[2,3]
  %2 = tanh(%1) : f32[2,3]
  output y = %2
  output z = %0
}`, want: []string{
			"= cast(%x) {to=bf16} : bf16[2,3]",
			"= cast(%w) {to=bf16} : bf16[4,3]",
			"= dot_general(", ") {lhs_contract=[1], rhs_contract=[1]} : bf16[2,4]",
			"{to=f32} : f32[2,4]",
			"{to=bf16} : bf16[2,4]",
			"rhs_contract=[0]} : bf16[2,3]",
			"{to=f32} : f32[2,3]",
			"= tanh(", ": f32[2,3]",
		}},
		{name: "integer input gathered into a matmul", src: `graph g {
  input %ids : i64[2]
  param %emb : f32[5,3] {init="ones"}
  param %w : f32[4,3] {init="ones"}
  %0 = gather(%emb, %ids) : f32[2,3]
  %1 = dot_general(%0, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[2,4]
  output y = %1
}`, want: []string{"input %ids : i64[2]", "gather(%emb, %ids) : f32[2,3]", "{to=bf16} : bf16[2,3]", "cast(%w) {to=bf16}", ": bf16[2,4]", "{to=f32} : f32[2,4]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse(tc.name+".gir", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			before := g.String()
			ag := passes.AutocastGraph(g, ir.BF16)
			if g.String() != before {
				t.Fatalf("AutocastGraph changed its argument")
			}
			if tc.same != (ag == g) {
				t.Fatalf("AutocastGraph returned the same graph: %v, want %v:\n%s", ag == g, tc.same, ag)
			}
			got := ag.String()
			rest := got
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("missing %q (in order) in\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			if again := passes.AutocastGraph(ag, ir.BF16); again != ag {
				t.Errorf("autocast twice changes the graph:\n%s", again)
			}
			if _, err := passes.Run(g, passes.Options{AMP: ir.BF16, VerifyEach: true}); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestParseAMP(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ir.DType
		err  string
	}{
		{"", ir.Invalid, ""},
		{"bf16", ir.BF16, ""},
		{"f16", ir.F16, ""},
		{"fp16", ir.Invalid, `unknown AMP dtype "fp16" (want bf16 or f16)`},
		{"f32", ir.Invalid, `unknown AMP dtype "f32"`},
	} {
		got, err := passes.ParseAMP(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseAMP(%q): error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseAMP(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	g, err := ir.Parse("g.gir", []byte("graph g {\n  input %x : f32[2]\n  output y = %x\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := passes.Run(g, passes.Options{AMP: ir.F32}); err == nil || !strings.Contains(err.Error(), "want bf16 or f16") {
		t.Errorf("Run with AMP f32: %v, want an error", err)
	}
}
