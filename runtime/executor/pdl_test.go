package executor_test

import (
	"github.com/gcomp/gcomp/internal/paramcheck"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// pdlLog is a device whose modules note whether each launch asked for PDL.
type pdlLog struct {
	executor.Device
	pdl *[]bool
}

func (d *pdlLog) Load(ptx []byte) (executor.Module, error) {
	m, err := d.Device.Load(ptx)
	return &pdlLogModule{Module: m, pdl: d.pdl}, err
}

type pdlLogModule struct {
	executor.Module
	pdl *[]bool
}

func (m *pdlLogModule) Launch(kernel string, cfg executor.LaunchConfig, args []executor.Ptr) (*executor.Counters, error) {
	*m.pdl = append(*m.pdl, cfg.PDL)
	return m.Module.Launch(kernel, cfg, args)
}

// decayStep reads its weight through a GEMV (which loads it before waiting for the kernel in
// flight) and writes the next run's weight, which Feedback trades into the parameter's place.
const decayStep = `graph decay {
  input %x : f32[1,256]
  param %w : f32[256,64] {init="normal"}
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[1,64]
  %h = constant() {dtype=f32, shape=[256,64], value=[0.5]} : f32[256,64]
  %1 = mul(%w, %h) : f32[256,64]
  output y = %0
  output w_next = %1
}
`

// TestPDLRunBoundary: built for sm_90, every kernel of a run but the first is launched as a
// programmatic dependent launch, on every run; the first waits for the run before, which may
// have written the parameters a GEMV loads before its griddepcontrol.wait. A step whose weight is
// fed back runs under the simulator's dependent-launch check, step after step, with the weights
// halving as the reference says.
func TestPDLRunBoundary(t *testing.T) {
	g, err := ir.Parse("decay.gir", []byte(decayStep))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{Target: ptx.Target{SM: 90}})
	if err != nil {
		t.Fatal(err)
	}
	plan := res.Artifact.Plan
	if len(plan.Kernels) < 2 || !strings.Contains(string(res.Artifact.PTX), "griddepcontrol.wait") {
		t.Fatalf("%d kernels; the test needs two PDL kernels", len(plan.Kernels))
	}
	for _, k := range plan.Kernels {
		if !k.PDL {
			t.Fatalf("%s is not PDL", k.Name)
		}
	}
	var log []bool
	p, err := executor.Load(&pdlLog{Device: simdev.New(simdev.Options{}), pdl: &log}, res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in, params, err := tensor.SeededValues(g, 3)
	if err != nil {
		t.Fatal(err)
	}
	paramcheck.NonZero(t, params)
	if err := p.SetParams(params); err != nil {
		t.Fatal(err)
	}
	if err := p.Feedback(map[string]string{"w_next": "w"}); err != nil {
		t.Fatal(err)
	}
	w0 := params["w"]
	for run := range 3 {
		log = log[:0]
		out, err := p.Run(map[string]*tensor.Tensor{"x": in["x"]})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		for i, pdl := range log {
			if pdl != (i > 0) {
				t.Errorf("run %d, launch %d: PDL %v, want %v", run, i, pdl, i > 0)
			}
		}
		// y = x · (w0 / 2^run), exact in binary up to the product's own rounding.
		scale := 1.0 / float64(int(1)<<run)
		for j := range 64 {
			var want float64
			for k := range 256 {
				want += in["x"].At(k) * w0.At(k*64+j) * scale
			}
			if got := out.Outputs["y"].At(j); got-want > 1e-3 || want-got > 1e-3 {
				t.Fatalf("run %d: y[%d] = %v, want %v", run, j, got, want)
			}
		}
	}
}
