package compiler_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/randgraph"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// approximate are the ops codegen/nvvm computes with libdevice and codegen/ptx with its own
// sequences: both within tolerance, not bit for bit.
var approximate = map[string]bool{"exp": true, "log": true, "tanh": true, "sigmoid": true, "erf": true,
	"sin": true, "cos": true, "rsqrt": true, "pow": true}

// Every row model (folds and persistent kernels too) built once with --backend nvvm runs on the memchecked simulator at the dims'
// bounds, 1 and primes, smaller sizes first, equal to the reference interpreter (checkRows), with
// codegen/ptx's parameters and work for each symbolic kernel, and, where the arithmetic is the
// same, equal to codegen/ptx's build bit for bit. Every entry is libNVVM's but where a model
// says it borrows (the kernels reading or writing layers of stacked buffers, in row loops and
// persistent stages, the folds over scattered axes and through views, column reductions through
// views, concats along a symbolic dim, conv weight gradients folding the batch and FFMA products
// contracting a symbolic dim are codegen/nvvm's own: symlayer.go, symfold_scatter.go,
// symfold_view.go, symfold_reduce_view.go, symconcat.go, symconv.go, symcontract.go).
func TestSymbolicNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	type model struct {
		name    string
		graph   func() (*ir.Graph, error)
		borrows bool // a kernel takes codegen/ptx's entry (nvvm.Lacks)
	}
	var models []model
	for _, tc := range rowModels {
		models = append(models, model{name: tc.name, graph: func() (*ir.Graph, error) { return frontend.Build("m", tc.build) }})
	}
	for _, tc := range symbolicGraphs {
		models = append(models, model{name: "flat " + tc.name, graph: func() (*ir.Graph, error) { return ir.Parse("s.gir", []byte(tc.gir)) }})
	}
	// The folds (over scattered axes too: symfold_scatter.go), the reductions over inner axes of
	// the rows (the column template: symcolumn.go) and the persistent kernels with symbolic stages
	// are codegen/nvvm's own.
	for _, tc := range slices.Concat(foldGraphs, scatterFolds) {
		models = append(models, model{name: "fold " + tc.name, graph: func() (*ir.Graph, error) { return ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n")) }})
	}
	for _, tc := range innerReductions { // symrows_inner_test.go
		models = append(models, model{name: "inner " + tc.name, graph: func() (*ir.Graph, error) { return ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n")) }})
	}
	for _, tc := range splitFolds { // split over the run's count: symsplit.go
		models = append(models, model{name: "split fold " + tc.name, graph: func() (*ir.Graph, error) { return ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n")) }})
	}
	for _, tc := range foldViewGraphs { // symfold_view.go
		models = append(models, model{name: "fold through views " + tc.name, graph: func() (*ir.Graph, error) { return ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n")) }})
	}
	// Reductions through views are codegen/nvvm's own too, on every template
	// (symfold_reduce_view.go).
	for _, tc := range slices.Concat(foldReduceViewGraphs, rowReduceViewGraphs) {
		models = append(models, model{name: "reduction through views " + tc.name, graph: func() (*ir.Graph, error) { return ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n")) }})
	}
	// A concat along a symbolic dim (fused with computation too), a conv's weight gradient
	// folding its symbolic batch and batched products contracting a symbolic dim or with a
	// symbolic N, on FFMA or tensor cores, are codegen/nvvm's own too (symconcat*.go, symconv.go,
	// symcontract*.go).
	models = append(models, model{name: "concat growing a cache", graph: func() (*ir.Graph, error) {
		return ir.Parse("c.gir", []byte("graph c {\n  dims { past in [0,23] }\n  input %pk : f16[2,4,past,8]\n  input %k : f16[2,1,4,8]\n"+
			"  %0 = transpose(%k) {perm=[0,2,1,3]} : f16[2,4,1,8]\n  %1 = concat(%pk, %0) {axis=2} : f16[2,4,past+1,8]\n  output y = %1\n}\n"))
	}})
	models = append(models, model{name: "concat fused with a cast and tanh", graph: func() (*ir.Graph, error) { // symconcat_fused.go
		return ir.Parse("c.gir", []byte("graph c {\n  dims { past in [0,23] }\n  input %a : f16[2,4,past,8]\n  input %b : f32[2,4,1,8]\n"+
			"  %0 = cast(%b) {to=f16} : f16[2,4,1,8]\n  %1 = concat(%a, %0) {axis=2} : f16[2,4,past+1,8]\n  %2 = tanh(%1) : f16[2,4,past+1,8]\n  output y = %2\n}\n"))
	}})
	for _, tc := range convFolds {
		models = append(models, model{name: "conv weight gradient " + tc.name, graph: func() (*ir.Graph, error) { return ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n")) }})
	}
	for _, tc := range contractGraphs {
		// One contracting seq, one with seq its N (symcontract_rhs.go), and each on tensor cores
		// (symcontract_mma.go).
		switch tc.name {
		case contractGraphs[1].name, "a self-attention's q·kᵀ by hand, symbolic batch (FFMA)", "scores·V by hand, static batch (tensor cores)",
			"a self-attention's q·kᵀ by hand, a mask added, symbolic batch (f16 tensor cores)":
			models = append(models, model{name: "contraction " + tc.name, graph: func() (*ir.Graph, error) {
				return ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n"))
			}})
		}
	}
	for _, tc := range persistModels {
		models = append(models, model{name: "persistent " + tc.name, graph: func() (*ir.Graph, error) { return frontend.Build("m", tc.build) }})
	}
	// The quantized tensor-core GEMM over a symbolic batch: codegen/nvvm's own (qmma.go), with
	// codegen/ptx's size parameter and work (weights drawn by initializers: zero params would
	// make every result 0).
	models = append(models, model{name: "int4 weight on tensor cores", graph: func() (*ir.Graph, error) {
		return ir.Parse("q.gir", []byte(`graph q {
  dims { batch in [9,24] }
  input %x : f16[batch,128]
  param %q : u8[40,64] {init="uniform", low=0, high=255.9}
  param %s : f16[40,4] {init="uniform", low=-0.02, high=0.02}
  param %z : u8[40,4] {init="uniform", low=0, high=15.9}
  %w = dequantize(%q, %s, %z) {axis=1, bits=4, group=32} : f16[40,128]
  %y = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f16[batch,40]
  output y = %y
}`))
	}})
	// Attention's backward at symbolic sizes, on CUDA and tensor cores: codegen/nvvm's own
	// (symattn_bwd.go).
	for _, tc := range symAttnGrads {
		models = append(models, model{name: "attention backward " + tc.name, graph: func() (*ir.Graph, error) { return ir.Parse("a.gir", []byte(tc.gir)) }})
	}
	// Split-KV decoding over a symbolic cache length (and a symbolic batch): codegen/nvvm's own
	// (symattn_decode_len.go).
	for _, tc := range []struct {
		dt    ir.DType
		batch int
	}{{ir.F32, 0}, {ir.F16, 3}} {
		models = append(models, model{name: fmt.Sprintf("split-KV decoding over a symbolic cache length %s batch%d", tc.dt, tc.batch),
			graph: func() (*ir.Graph, error) { return frontend.Build("decode", cachedStep(tc.dt, tc.batch, 100)) }})
	}
	// A norm GEMV over a symbolic batch (a packed decode step's: the norm in the GEMV's
	// prologue): codegen/nvvm's own (symgemvnorm.go).
	for _, dt := range []ir.DType{ir.F32, ir.F16} {
		models = append(models, model{name: "norm GEMV over a symbolic batch " + dt.String(), graph: func() (*ir.Graph, error) {
			return frontend.Build("m", func(b *frontend.Builder) {
				x := b.Input("x", dt, b.Dim("batch", 0, 3), 256)
				w, bias := b.Param("g", ir.T(dt, 256), frontend.Uniform(0.5, 1.5)), b.Param("b", ir.T(dt, 256), frontend.Uniform(-1, 1))
				w1 := b.Param("w1", ir.T(dt, 40, 256), frontend.Uniform(-1, 1))
				b.Output("y", frontend.Linear(frontend.LayerNorm(x, []int{256}, w, bias, 1e-5), w1, nil))
			})
		}})
	}
	for _, tc := range models {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.graph()
			if err != nil {
				t.Fatal(err)
			}
			borrowed := false
			for _, k := range checkNVVM(t, g, lib.Path) {
				if k.Producer == "ptx" {
					borrowed = true
					if !tc.borrows {
						t.Errorf("kernel %s: codegen/ptx's entry (%v)", k.Name, k.Notes)
					}
				}
			}
			if tc.borrows && !borrowed {
				t.Error("no kernel takes codegen/ptx's entry")
			}
		})
	}
}

// checkNVVM builds g with the nvvm producer (libNVVM at lib) and with codegen/ptx, checks that
// their plans' symbolic kernels take the same size arguments with the same work (but GEMVs,
// which codegen/nvvm runs in the direct template over the result's elements), and runs the nvvm
// build as checkRows does, each run also through the ptx build on the same inputs: equal bit for
// bit unless g has an approximate op or a GEMV (whose sums codegen/nvvm computes exactly). It
// returns the nvvm build's kernels.
func checkNVVM(t *testing.T, g *ir.Graph, lib string) []artifact.Kernel {
	t.Helper()
	nv, err := backend.New("nvvm", lib)
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nres, err := compiler.Compile(g, compiler.Options{Producer: nv})
	if err != nil {
		t.Fatal(err)
	}
	same := !slices.ContainsFunc(g.Values, func(v *ir.Value) bool { return approximate[v.Op] })
	pk, nk := res.Artifact.Plan.Kernels, nres.Artifact.Plan.Kernels
	if len(pk) != len(nk) {
		t.Fatalf("%d kernels with nvvm, %d with ptx", len(nk), len(pk))
	}
	for i := range pk {
		p, n := pk[i], nk[i]
		if (p.Work == nil) != (n.Work == nil) {
			t.Fatalf("kernel %s: work %v with nvvm, %v with ptx", n.Name, n.Work, p.Work)
		}
		if p.Work == nil || *p.Work == *n.Work {
			if !slices.Equal(p.Args, n.Args) || p.Grid != n.Grid || p.Block != n.Block {
				t.Errorf("kernel %s: nvvm's launch %v %v %+v, ptx's %v %v %+v", n.Name, n.Grid, n.Block, n.Args, p.Grid, p.Block, p.Args)
			}
			continue
		}
		// codegen/ptx's GEMV: a grid over columns (grid.z one block); codegen/nvvm's direct
		// template: a loop over the result's elements.
		if p.Work.Axis != 2 || p.Work.MaxBlocks != 1 || n.Work.Tile != 0 {
			t.Errorf("kernel %s: nvvm's work %+v, ptx's %+v", n.Name, *n.Work, *p.Work)
		}
		same = false
	}
	for _, k := range nk {
		if k.Work != nil && k.Producer == "ptx" && !slices.ContainsFunc(k.Notes, func(n string) bool { return strings.Contains(n, "codegen/ptx's") }) {
			t.Errorf("kernel %s: codegen/ptx's entry without a note: %v", k.Name, k.Notes)
		}
	}
	prog, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	setParams := true
	checkRowsWith(t, g, compiler.Options{Producer: nv}, func(env map[string]int64, inputs, params, got map[string]*tensor.Tensor) {
		if setParams {
			if err := prog.SetParams(params); err != nil {
				t.Fatal(err)
			}
			setParams = false
		}
		want, err := prog.Run(inputs)
		if err != nil {
			t.Fatalf("sizes %v: the ptx build: %v", env, err)
		}
		if !same {
			return
		}
		for name, w := range want.Outputs {
			o := got[name]
			for i := range w.Len() {
				if a, b := o.At(i), w.At(i); math.Float64bits(a) != math.Float64bits(b) && !(math.IsNaN(a) && math.IsNaN(b)) {
					t.Fatalf("sizes %v: output %s[%d] = %v with nvvm, %v with ptx", env, name, i, a, b)
				}
			}
		}
	})
	return nk
}

// --backend auto measures both producers' symbolic kernels on the simulator at the bound (its
// size argument: the bound's rows) and builds a plan that runs at every size.
func TestSymbolicAuto(t *testing.T) {
	lib := libnvvm.Require(t)
	for _, src := range []string{symbolicGraphs[1].gir, symbolicGraphs[3].gir} {
		g, err := ir.Parse("s.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		a := &backend.Auto{NVVM: &nvvm.Producer{LibPath: lib.Path}}
		checkRowsWith(t, g, compiler.Options{Producer: a}, nil)
		for _, c := range a.Choices {
			if c.PTX == nil || c.NVVM == nil || !c.PTX.Simulated || !c.NVVM.Simulated {
				t.Errorf("kernel %s not measured on the simulator: %+v", c.Kernel, c)
			}
		}
	}
}

// TestSymbolicRandomGraphs' graphs in the class built with --backend nvvm: each runs at every
// size as the ptx build does (checkNVVM), or is refused by both producers alike.
func TestSymbolicRandomGraphsNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	nv, err := backend.New("nvvm", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	n := 36
	if testing.Short() {
		n = 8
	}
	rng := rand.New(rand.NewPCG(27, 3))
	for seed := range n {
		g, refused := randgraph.Symbolic(rng)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			_, perr := compiler.Compile(g, compiler.Options{})
			_, nerr := compiler.Compile(g, compiler.Options{Producer: nv})
			switch {
			case refused != "" || perr != nil && gemmView.MatchString(perr.Error()):
				if nerr == nil || perr == nil || nerr.Error() != perr.Error() {
					t.Fatalf("nvvm: %v; ptx: %v (%q)", nerr, perr, refused)
				}
			default:
				checkNVVM(t, g, lib.Path)
			}
		})
	}
}

// Strided symbolic kernels built with --backend nvvm (copies moving the symbolic dims, GEMMs
// reading their left operand through views at the run's sizes, attention on CUDA and tensor
// cores: codegen/nvvm's symstride*.go, symattn.go and symattn_mma.go) take libNVVM's entries,
// not codegen/ptx's: every kernel taking a dim's value (an ArgSize whose Expr is a dim) is the
// NVVM producer's own. Each model runs as checkNVVM runs
// it: at the bounds, 1 and primes, equal to the reference and bit for bit to the ptx build.
func TestSymbolicStrideNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	type model struct {
		name  string
		graph func() (*ir.Graph, error)
		views int // kernels taking dims' values that are not attention, at least
	}
	var models []model
	for _, tc := range strideModels {
		models = append(models, model{tc.name, func() (*ir.Graph, error) { return ir.Parse("m.gir", []byte(tc.gir)) }, 0})
	}
	for _, tc := range []struct {
		name  string
		dt    ir.DType
		batch bool
	}{{"attention on CUDA cores, heads merged into a linear layer (FFMA)", ir.F32, false}, {"attention heads merged into a linear layer (f16, tensor cores)", ir.F16, true}} {
		models = append(models, model{tc.name, func() (*ir.Graph, error) {
			return frontend.Build("m", func(b *frontend.Builder) {
				batch := 0
				if tc.batch {
					batch = b.Dim("batch", 1, 2)
				}
				attnModel(b, tc.dt, batch, b.Dim("seq", 1, 23), 2, 16, false)
			})
		}, 1})
	}
	for i, m := range models {
		switch {
		case strings.HasPrefix(m.name, "a copy"):
			models[i].views = 1
		case strings.HasPrefix(m.name, "attention"):
			models[i].views = 2 // attention and the merged heads' GEMM
		}
	}
	nv, err := backend.New("nvvm", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range models {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.graph()
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{Producer: nv})
			if err != nil {
				t.Fatal(err)
			}
			views := 0
			for _, k := range res.Artifact.Plan.Kernels {
				dims := slices.ContainsFunc(k.Args, func(a artifact.Arg) bool {
					return a.Kind == artifact.ArgSize && slices.ContainsFunc(g.Dims, func(d ir.Dim) bool { return d.Name == a.Expr })
				})
				if !dims {
					continue
				}
				views++
				if k.Producer == "ptx" {
					t.Errorf("kernel %s: codegen/ptx's entry (%v)", k.Name, k.Notes)
				}
			}
			if views < tc.views {
				t.Errorf("%d kernels take the dims' values, want at least %d", views, tc.views)
			}
			checkNVVM(t, g, lib.Path)
		})
	}
}

// symAttnGrads are attention's forward writing the rows' log-sum-exp and its dq, dk and dv over
// a symbolic batch and sequence: f32 with grouped KV heads and E ≠ Ev on CUDA cores, and f16 at
// head dims the tensor-core backward templates take.
var symAttnGrads = []struct{ name, gir string }{
	{"f32, causal, grouped KV heads, E 16, Ev 12", symAttnGradGIR("f32", "causal", 16, 12)},
	{"f32, no mask, E 8", symAttnGradGIR("f32", "none", 8, 8)},
	{"f16, causal, E 16 (tensor cores)", symAttnGradGIR("f16", "causal", 16, 16)},
}

// symAttnGradGIR is attention over q [batch, 4, seq, e], k [batch, 2, seq, e] and v [batch, 2,
// seq, ev] of dtype dt and mask, its log-sum-exp and its gradients dq, dk and dv from do.
func symAttnGradGIR(dt, mask string, e, ev int) string {
	a := fmt.Sprintf(`{mask="%s", scale=0.25}`, mask)
	g := fmt.Sprintf(`{mask="%s", scale=0.25, lse=true, wrt=`, mask)
	return fmt.Sprintf(`graph a {
  dims { batch in [1,3], seq in [1,37] }
  input %%q : %[1]s[batch,4,seq,%[2]d]
  input %%k : %[1]s[batch,2,seq,%[2]d]
  input %%v : %[1]s[batch,2,seq,%[3]d]
  input %%do : %[1]s[batch,4,seq,%[3]d]
  %%o = attention(%%q, %%k, %%v) %[4]s : %[1]s[batch,4,seq,%[3]d]
  %%lse = attention_lse(%%q, %%k, %%v) %[4]s : f32[batch,4,seq]
  %%dq = attention_grad(%%q, %%k, %%v, %%o, %%do, %%lse) %[5]s"q"} : %[1]s[batch,4,seq,%[2]d]
  %%dk = attention_grad(%%q, %%k, %%v, %%o, %%do, %%lse) %[5]s"k"} : %[1]s[batch,2,seq,%[2]d]
  %%dv = attention_grad(%%q, %%k, %%v, %%o, %%do, %%lse) %[5]s"v"} : %[1]s[batch,2,seq,%[3]d]
  output o = %%o
  output dq = %%dq
  output dk = %%dk
  output dv = %%dv
}
`, dt, e, ev, a, g)
}
