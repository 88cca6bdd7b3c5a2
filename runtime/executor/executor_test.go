package executor_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

const graph = `graph g {
  input %x : f32[4,8]
  param %w : f32[8] {init="normal"}
  %0 = broadcast_in_dim(%w) {dims=[1], shape=[4,8]} : f32[4,8]
  %1 = mul(%x, %0) : f32[4,8]
  %2 = reduce_sum(%1) {axes=[1]} : f32[4]
  output y = %2
}
`

func load(t *testing.T) (*executor.Program, *ir.Graph, *simdev.Device) {
	t.Helper()
	g, err := ir.Parse("g.gir", []byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dev := simdev.New(simdev.Options{})
	p, err := executor.Load(dev, res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, g, dev
}

// Binding mistakes are errors that name the value; nothing runs with unbound weights.
func TestBindingErrors(t *testing.T) {
	f32 := func(shape ...int) *tensor.Tensor { return tensor.New(ir.T(ir.F32, shape...)) }
	tests := []struct {
		name           string
		params, inputs map[string]*tensor.Tensor
		want           string
	}{
		{"unbound weights", nil, map[string]*tensor.Tensor{"x": f32(4, 8)}, "parameter w has no value"},
		{"missing param", map[string]*tensor.Tensor{}, nil, "no value for param w"},
		{"unknown param", map[string]*tensor.Tensor{"w": f32(8), "v": f32(8)}, nil, "the model has no param named v"},
		{"wrong param type", map[string]*tensor.Tensor{"w": f32(9)}, nil, "param w is f32[9], the model wants f32[8]"},
		{"missing input", map[string]*tensor.Tensor{"w": f32(8)}, map[string]*tensor.Tensor{}, "no value for input x"},
		{"wrong input type", map[string]*tensor.Tensor{"w": f32(8)}, map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F64, 4, 8))}, "input x is f64[4,8]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _, _ := load(t)
			var err error
			if tc.params != nil {
				err = p.SetParams(tc.params)
			}
			if err == nil && tc.inputs != nil {
				_, err = p.Run(tc.inputs)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A program holds exactly the memory its plan asks for and frees all of it.
func TestMemory(t *testing.T) {
	p, _, dev := load(t)
	m := p.Memory()
	if m.InputBytes != 4*8*4 || m.ParamBytes != 8*4 || m.OutputBytes != 4*4 || m.ArenaBytes != p.Plan().ArenaBytes {
		t.Errorf("memory %+v", m)
	}
	if got := dev.Sim().Allocated(); got < m.Total() {
		t.Errorf("device holds %d bytes, program says %d", got, m.Total())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dev.Sim().Allocated(); got != 0 {
		t.Errorf("%d bytes still allocated after Close", got)
	}
}

// Runs are repeatable: the second run of the same program on new inputs is not affected by
// the first (scratch is left zeroed, the arena is rewritten).
func TestRepeatedRuns(t *testing.T) {
	p, g, _ := load(t)
	w, _ := tensor.Initialize(g.Params()[0], 1)
	if err := p.SetParams(map[string]*tensor.Tensor{"w": w}); err != nil {
		t.Fatal(err)
	}
	x1, x2 := tensor.RandomInput(g.Inputs()[0], 1), tensor.RandomInput(g.Inputs()[0], 2)
	a, err := p.Run(map[string]*tensor.Tensor{"x": x1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(map[string]*tensor.Tensor{"x": x2}); err != nil {
		t.Fatal(err)
	}
	c, err := p.Run(map[string]*tensor.Tensor{"x": x1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Outputs["y"].Len() {
		if a.Outputs["y"].At(i) != c.Outputs["y"].At(i) {
			t.Fatalf("y[%d]: first run %v, third run %v", i, a.Outputs["y"].At(i), c.Outputs["y"].At(i))
		}
	}
	if len(a.Kernels) == 0 || a.Kernels[0].Counters == nil || a.Kernels[0].Counters.WarpInsts == 0 {
		t.Errorf("the simulator's counters are missing: %+v", a.Kernels)
	}
}
