package compiler_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// nvvmInexact are the row models whose kernels codegen/nvvm computes with other arithmetic than
// codegen/ptx: libdevice's exp and a two-pass softmax (codegen/ptx folds max and sum online),
// and the GEMV, which codegen/nvvm runs in the exact direct template. Every other model's
// outputs are codegen/ptx's bit for bit.
var nvvmInexact = map[string]bool{
	"layer norm and softmax":        true,
	"softmax with empty batches":    true,
	"MLP (GEMV, f32)":               true,
	"MLP (GEMV, f16)":               true,
	"MLP with empty batches (GEMV)": true,
	"flat two inputs, two outputs":  true,
}

// Every row model built once with --backend nvvm runs on the memchecked simulator at the dims'
// bounds, 1 and primes, smaller sizes first, equal to the reference interpreter (checkRows), with
// codegen/ptx's parameters and work for each symbolic kernel, and, where the arithmetic is the
// same, equal to codegen/ptx's build bit for bit.
func TestSymbolicNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	type model struct {
		name  string
		graph func() (*ir.Graph, error)
	}
	var models []model
	for _, tc := range rowModels {
		models = append(models, model{tc.name, func() (*ir.Graph, error) { return frontend.Build("m", tc.build) }})
	}
	for _, tc := range symbolicGraphs {
		models = append(models, model{"flat " + tc.name, func() (*ir.Graph, error) { return ir.Parse("s.gir", []byte(tc.gir)) }})
	}
	for _, tc := range models {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.graph()
			if err != nil {
				t.Fatal(err)
			}
			checkNVVM(t, g, lib.Path, !nvvmInexact[tc.name])
		})
	}
}

// checkNVVM builds g with the nvvm producer (libNVVM at lib) and with codegen/ptx, checks that
// their plans' symbolic kernels take the same size arguments with the same work (but GEMVs,
// which codegen/nvvm runs in the direct template), and runs the nvvm build as checkRows does,
// each run also through the ptx build on the same inputs: equal bit for bit when same.
func checkNVVM(t *testing.T, g *ir.Graph, lib string, same bool) {
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
		if same || p.Work.Axis != 2 { // codegen/ptx's GEMV grid is over columns
			t.Errorf("kernel %s: nvvm's work %+v, ptx's %+v", n.Name, *n.Work, *p.Work)
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
